"""``manage.py export_run ID --out DIR``: write a run in the official runner's output format."""
from django.core.management.base import BaseCommand, CommandError

from runs.interchange.export import export_run
from runs.interchange.official import InterchangeError
from runs.management.console import get_run


class Command(BaseCommand):
    help = (
        "Export a run in the official runner's layout: DIR/Tn/runs.jsonl, DIR/Tn/trajectories/<scenario_id>.jsonl, "
        "DIR/Tn/summary.json (and run_status.json, failed_cases.json) and DIR/benchmark_summary.json, which the "
        "official `summarize` command scores. A run of several epochs is written as one such directory per "
        "epoch: DIR/epoch-1/, DIR/epoch-2/, …"
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("--out", required=True, help="a new (or empty) directory")

    def handle(self, *args, **options):
        run = get_run(options["run_id"])
        try:
            written = export_run(run=run, out_dir=options["out"])
        except InterchangeError as exc:
            raise CommandError(str(exc)) from None
        trajectories = sum(path.parent.name == "trajectories" for path in written)
        epochs = f" in {run.epochs} epoch directories" if run.epochs > 1 else ""
        self.stdout.write(
            f"Run {run.pk} exported to {options['out']}{epochs}: {', '.join(run.tasks)}; "
            f"{len(written)} files, {trajectories} trajectories."
        )
