"""``manage.py build_demo_release``: build the synthetic demo release with the real builders, and import it.

Synthetic recordings are written in each raw dataset's layout (:mod:`benchmark.demo.raw`) to a
temporary folder under ``var/``; every dataset builder's ``collect`` reads them exactly as it reads
the real data; the framework's balancing cuts each pool to a small demo size; ``write_release`` writes
one release, marked synthetic, to ``EEGAB_DATA_ROOT/demo-<version>``; and ``import_release`` imports
it as the suite ``demo``. A second run reuses the release and the suite; ``--force`` rebuilds the
release (an unchanged build is the same release, so the suite stays as it is).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benchmark.builders import BuildError, Candidate, load_builder, write_release
from benchmark.builders.selection import balance, class_counts
from benchmark.demo.raw import write_raw_datasets
from benchmark.releases import ReleaseError, import_release

DEMO_NAME = "EEGAgentBench demo (synthetic)"
DEMO_VERSION = "1.0.0"  # bump whenever the generators change what they write
DEMO_SUITE = "demo"
DEMO_SEED = 0
TASK_IDS = ("T1", "T2", "T3", "T4", "T5", "T6")


def _label(candidate: Candidate) -> str:
    return candidate.label


def _everything(candidate: Candidate) -> str:
    return "all"


def _artifact_group(candidate: Candidate) -> str:
    snr = candidate.gold.get("snr_db")
    return candidate.label if snr is None else f"{candidate.label} {snr:+d} dB"


def _bonn_set(candidate: Candidate) -> str:
    return load_builder("bonn").balance_group(candidate)


# T2: 10 clean epochs and 10 of each artifact spread over four SNRs of the official -7..+2 dB grid.
_T2_TARGETS = {"clean": 10, **{
    f"{label} {snr:+d} dB": count
    for label in ("ocular_contaminated", "muscle_contaminated")
    for snr, count in ((-7, 3), (-4, 3), (-1, 2), (2, 2))
}}


@dataclass(frozen=True)
class DemoTask:
    """How one task of the demo is built: its builder, raw folder and balancing to demo size."""

    task_id: str
    dataset: str          # builder name (benchmark.builders.DATASETS)
    raw_folder: str       # folder name of benchmark.demo.raw.DATASETS
    group_of: Callable[[Candidate], str]
    targets: Mapping[str, int] | None   # None: keep the whole pool

    def select(self, pool: list[Candidate]) -> list[Candidate]:
        """The demo's instances: the pool balanced to the targets (groups without a target get none)."""
        if self.targets is None:
            return list(pool)
        return balance(pool, group_of=self.group_of,
                       targets=lambda counts: {group: self.targets.get(group, 0) for group in counts})


DEMO_TASKS = (
    DemoTask("T1", "medmcqa", "medmcqa", _everything, {"all": 20}),
    DemoTask("T2", "eegdenoisenet", "eegdenoisenet", _artifact_group, _T2_TARGETS),
    DemoTask("T3", "bonn", "bonn", _bonn_set, {"Z": 3, "O": 3, "S": 6}),
    DemoTask("T4", "ds004504", "ds004504", _label, {"AD": 3, "FTD": 3, "HC": 3}),
    DemoTask("T5", "chbmit", "chbmit", _label, {"seizure": 3, "no_seizure": 3}),
    DemoTask("T6", "sleepedfx", "sleep-edfx", _label, None),
)


def demo_release_dir() -> Path:
    """Where the demo release of this version lives."""
    return Path(settings.EEGAB_DATA_ROOT) / f"demo-{DEMO_VERSION}"


def is_complete_demo_release(path: Path) -> bool:
    """Whether ``path`` holds this version's demo release, with all six tasks."""
    try:
        descriptor = json.loads((path / "benchmark" / "benchmark.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        descriptor.get("name") == DEMO_NAME and descriptor.get("version") == DEMO_VERSION
        and descriptor.get("synthetic") is True and set(descriptor.get("tasks", {})) == set(TASK_IDS)
        and all((path / "benchmark" / "scenarios" / f"{task}.jsonl").is_file() for task in TASK_IDS)
    )


class _Clock:
    """Prints how long each stage took."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write
        self.last = time.perf_counter()

    def lap(self, what: str) -> None:
        now = time.perf_counter()
        self.write(f"  {now - self.last:6.1f} s  {what}")
        self.last = now


def build_demo_release(out_dir: Path, *, write: Callable[[str], None] = lambda text: None) -> Path:
    """Write the synthetic raw datasets, run every builder on them and write the demo release to ``out_dir``."""
    clock = _Clock(write)
    var_dir = Path(settings.VAR_DIR)
    var_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="demo-raw-", dir=var_dir) as raw_root:
        folders = write_raw_datasets(Path(raw_root), seed=DEMO_SEED)
        clock.lap(f"synthetic raw datasets written to {raw_root}")
        candidates: list[Candidate] = []
        for task in DEMO_TASKS:
            pool = load_builder(task.dataset).collect(folders[task.raw_folder])
            selected = task.select(pool)
            candidates += selected
            clock.lap(f"{task.task_id} {task.dataset}: pool {class_counts(pool)} -> {class_counts(selected)}")
        written = write_release(candidates, out_dir, name=DEMO_NAME, version=DEMO_VERSION, synthetic=True)
        clock.lap(f"release written to {written}")
    return written


class Command(BaseCommand):
    help = (
        "Build the synthetic demo release (all six tasks, from synthetic recordings in each raw dataset's "
        "layout, through the real builders) into EEGAB_DATA_ROOT and import it as the suite 'demo'. "
        "Reuses an existing build unless --force is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="rebuild the release even if it exists")

    def handle(self, *args, **options):
        started = time.perf_counter()
        release_dir = demo_release_dir()
        if options["force"] or not is_complete_demo_release(release_dir):
            self.stdout.write(f"Building the synthetic demo release {DEMO_VERSION} in {release_dir}")
            try:
                build_demo_release(release_dir, write=self.stdout.write)
            except BuildError as exc:
                raise CommandError(f"the demo release could not be built: {exc}") from None
        else:
            self.stdout.write(f"Reusing the synthetic demo release in {release_dir} (--force rebuilds it)")
        import_started = time.perf_counter()
        try:
            result = import_release(path=release_dir, suite_name=DEMO_SUITE)
        except ReleaseError as exc:
            raise CommandError("the demo release could not be imported:\n" + "\n".join(exc.problems)) from None
        counts = ", ".join(f"{task} {count}" for task, count in result.counts.items())
        state = "imported as" if result.created else "already imported as"
        elapsed = time.perf_counter() - import_started
        self.stdout.write(f"  {elapsed:6.1f} s  {state} suite {result.suite.name}: {counts}")
        self.stdout.write(self.style.SUCCESS(
            f"Demo suite {result.suite.name} (SYNTHETIC data) ready in {time.perf_counter() - started:.1f} s"))
