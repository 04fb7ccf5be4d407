"""``manage.py import_official_run DIR --suite S --model NAME``: load the official runner's results as a run."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from benchmark.models import ModelSpec, Suite
from runs.interchange.importing import import_official_run
from runs.interchange.official import InterchangeError
from runs.management.console import report
from runs.models import Run
from runs.signals import episodes_ended
from runs.specs import new_model_spec


class Command(BaseCommand):
    help = (
        "Import an official runner's output directory (a task folder with runs.jsonl and trajectories/, or a "
        "run-all folder with one such folder per task) as a run on a suite, scored by this platform's scorer."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the official output directory")
        parser.add_argument("--suite", required=True, help="the suite whose scenarios the results answer")
        parser.add_argument("--model", required=True, help="the model's display name (created if new)")
        parser.add_argument("--run-name", default="", help="display name of the run")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    def handle(self, *args, **options):
        suite = Suite.objects.filter(name=options["suite"]).first()
        if suite is None:
            raise CommandError(f"Unknown suite {options['suite']!r}.")
        path = Path(options["path"])
        if not path.is_dir():
            raise CommandError(f"{path} is not a directory.")
        try:
            with transaction.atomic():  # a failed import leaves no new model behind either
                name = options["model"]
                model = ModelSpec.objects.filter(name=name).first() or new_model_spec(name=name, provider_model=name)
                run = import_official_run(path=path, suite=suite, model=model, name=options["run_name"])
        except (InterchangeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        episodes_ended.send(sender=Run, run_id=run.pk)  # scored for the leaderboard now, which pages only read
        self.stderr.write(f"Imported {run.episodes.count()} result(s) from {path} as run {run.pk}.")
        report(self, run, as_json=options["json"])
