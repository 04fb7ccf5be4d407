"""``manage.py show_prompt``: the first request an episode sends its model, exactly as the model gets it."""
import json

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Instance
from benchmark.wording import PROMPT_SETS, default_prompt_set, prompt_set
from runs.episode.opening import first_request
from runs.management.commands.run_benchmark import resolve_suite
from runs.model.agent import PAPER_PROTOCOL


class Command(BaseCommand):
    help = (
        "Print the first request an episode on one instance sends its model: the system and user messages and, "
        "for the native protocol, the tools list. The record id is the suite's id of the instance."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite", help="suite name")
        parser.add_argument("scenario_id", help="the release's scenario id of the instance")
        parser.add_argument("--protocol", choices=["text", "native"], default=PAPER_PROTOCOL,
                            help="text (default; the tools are described in the system prompt) or native")
        parser.add_argument("--prompt-set", choices=PROMPT_SETS,
                            help="official or platform (default: official where the package is installed)")
        parser.add_argument("--json", action="store_true",
                            help='one JSON object: {"prompt_set", "protocol", "record_id", "messages", "tools"}')

    def handle(self, *args, **options):
        suite = resolve_suite(options["suite"])
        instance = (
            Instance.objects.select_related("task", "suite").filter(suite=suite, scenario_id=options["scenario_id"])
            .first()
        )
        if instance is None:
            raise CommandError(f"Suite {suite.name} has no scenario {options['scenario_id']!r}.")
        name = options["prompt_set"] or default_prompt_set()
        try:
            wording = prompt_set(name)
        except ValueError as exc:  # the official set without the package
            raise CommandError(str(exc)) from None
        native = options["protocol"] == "native"
        messages, tools = first_request(instance, wording, native=native)
        if options["json"]:
            payload = {
                "prompt_set": wording.name,
                "protocol": options["protocol"],
                "record_id": instance.record_id,
                "messages": [{"role": message["role"], "content": message["content"]} for message in messages],
                "tools": tools or [],
            }
            self.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2))
            return
        self.stdout.write(f"# prompt set {wording.name}, {options['protocol']} protocol, record {instance.record_id}")
        for message in messages:
            self.stdout.write(f"\n── {message['role']} " + "─" * 60 + f"\n{message['content']}")
        if tools:
            self.stdout.write("\n── tools " + "─" * 60 + "\n" + json.dumps(tools, ensure_ascii=False, indent=2))
