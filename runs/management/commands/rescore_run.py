"""``manage.py rescore_run ID``: score a run's stored answers again, without calling a model."""
from django.core.management.base import BaseCommand

from runs.management.console import get_run, report
from runs.queue import lifecycle


class Command(BaseCommand):
    help = "Score every completed episode's stored prediction again with the official scorer and print the metrics."

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    def handle(self, *args, **options):
        run = get_run(options["run_id"])
        count = lifecycle.rescore_run(run_id=run.pk)
        self.stderr.write(f"Run {run.pk}: {count} completed episode(s) rescored.")
        report(self, run, as_json=options["json"])
