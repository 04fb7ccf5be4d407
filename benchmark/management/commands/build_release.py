"""``manage.py build_release DATASET RAW_DIR --out DIR``: build a release directory from a raw dataset."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.builders import DATASETS, DEFAULT_NAME, DEFAULT_VERSION, BuildError, build


def _paths(value: str) -> list[Path]:
    return [Path(part) for part in value.split(",") if part.strip()]


def _targets(value: str) -> dict[str, int]:
    targets = {}
    for part in filter(None, (item.strip() for item in value.split(","))):
        group, _, count = part.partition("=")
        if not group or not count.isdigit():
            raise CommandError(f"--balance-targets wants CLASS=COUNT pairs such as Z=47,O=47,S=94; got {part!r}")
        targets[group.strip()] = int(count)
    return targets


class Command(BaseCommand):
    help = (
        "Turn a raw public dataset, in the layout its publisher distributes, into a release directory "
        "(official layout) with the paper's construction rules: candidate pool, difficulty screening "
        "against the given panel runs, class balancing. A release already in --out keeps its other tasks."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version (its release number) gives way to the release version option.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("dataset", choices=sorted(DATASETS), help="which raw dataset RAW_DIR holds")
        parser.add_argument("raw_dir", type=Path, help="the raw dataset's folder")
        parser.add_argument("--out", required=True, type=Path, help="release directory to write")
        parser.add_argument(
            "--screen-runs", type=_paths, default=[],
            help="comma-separated official runs.jsonl files, one per panel model; without it, no screening",
        )
        parser.add_argument("--seed", type=int, default=None,
                            help="seed of the random construction (T2 mixing; default 20260622)")
        parser.add_argument("--balance-targets", type=_targets, default=None,
                            help="class counts to balance to, e.g. Z=47,O=47,S=94 (default: the paper's rule)")
        parser.add_argument("--name", default=DEFAULT_NAME, help=f"release name (default {DEFAULT_NAME})")
        parser.add_argument("--version", default=DEFAULT_VERSION,
                            help=f"release version (default {DEFAULT_VERSION})")
        parser.add_argument("--synthetic", action="store_true",
                            help="mark the release as built from synthetic recordings")
        parser.add_argument("--held-out", action="store_true",
                            help="mark the release's references held out: import_release makes its suites "
                            "held-out (only staff see their episodes and per-item scores)")

    def handle(self, *args, **options):
        try:
            report = build(
                options["dataset"], options["raw_dir"], options["out"],
                screen_runs=options["screen_runs"], seed=options["seed"], targets=options["balance_targets"],
                name=options["name"], version=options["version"], synthetic=options["synthetic"],
                held_out=options["held_out"],
            )
        except BuildError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.summary())
