"""``manage.py import_release PATH``: import a release directory in the official layout as a suite."""

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from benchmark.releases import ReleaseError, import_release
from tools_app.signal import stored


def task_list(value: str) -> list[str]:
    """``T1,T3`` → ``["T1", "T3"]``."""
    return [code.strip().upper() for code in value.split(",") if code.strip()]


class Command(BaseCommand):
    help = (
        "Import a release directory (benchmark/scenarios, runtime, answer_keys, data/) as one suite. "
        "Every problem is reported with its file and line, and nothing is imported then."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the release root, which holds benchmark/ and data/")
        parser.add_argument("--suite", help="suite name (a slug); default: the release's name")
        parser.add_argument("--tasks", type=task_list, help="only these tasks, e.g. T1,T3")
        parser.add_argument(
            "--skip-missing", action="store_true",
            help="import the scenarios whose data files are present; mark the suite partial and list the rest",
        )
        parser.add_argument(
            "--held-out", action="store_true",
            help="hold the suite's references out: only staff see its episodes and per-item scores, "
            "everyone else run-level scores (manage.py suite_references changes it later)",
        )
        parser.add_argument(
            "--no-precompute", action="store_true",
            help="do not compute the long recordings' tool statistics now (the first tool call on each will); "
            "manage.py precompute_records SUITE does it later",
        )

    def handle(self, *args, **options):
        try:
            result = import_release(
                path=options["path"], suite_name=options["suite"], tasks=options["tasks"],
                skip_missing=options["skip_missing"], held_out=options["held_out"],
            )
        except ReleaseError as exc:
            raise CommandError(f"nothing imported; {len(exc.problems)} problem(s):\n" + "\n".join(exc.problems))
        suite = result.suite
        if not result.created:
            self.stdout.write(f"Suite {suite.name} already holds this release; nothing imported.")
        else:
            self._report(result)
        self.stdout.write(f"Its references are {suite.references}.")
        has_recordings = suite.instances.exclude(recording_path="").exists()
        if not options["no_precompute"] and stored.stats_dir() is not None and has_recordings:
            call_command("precompute_records", suite.name, stdout=self.stdout, stderr=self.stderr)

    def _report(self, result):
        suite = result.suite
        counts = ", ".join(f"{task} {count}" for task, count in result.counts.items())
        state = " (partial)" if suite.is_partial else ""
        self.stdout.write(f"Imported suite {suite.name}{state}, version {suite.version}: {counts}")
        missing = [entry for entry in result.skipped if "scenario_id" in entry]
        if missing:
            self.stdout.write(f"Skipped {len(missing)} scenario(s) whose data file is missing:")
        for entry in missing:
            self.stdout.write(f"  {entry['task']} {entry['scenario_id']}: {entry['data_path']}")
        for entry in result.skipped:
            if "scenario_id" not in entry:
                self.stdout.write(f"Skipped task {entry['task']}: {entry['reason']}")
