"""``manage.py precompute_records SUITE``: compute the kept statistics of a suite's long recordings now, and
the min/max pyramids the record browser draws them from."""
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.management.commands.import_release import task_list
from benchmark.models import Suite
from tools_app.recording import RecordingError, precompute_pyramid, precompute_statistics
from tools_app.signal import stored

_BAR = 30


def suite_recordings(suite: Suite, tasks=None) -> list[tuple[str, Path, dict]]:
    """Each distinct recording of ``suite``'s instances: (its path in the release, file, metadata)."""
    instances = suite.instances.exclude(recording_path="").select_related("task").order_by("recording_path")
    if tasks:
        instances = instances.filter(task__code__in=tasks)
    root = Path(suite.release.source)
    seen, recordings = set(), []
    for instance in instances.only("recording_path", "metadata", "task__code"):
        key = (instance.recording_path, repr(sorted((instance.metadata or {}).items())))
        if key not in seen:
            seen.add(key)
            recordings.append((instance.recording_path, root / instance.recording_path, instance.metadata or {}))
    return recordings


def precompute(recordings, *, out=None, progress=None) -> dict:
    """Make every recording's statistics and pyramid ready; returns the count per outcome of each and the failures.

    ``progress(done, total, name, seconds)`` is told after each recording.
    """
    counts = {"computed": 0, "kept": 0, "short": 0, "memory": 0}
    pyramids = dict.fromkeys(counts, 0)
    failures = []
    for done, (name, path, metadata) in enumerate(recordings, start=1):
        started = time.perf_counter()
        try:
            counts[precompute_statistics(path, metadata=metadata)] += 1
            pyramids[precompute_pyramid(path, metadata=metadata)] += 1
        except RecordingError as error:
            failures.append(f"{name}: {error}")
        if progress:
            progress(done, len(recordings), name, time.perf_counter() - started)
    return {"counts": counts, "pyramids": pyramids, "failures": failures}


class Command(BaseCommand):
    help = (
        "Compute and keep (EEGAB_STATS_DIR) the tool statistics of every long recording of a suite, so that "
        "no episode's first tool call computes them. Recordings whose statistics are kept already are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite", help="the suite's name (manage.py list_suites)")
        parser.add_argument("--tasks", type=task_list, help="only these tasks' recordings, e.g. T5,T6")

    def handle(self, *args, **options):
        suite = Suite.objects.select_related("release").filter(name=options["suite"]).first()
        if suite is None:
            known = ", ".join(Suite.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"No suite named {options['suite']!r} (suites: {known}).")
        recordings = suite_recordings(suite, options["tasks"])
        if stored.stats_dir() is None:
            self.stderr.write("EEGAB_STATS_DIR is empty: statistics are not kept, so there is nothing to precompute.")
        started = time.perf_counter()
        result = precompute(recordings, progress=self._progress)
        counts, failures = result["counts"], result["failures"]
        self.stdout.write(
            f"{len(recordings)} recording(s) of {suite.name} in {time.perf_counter() - started:.1f} s: "
            f"{counts['computed']} computed, {counts['kept']} kept already, "
            f"{counts['short']} short (read directly)"
            + (f", {counts['memory']} not kept (EEGAB_STATS_DIR)" if counts["memory"] else "")
            + f"; min/max pyramids (the record browser's): {result['pyramids']['computed']} computed, "
            f"{result['pyramids']['kept']} kept already; statistics in {stored.stats_dir()}"
        )
        if failures:
            raise CommandError(f"{len(failures)} recording(s) could not be read:\n" + "\n".join(failures))

    def _progress(self, done, total, name, seconds):
        filled = _BAR * done // max(total, 1)
        line = f"[{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total} {name} ({seconds:.1f} s)"
        if sys.stderr.isatty():
            end = "\n" if done == total else ""
            self.stderr.write("\r" + line[:120].ljust(120), ending=end)
        else:
            self.stderr.write(line)
