"""Leaderboard statistics as pure functions: bootstrap intervals, rank stability, the Pareto frontier, tie groups.

No Django here. The bootstrap resamples the instances of each task independently (and, for a run
of several epochs, its epochs) and recomputes the task's primary metric exactly as the official
scorer aggregates it (pooled macro-F1 for T2-T4, subject-level sums for T5, means over items for
T1 and T6), from compact per-item arrays, so a thousand resamples of a full run take milliseconds.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Uniform-random baselines of the primary metrics, as the paper gives them (§6.2, Figure 5): a
# uniform guess on balanced classes has expected accuracy and macro-F1 1/K. The paper gives none
# for T5 and T6, whose random answers need assumptions about event counts and stage priors.
RANDOM_BASELINES: dict[str, float | None] = {
    "T1": 0.25, "T2": 1 / 3, "T3": 0.5, "T4": 1 / 3, "T5": None, "T6": None,
}  # fmt: skip

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


def _as_1d(values, name: str, dtype) -> np.ndarray:
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return array


@dataclass(frozen=True)
class MeanSample:
    """A task scored as the mean of per-item values (T1 correctness, T6 per-night macro-F1).

    Attributes
    ----------
    values : ndarray, shape (n_items,)
        One value per item.
    """

    values: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "values", _as_1d(self.values, "values", float))

    @property
    def n_items(self) -> int:
        return len(self.values)

    def score(self) -> float:
        return float(self.values.mean())

    def resampled(self, indices: np.ndarray) -> np.ndarray:
        """Scores of resampled item sets; ``indices`` has shape (n_resamples, n_items)."""
        return self.values[indices].mean(axis=1)


@dataclass(frozen=True)
class ClassificationSample:
    """A task scored by macro-F1 pooled over items (T2-T4), invalid answers counting as misses.

    Attributes
    ----------
    gold : ndarray of int, shape (n_items,)
        Class index of each reference, in ``[0, n_classes)``.
    predicted : ndarray of int, shape (n_items,)
        Class index of each answer; any value outside ``[0, n_classes)`` is an invalid answer.
    n_classes : int
        Number of reference classes; macro-F1 averages over all of them.
    """

    gold: np.ndarray
    predicted: np.ndarray
    n_classes: int

    def __post_init__(self):
        gold = _as_1d(self.gold, "gold", int)
        predicted = _as_1d(self.predicted, "predicted", int)
        if len(gold) != len(predicted):
            raise ValueError(f"gold has {len(gold)} items but predicted has {len(predicted)}")
        if self.n_classes < 1:
            raise ValueError("n_classes must be at least 1")
        if len(gold) and (gold.min() < 0 or gold.max() >= self.n_classes):
            raise ValueError(f"gold class indexes must lie in [0, {self.n_classes})")
        invalid = (predicted < 0) | (predicted >= self.n_classes)
        object.__setattr__(self, "gold", gold)
        object.__setattr__(self, "predicted", np.where(invalid, self.n_classes, predicted))

    @property
    def n_items(self) -> int:
        return len(self.gold)

    def score(self) -> float:
        return float(self.resampled(np.arange(self.n_items)[np.newaxis, :])[0])

    def resampled(self, indices: np.ndarray) -> np.ndarray:
        """Macro-F1 of resampled item sets; ``indices`` has shape (n_resamples, n_items)."""
        k = self.n_classes
        cells = k * (k + 1)  # gold rows x (predicted classes + the invalid column)
        n_resamples = indices.shape[0]
        codes = self.gold[indices] * (k + 1) + self.predicted[indices]
        codes += np.arange(n_resamples)[:, np.newaxis] * cells
        confusion = np.bincount(codes.ravel(), minlength=n_resamples * cells).reshape(n_resamples, k, k + 1)
        tp = np.einsum("bii->bi", confusion[:, :, :k])
        fp = confusion[:, :, :k].sum(axis=1) - tp
        fn = confusion.sum(axis=2) - tp
        denominator = 2 * tp + fp + fn
        f1 = np.divide(2 * tp, denominator, out=np.zeros(tp.shape, dtype=float), where=denominator > 0)
        return f1.mean(axis=1)


@dataclass(frozen=True)
class EventSample:
    """T5: per-record event counts, summed per subject inside each resample.

    Event-F1 is 2TP / (2TP + FP + FN) of each subject's summed counts, averaged over the
    subjects where it is defined, and 0 when it is defined for none (the official rule).

    Attributes
    ----------
    subject : ndarray of int, shape (n_records,)
        Subject index of each record.
    tp, fp, fn : ndarray of int, shape (n_records,)
        SzCORE-style event counts of each record.
    """

    subject: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    def __post_init__(self):
        arrays = {name: _as_1d(getattr(self, name), name, int) for name in ("subject", "tp", "fp", "fn")}
        lengths = {len(array) for array in arrays.values()}
        if len(lengths) > 1:
            raise ValueError("subject, tp, fp and fn must have the same length")
        if len(arrays["subject"]) and arrays["subject"].min() < 0:
            raise ValueError("subject indexes must be non-negative")
        for name, array in arrays.items():
            object.__setattr__(self, name, array)

    @property
    def n_items(self) -> int:
        return len(self.subject)

    def score(self) -> float:
        return float(self.resampled(np.arange(self.n_items)[np.newaxis, :])[0])

    def resampled(self, indices: np.ndarray) -> np.ndarray:
        """Subject-averaged Event-F1 of resampled record sets; ``indices`` is (n_resamples, n_records)."""
        n_subjects = int(self.subject.max()) + 1 if self.n_items else 1
        n_resamples = indices.shape[0]
        bins = (self.subject[indices] + np.arange(n_resamples)[:, np.newaxis] * n_subjects).ravel()
        size = n_resamples * n_subjects

        def per_subject(counts: np.ndarray) -> np.ndarray:
            return np.bincount(bins, weights=counts[indices].ravel(), minlength=size).reshape(n_resamples, n_subjects)

        tp, fp, fn = per_subject(self.tp), per_subject(self.fp), per_subject(self.fn)
        denominator = 2 * tp + fp + fn
        defined = denominator > 0
        f1 = np.divide(2 * tp, denominator, out=np.zeros(tp.shape), where=defined)
        n_defined = defined.sum(axis=1)
        return np.divide(f1.sum(axis=1), n_defined, out=np.zeros(n_resamples), where=n_defined > 0)


TaskSample = MeanSample | ClassificationSample | EventSample


@dataclass(frozen=True)
class EpochSample:
    """A task of a run that played each instance several times: one sample per epoch.

    A resample draws the instances, and, independently, the epochs with replacement; its score
    is the mean over the drawn epochs of the task's metric on the drawn instances.

    Attributes
    ----------
    epochs : tuple of TaskSample, length n_epochs
        One sample per epoch, over the same instances in the same order.
    """

    epochs: tuple[TaskSample, ...]

    def __post_init__(self):
        if not self.epochs:
            raise ValueError("an EpochSample needs at least one epoch")
        sizes = {epoch.n_items for epoch in self.epochs}
        if len(sizes) > 1:
            raise ValueError(f"every epoch must hold the same instances, got sizes {sorted(sizes)}")
        object.__setattr__(self, "epochs", tuple(self.epochs))

    @property
    def n_items(self) -> int:
        return self.epochs[0].n_items

    @property
    def n_epochs(self) -> int:
        return len(self.epochs)

    def score(self) -> float:
        return float(np.mean([epoch.score() for epoch in self.epochs]))

    def resampled(self, indices: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Scores of resampled sets; ``indices`` is (n_resamples, n_items), ``epochs`` (n_resamples, n_epochs)."""
        per_epoch = np.stack([epoch.resampled(indices) for epoch in self.epochs])  # (n_epochs, n_resamples)
        return per_epoch[epochs, np.arange(indices.shape[0])[:, np.newaxis]].mean(axis=1)


