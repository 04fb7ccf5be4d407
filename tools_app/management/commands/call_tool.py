"""``manage.py call_tool PATH TOOL --args JSON``: run one tool on one recording and print the result."""
import json

from django.core.management.base import BaseCommand, CommandError

from tools_app import call_tool


def _json_object(text, option):
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(f"{option} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{option} must be a JSON object, e.g. '{{\"channels\": [\"C3\"]}}'.")
    return value


class Command(BaseCommand):
    help = (
        "Run one of the ten EEG tools on a recording file and print its JSON result (or its error object). "
        "The record id defaults to --record-id, else to 'record'."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="The recording file (EDF, Bonn .txt, .npy, EEGLAB .set, ...).")
        parser.add_argument("tool", help="Tool name, e.g. compute_band_power.")
        parser.add_argument("--args", dest="tool_arguments", default="{}", help="Tool arguments as a JSON object.")
        parser.add_argument("--metadata", default="{}", help="Record metadata as a JSON object (sampling_rate, channel_names).")
        parser.add_argument("--record-id", default=None, help="The episode's record id; other ids are refused.")
        parser.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line).")

    def handle(self, *args, **options):
        arguments = _json_object(options["tool_arguments"], "--args")
        metadata = _json_object(options["metadata"], "--metadata")
        record_id = options["record_id"]
        arguments.setdefault("record_id", record_id or "record")
        result = call_tool(options["path"], options["tool"], arguments, record_id=record_id, metadata=metadata)
        self.stdout.write(json.dumps(result, ensure_ascii=False, indent=options["indent"] or None))
