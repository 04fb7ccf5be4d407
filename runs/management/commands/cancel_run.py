"""``manage.py cancel_run ID``: stop a run."""
from django.core.management.base import BaseCommand, CommandError

from runs.management.console import get_run
from runs.queue import lifecycle


class Command(BaseCommand):
    help = (
        "Cancel a run: its pending episodes are cancelled at once and its running ones at their next turn. "
        "`resume_run ID` plays the cancelled episodes later."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)

    def handle(self, *args, **options):
        run = get_run(options["run_id"])
        try:
            run = lifecycle.cancel_run(run_id=run.pk)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        progress = ", ".join(f"{count} {status}" for status, count in run.progress().items() if count)
        self.stdout.write(f"Run {run.pk} is {run.status}: {progress}.")