def overall_resamples(
    samples: Sequence[TaskSample | EpochSample],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> np.ndarray:
    """Bootstrap distribution of Overall, the unweighted mean of the tasks' primary scores.

    Each task's items are resampled with replacement independently of the others (the tasks are
    fixed, their instances are the sample), and for an ``EpochSample`` its epochs too; the task's
    primary metric is recomputed and the tasks are averaged.

    Parameters
    ----------
    samples : sequence of TaskSample or EpochSample
        One per task, each with at least one item.
    n_resamples : int
        Number of bootstrap resamples.
    seed : int
        Seed of the local random generator; equal inputs give equal distributions.

    Returns
    -------
    overall : ndarray, shape (n_resamples,)
        Overall of each resample, on the scale of the scores.
    """
    if not samples:
        raise ValueError("the bootstrap needs at least one task sample")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    rng = np.random.default_rng(seed)
    # Epochs are drawn from a generator of their own, so that the instances of every task are drawn
    # alike for runs of one epoch and of several (their resamples stay paired, as rank_stability needs).
    epoch_rng = np.random.default_rng([seed, 1])
    overall = np.zeros(n_resamples)
    for sample in samples:
        if sample.n_items == 0:
            raise ValueError("every task sample needs at least one item")
        indices = rng.integers(0, sample.n_items, size=(n_resamples, sample.n_items))
        if isinstance(sample, EpochSample):
            epochs = epoch_rng.integers(0, sample.n_epochs, size=(n_resamples, sample.n_epochs))
            overall += sample.resampled(indices, epochs)
        else:
            overall += sample.resampled(indices)
    return overall / len(samples)


def bootstrap_overall(
    samples: Sequence[TaskSample | EpochSample],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of Overall, the unweighted mean of the tasks' primary scores.

    The interval is the central ``confidence`` part of ``overall_resamples``' distribution.

    Parameters
    ----------
    samples : sequence of TaskSample or EpochSample
        One per task, each with at least one item.
    n_resamples : int
        Number of bootstrap resamples.
    confidence : float
        Coverage of the interval, in (0, 1).
    seed : int
        Seed of the local random generator; equal inputs give equal intervals.

    Returns
    -------
    low, high : float
        Interval bounds, on the scale of the scores.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    overall = overall_resamples(samples, n_resamples=n_resamples, seed=seed)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(overall, [tail, 100 - tail])
    return float(low), float(high)


def pareto_frontier(costs: Sequence[float | None], scores: Sequence[float | None]) -> list[bool]:
    """Which points are on the cost-performance Pareto frontier.

    A point is on it when no other point dominates it, that is, costs no more and scores no
    less, being strictly better in one of the two. Points without a cost or a score are never
    on it. Identical points do not dominate each other.

    Parameters
    ----------
    costs, scores : sequence of float or None
        One cost (lower is better) and one score (higher is better) per point.

    Returns
    -------
    on_frontier : list of bool
        One flag per point, in input order.
    """
    if len(costs) != len(scores):
        raise ValueError(f"{len(costs)} costs but {len(scores)} scores")
    points = [
        (float(cost), float(score)) if cost is not None and score is not None else None
        for cost, score in zip(costs, scores)
    ]
    known = [point for point in points if point is not None]

    def dominated(point: tuple[float, float]) -> bool:
        cost, score = point
        return any(
            other_cost <= cost and other_score >= score and (other_cost < cost or other_score > score)
            for other_cost, other_score in known
        )

    return [point is not None and not dominated(point) for point in points]


def tie_groups(intervals: Sequence[tuple[float, float] | None]) -> list[int]:
    """Group consecutive ranks whose intervals overlap the interval of their group's leader.

    Parameters
    ----------
    intervals : sequence of (low, high) or None
        Confidence intervals of the ranked entries, best first; None for an entry without an
        interval (a score published with none), which is never tied with another: equal point
        scores say nothing about whether two results differ.

    Returns
    -------
    groups : list of int
        The 1-based tie group of each entry: the best entry leads group 1; each next entry
        joins the current group while its interval overlaps the leader's, and otherwise leads
        the next group. An entry without an interval is a group of its own and ends the
        current one, so that a group is always a run of consecutive ranks.
    """
    groups: list[int] = []
    leader: tuple[float, float] | None = None
    for interval in intervals:
        if interval is not None and interval[0] > interval[1]:
            raise ValueError(f"interval {tuple(interval)} has its low bound above its high bound")
        if interval is not None and leader is not None and interval[0] <= leader[1] and interval[1] >= leader[0]:
            groups.append(groups[-1])
        else:
            leader = interval
            groups.append(groups[-1] + 1 if groups else 1)
    return groups


def rank_stability(resamples: Sequence[np.ndarray]) -> np.ndarray:
    """How often each entry ranks above each other one across bootstrap resamples.

    Parameters
    ----------
    resamples : sequence of ndarray, each shape (n_resamples,)
        One bootstrap distribution of Overall per entry, drawn alike (same resample count).

    Returns
    -------
    above : ndarray, shape (n_entries, n_entries)
        ``above[i, j]`` is the share of resamples in which entry i scores higher than entry j,
        a tie counting half, in [0, 1]; so ``above[i, j] + above[j, i] == 1`` and the diagonal
        is 0.5.
    """
    if not len(resamples):
        return np.zeros((0, 0))
    scores = np.stack([np.asarray(values, dtype=float) for values in resamples])  # (n_entries, n_resamples)
    if scores.ndim != 2:
        raise ValueError("each entry needs a one-dimensional array of resampled scores")
    higher = (scores[:, np.newaxis, :] > scores[np.newaxis, :, :]).mean(axis=2)
    tied = (scores[:, np.newaxis, :] == scores[np.newaxis, :, :]).mean(axis=2)
    return higher + tied / 2
