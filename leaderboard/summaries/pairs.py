"""Two runs of one suite compared instance by instance, from their summaries (no query).

Per task, over the instances both runs played (their *shared* instances): the paired difference of
the primary metric, B − A, its 95 % paired bootstrap interval over the task's scoring units
(instances for T1-T4 and T6, subjects for T5's Event-F1, which averages subjects), and a two-sided
p-value: the exact McNemar test on per-instance correctness for T1-T4 when both runs played one
epoch, else a paired permutation test over the units (on each unit's mean over epochs for a run of
several). Overall likewise when both runs have all six tasks: the six tasks' bootstrap differences
averaged resample by resample, and a permutation test of the mean difference. Each shared instance
gets its change (``improved``, ``regressed``, ``same_right``, ``same_wrong``) by its item score, its
mean over epochs for a run of several. The statistics are ``leaderboard.paired``'s.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmark.scoring import PRIMARY_METRIC, TASK_IDS
from benchmark.scoring.epochs import is_correct
from leaderboard import paired, stats
from leaderboard.models import RunSummary
from leaderboard.summaries.kept import Kept, stored_key
from leaderboard.summaries.scoring import item_value, task_sample

N_RESAMPLES = 1000
N_PERMUTATIONS = 2000
CONFIDENCE = 0.95
#: Two item scores closer than this are the same score.
SAME = 1e-9
#: The order instance rows are listed in: regressions first.
CHANGES = ("regressed", "improved", "same_wrong", "same_right")
CLASSIFICATION_TASKS = ("T1", "T2", "T3", "T4")
#: What a task's scoring units are called (the others': instances).
UNITS = {"T5": "subjects", "T6": "nights"}
# Comparisons of stored summaries, kept per process until either summary is saved again.
_kept = Kept(64)


UnitSample = stats.TaskSample | stats.EpochSample | paired.WeightedMeanSample


@dataclass(frozen=True)
class Side:
    """One run on one instance: its episode (the first epoch's that completed), item score and correctness.

    ``score``: the item score (``item_score``; a T5 record answered with silence and free of
    seizures, whose Event-F1 is undefined, scores 1.0), its mean over epochs for a run of several;
    ``correct``: completed and correct by ``benchmark.scoring.epochs.is_correct`` (the run page's rule), in
    most epochs for a run of several.
    """

    episode: int | None
    score: float
    correct: bool


@dataclass(frozen=True)
class InstancePair:
    instance: int
    task: str
    a: Side
    b: Side
    change: str


@dataclass(frozen=True)
class TaskComparison:
    """A task of two runs: their leaderboard scores, and the paired difference over the shared units."""

    task: str
    metric: str
    a: float | None
    b: float | None
    difference: float
    ci: tuple[float, float]
    p_value: float
    test: str
    n_units: int
    unit: str
    improved: int
    regressed: int
    only_a: int
    only_b: int


@dataclass
class Comparison:
    """Two runs compared: per task (tasks both played), Overall (None unless both have all six), instances.

    ``instances``: the shared instances, regressions first; ``only``: the instances one run played,
    ``{"instance", "task", "run": "a" | "b", "episode"}``, left out of the tests.
    """

    tasks: dict[str, TaskComparison] = field(default_factory=dict)
    overall: dict[str, Any] | None = None
    instances: list[InstancePair] = field(default_factory=list)
    only: list[dict[str, Any]] = field(default_factory=list)


def _by_instance(rows: Sequence[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    """A task's summary rows per instance, in epoch order (one row for a run of one epoch)."""
    grouped: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: row.get("epoch", 0)):
        grouped[row["instance"]].append(row)
    return grouped


def _correct(task: str, row: Mapping[str, Any]) -> bool:
    """The run page's rule: an episode that completed (a summary row names only those) and is correct by its scores."""
    return row.get("episode") is not None and is_correct(task, row)


def _value(task: str, row: Mapping[str, Any]) -> float:
    score = item_value(task, row)
    return 0.0 if score is None else float(score)  # a row not scored: wrong


def _side(task: str, rows: Sequence[Mapping[str, Any]]) -> Side:
    correct = [_correct(task, row) for row in rows]
    return Side(
        episode=next((row["episode"] for row in rows if row.get("episode")), None),
        score=sum(_value(task, row) for row in rows) / len(rows),
        correct=sum(correct) * 2 > len(correct),
    )


def _change(a: Side, b: Side) -> str:
    if b.score > a.score + SAME:
        return "improved"
    if b.score < a.score - SAME:
        return "regressed"
    return "same_right" if b.correct else "same_wrong"


def _unit_sample(task: str, rows: list[Mapping[str, Any]]) -> UnitSample:
    """The task's sample over its scoring units: ``task_sample``'s, with T5's records gathered into subjects."""
    sample = task_sample(task, rows)
    if task != "T5":
        return sample
    if isinstance(sample, stats.EpochSample):
        return stats.EpochSample(tuple(paired.subject_sample(e.subject, e.tp, e.fp, e.fn) for e in sample.epochs))
    return paired.subject_sample(sample.subject, sample.tp, sample.fp, sample.fn)


def _unit_means(task: str, sample, *, means: bool = False):
    """A sample of one value per unit for the permutation test: a run of several epochs by its mean per unit.

    A single epoch keeps its own sample, unless ``means`` asks for the mean kind too (to be tested
    against a run of several): a classification task then by its correctness.
    """
    if not isinstance(sample, stats.EpochSample):
        if means and isinstance(sample, stats.ClassificationSample):
            return stats.MeanSample((sample.gold == sample.predicted).astype(float))
        return sample
    epochs = sample.epochs
    if task == "T5":
        weights = np.stack([epoch.weights for epoch in epochs])
        values = np.stack([epoch.values for epoch in epochs])
        defined = weights.sum(axis=0)
        means = np.divide((values * weights).sum(axis=0), defined, out=np.zeros(defined.shape), where=defined > 0)
        return paired.WeightedMeanSample(means, (defined > 0).astype(float))
    if isinstance(epochs[0], stats.ClassificationSample):
        return stats.MeanSample(np.mean([epoch.gold == epoch.predicted for epoch in epochs], axis=0))
    return stats.MeanSample(np.mean([epoch.values for epoch in epochs], axis=0))


def _unit_changes(task: str, a, b, pairs: list[InstancePair]) -> tuple[int, int]:
    """How many scoring units B improved on and how many it regressed on."""
    if task != "T5":
        return sum(p.change == "improved" for p in pairs), sum(p.change == "regressed" for p in pairs)
    a, b = _unit_means(task, a), _unit_means(task, b)
    # a subject whose Event-F1 is undefined (no seizure, none predicted) was answered right
    value_a, value_b = np.where(a.weights > 0, a.values, 1.0), np.where(b.weights > 0, b.values, 1.0)
    return int((value_b > value_a + SAME).sum()), int((value_b < value_a - SAME).sum())


def _fixed_size_null(null: np.ndarray, exact: bool, *, size: int, seed: int) -> np.ndarray:
    """A permutation null of ``size`` draws: an exact one (every swap) is sampled uniformly, as random swaps are."""
    if not exact:
        return null
    return null[np.random.default_rng([seed, 2]).integers(0, len(null), size)]


@dataclass(frozen=True)
class _Paired:
    """A task's two unit samples over the shared units, and their shared instances' rows."""

    task: str
    a: Any
    b: Any
    pairs: list[InstancePair]
    single_epoch: bool


def _paired_task(task: str, rows_a, rows_b) -> tuple[_Paired | None, list[dict[str, Any]]]:
    by_a, by_b = _by_instance(rows_a), _by_instance(rows_b)
    shared = sorted(set(by_a) & set(by_b))
    only = [
        {"instance": instance, "task": task, "run": run, "episode": _side(task, rows[instance]).episode}
        for run, rows, other in (("a", by_a, by_b), ("b", by_b, by_a))
        for instance in sorted(set(rows) - set(other))
    ]
    if not shared:
        return None, only
    pairs = []
    for instance in shared:
        a, b = _side(task, by_a[instance]), _side(task, by_b[instance])
        pairs.append(InstancePair(instance=instance, task=task, a=a, b=b, change=_change(a, b)))

    def sample(grouped):
        rows = sorted((row for instance in shared for row in grouped[instance]),
                      key=lambda row: (row.get("epoch", 0), row["instance"]))
        return _unit_sample(task, rows)

    single = all(len(by_a[i]) == 1 and len(by_b[i]) == 1 for i in shared)
    return _Paired(task=task, a=sample(by_a), b=sample(by_b), pairs=pairs, single_epoch=single), only


def _tested(item: _Paired) -> tuple:
    """A and B as the permutation test takes them: their own samples, or both by unit means over epochs."""
    means = not item.single_epoch
    return _unit_means(item.task, item.a, means=means), _unit_means(item.task, item.b, means=means)


def _test(item: _Paired, seed: int) -> tuple[float, str]:
    if item.task in CLASSIFICATION_TASKS and item.single_epoch:
        a_only = sum(p.a.correct and not p.b.correct for p in item.pairs)
        b_only = sum(p.b.correct and not p.a.correct for p in item.pairs)
        return paired.mcnemar_exact(a_only, b_only), "McNemar (exact)"
    observed, null, exact = paired.permutation_null(*_tested(item), n_permutations=N_PERMUTATIONS, seed=seed)
    name = "paired permutation" + ("" if item.single_epoch else " (unit means over epochs)")
    return paired.permutation_p_value(observed, null, exact=exact), name + (" (exact)" if exact else "")


def _permutation_nulls(items: Sequence[_Paired], *, n_permutations: int) -> tuple[float, np.ndarray]:
    """The mean over tasks of the observed B − A and of its null, each task's units swapped on their own."""
    observed, nulls = [], []
    for seed, item in enumerate(items):
        task_observed, null, exact = paired.permutation_null(*_tested(item), n_permutations=n_permutations, seed=seed)
        observed.append(task_observed)
        nulls.append(_fixed_size_null(null, exact, size=n_permutations, seed=seed))
    return float(np.mean(observed)), np.mean(nulls, axis=0)


def _has_all_tasks(summary: RunSummary) -> bool:
    return sorted(summary.tasks) == list(TASK_IDS) and all(summary.items.get(code) for code in TASK_IDS)


def _paired_tasks(a: RunSummary, b: RunSummary) -> tuple[dict[str, _Paired], list[dict[str, Any]]]:
    tasks, only = {}, []
    for code in TASK_IDS:
        item, task_only = _paired_task(code, a.items.get(code) or [], b.items.get(code) or [])
        only += task_only
        if item is not None:
            tasks[code] = item
    return tasks, only


def compare_summaries(a: RunSummary, b: RunSummary, *, keep: bool = True) -> Comparison:
    """Runs A and B compared from their summaries; B − A throughout. Kept per process for stored summaries
    (``keep``: look for it there and keep it)."""
    if not keep:
        return _compared(a, b)
    return _kept.remember(stored_key(a, b), lambda: _compared(a, b))


def _compared(a: RunSummary, b: RunSummary) -> Comparison:
    paired_tasks, only = _paired_tasks(a, b)
    comparison = Comparison(only=only)
    differences = {}
    for seed, (code, item) in enumerate(paired_tasks.items()):
        differences[code] = paired.paired_bootstrap(item.a, item.b, n_resamples=N_RESAMPLES, seed=seed)
        p_value, test = _test(item, seed)
        improved, regressed = _unit_changes(code, item.a, item.b, item.pairs)
        task_only = [entry for entry in only if entry["task"] == code]
        comparison.tasks[code] = TaskComparison(
            task=code,
            metric=PRIMARY_METRIC[code],
            a=(a.tasks.get(code) or {}).get("primary_score"),
            b=(b.tasks.get(code) or {}).get("primary_score"),
            difference=float(item.b.score() - item.a.score()),
            ci=paired.interval(differences[code], CONFIDENCE),
            p_value=p_value,
            test=test,
            n_units=item.a.n_items,
            unit=UNITS.get(code, "instances"),
            improved=improved,
            regressed=regressed,
            only_a=sum(entry["run"] == "a" for entry in task_only),
            only_b=sum(entry["run"] == "b" for entry in task_only),
        )
        comparison.instances += item.pairs
    if _has_all_tasks(a) and _has_all_tasks(b) and len(paired_tasks) == len(TASK_IDS):
        observed, null = _permutation_nulls(list(paired_tasks.values()), n_permutations=N_PERMUTATIONS)
        comparison.overall = {
            "a": a.overall,
            "b": b.overall,
            "difference": float(np.mean([task.difference for task in comparison.tasks.values()])),
            "ci": paired.interval(np.mean(list(differences.values()), axis=0), CONFIDENCE),
            "p_value": paired.permutation_p_value(observed, null, exact=False),
            "test": "paired permutation over the six tasks",
        }
    comparison.instances.sort(key=lambda p: (CHANGES.index(p.change), TASK_IDS.index(p.task), p.instance))
    return comparison


def overall_p_value(a: RunSummary, b: RunSummary, *, n_permutations: int = 1000) -> float | None:
    """The permutation test's two-sided p-value of Overall B − A over the shared instances (the board's marks).

    None unless both runs have all six tasks and share instances in each.
    """
    if not (_has_all_tasks(a) and _has_all_tasks(b)):
        return None
    paired_tasks, _ = _paired_tasks(a, b)
    if len(paired_tasks) != len(TASK_IDS):
        return None
    observed, null = _permutation_nulls(list(paired_tasks.values()), n_permutations=n_permutations)
    return paired.permutation_p_value(observed, null, exact=False)
