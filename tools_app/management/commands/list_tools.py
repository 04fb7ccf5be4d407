"""``manage.py list_tools``: the tools' function-calling schemas and the text protocol's tool reference."""
import json

from django.core.management.base import BaseCommand

from tools_app import function_schemas, text_reference


class Command(BaseCommand):
    help = "Print the ten tools' JSON schemas (native function calling) and their text reference (text protocol)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--format", choices=("both", "json", "text"), default="both",
            help="json: the schemas; text: the reference; both (default): schemas, a blank line, the reference.",
        )

    def handle(self, *args, **options):
        shown = options["format"]
        if shown in ("both", "json"):
            self.stdout.write(json.dumps(function_schemas(), ensure_ascii=False, indent=2))
        if shown == "both":
            self.stdout.write("")
        if shown in ("both", "text"):
            self.stdout.write(text_reference())
