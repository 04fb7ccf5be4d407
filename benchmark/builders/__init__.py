"""Dataset builders: a raw public dataset in its publisher's layout becomes a release directory.

``build`` runs the paper's construction (§3.3, §6.1) for one dataset: the
dataset module's ``collect`` proposes the candidate pool, ``selection`` screens
it against a panel's runs and balances its classes, and ``base.write_release``
writes the release that ``import_release`` reads.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from benchmark.builders.base import BuildError, Candidate, write_release
from benchmark.builders.selection import (
    BALANCED_TASKS,
    SCREENED_TASKS,
    balance,
    class_counts,
    read_panel_runs,
    screen,
    solve_rates,
)

# Dataset name → module; imported only when used, so one missing builder does not break the others.
DATASETS: dict[str, str] = {
    "medmcqa": "benchmark.builders.medmcqa",
    "eegdenoisenet": "benchmark.builders.eegdenoisenet",
    "bonn": "benchmark.builders.bonn",
    "ds004504": "benchmark.builders.ds004504",
    "chbmit": "benchmark.builders.chbmit",
    "sleepedfx": "benchmark.builders.sleepedfx",
}
DEFAULT_NAME = "EEGAgentBench"
DEFAULT_VERSION = "1.0.0+build"


def load_builder(dataset: str) -> ModuleType:
    """The builder module of a dataset name."""
    if dataset not in DATASETS:
        raise BuildError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
    module_name = DATASETS[dataset]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise BuildError(f"the {dataset} builder ({module_name}) is not installed") from None


@dataclass(frozen=True)
class BuildReport:
    """What a build kept at each stage, per balancing group."""

    dataset: str
    task_id: str
    out_dir: Path
    pool: dict[str, int]
    screened: dict[str, int] | None
    selected: dict[str, int]

    def summary(self) -> str:
        stages = [f"pool {self.pool}"]
        if self.screened is not None:
            stages.append(f"after screening {self.screened}")
        stages.append(f"released {self.selected}")
        return f"{self.dataset} ({self.task_id}): " + "; ".join(stages) + f" -> {self.out_dir}"


def _collect(module: ModuleType, dataset: str, raw_dir: Path, seed: int | None) -> list[Candidate]:
    if seed is None:
        return module.collect(raw_dir)
    if "seed" not in inspect.signature(module.collect).parameters:
        raise BuildError(f"{dataset} has no random construction step, so --seed does not apply to it")
    return module.collect(raw_dir, seed=seed)


def build(dataset: str, raw_dir: Path, out_dir: Path, *, screen_runs: Sequence[Path] = (),
          seed: int | None = None, targets: Mapping[str, int] | None = None, name: str = DEFAULT_NAME,
          version: str = DEFAULT_VERSION, synthetic: bool = False, held_out: bool = False) -> BuildReport:
    """Build one dataset's task into the release at ``out_dir``.

    Parameters
    ----------
    dataset : str
        A key of ``DATASETS``.
    raw_dir : Path
        The raw dataset, in its publisher's layout.
    out_dir : Path
        The release directory; a release already there keeps its other tasks.
    screen_runs : sequence of Path
        One official ``runs.jsonl`` per panel model; empty means no screening.
    seed : int, optional
        Seed of the dataset's random construction (T2 mixing); its default otherwise.
    targets : mapping, optional
        Balancing target per class instead of the paper's rule.
    synthetic : bool
        Whether the raw data are synthetic (the demo); recorded in benchmark.json.
    held_out : bool
        Whether the suites imported from the release hold their references out; recorded in benchmark.json.
    """
    module = load_builder(dataset)
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise BuildError(f"{raw_dir}: not a directory")
    pool = _collect(module, dataset, raw_dir, seed)
    if not pool:
        raise BuildError(f"{raw_dir}: no {dataset} candidates found")
    task_ids = sorted({candidate.task_id for candidate in pool})
    if len(task_ids) != 1:
        raise BuildError(f"the {dataset} builder proposed candidates of several tasks: {', '.join(task_ids)}")
    task_id = task_ids[0]
    group_of = getattr(module, "balance_group", None)

    rates, screened_counts, selected = None, None, pool
    if screen_runs:
        if task_id not in SCREENED_TASKS:
            raise BuildError(f"{task_id} is not screened (paper §6.1); leave out --screen-runs")
        rates = solve_rates(pool, read_panel_runs(screen_runs), names=[str(path) for path in screen_runs])
        selected = screen(pool, rates)
        screened_counts = class_counts(selected, group_of)
    if task_id in BALANCED_TASKS:
        selected = balance(selected, group_of=group_of, rates=rates,
                           targets=targets or getattr(module, "balance_targets", None))
    elif targets:
        raise BuildError(f"{task_id} is not class-balanced (paper §6.1); leave out the balancing targets")

    written = write_release(selected, Path(out_dir), name=name, version=version, synthetic=synthetic,
                            held_out=held_out)
    return BuildReport(dataset, task_id, written, class_counts(pool, group_of), screened_counts,
                       class_counts(selected, group_of))


__all__ = ["DATASETS", "BuildError", "BuildReport", "Candidate", "build", "load_builder", "write_release"]
