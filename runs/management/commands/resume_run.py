"""``manage.py resume_run ID``: play a run's failed, cancelled and abandoned episodes again."""
from django.core.management.base import BaseCommand, CommandError

from runs.management.console import drive, end_lost_runs, get_run, positive, report
from runs.queue import lifecycle


class Command(BaseCommand):
    help = (
        "Resume a run: every failed or cancelled episode, and every running episode whose worker stopped "
        "responding, is reset as its next attempt (its earlier steps discarded) and played again; completed "
        "episodes are kept. Queued for `python manage.py qcluster` unless --sync."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("--sync", action="store_true", help="play the episodes in this process")
        parser.add_argument("--concurrency", type=int, help="episodes at once with --sync (default: the run's)")
        parser.add_argument("--no-wait", action="store_true", help="queue the episodes and return at once")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    def handle(self, *args, **options):
        positive(options["concurrency"], "--concurrency")
        run = get_run(options["run_id"])
        end_lost_runs(self)
        try:
            resumed = lifecycle.resume_run(run_id=run.pk)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Run {run.pk}: {resumed.reset} episode(s) reset, {resumed.pending} to play, "
            f"{resumed.running} still running."
        )
        if not resumed.pending:
            report(self, run, as_json=options["json"])
            return
        concurrency = options["concurrency"] or int((run.limits or {}).get("concurrency") or 4)
        drive(self, run, sync=options["sync"], concurrency=concurrency, wait=not options["no_wait"],
              as_json=options["json"])  # fmt: skip
