"""Paired comparison of two runs, instance by instance, and item analysis, as pure functions.

No Django here. Two runs of the benchmark answer the same instances, so their difference is best
judged on those instances in pairs: the paired bootstrap draws the instances once for both runs,
the paired permutation test exchanges the two runs' answers instance by instance, and the exact
McNemar test counts the instances that only one run got right. All recompute the task's own
primary metric (pooled macro-F1, subject-level Event-F1, means) through the samples of
``leaderboard.stats``, vectorised over resamples. Holm's method adjusts the p-values of several
tasks; leave-one-out scores and corrected item-total correlations say which items agree with the
rest of the benchmark across runs.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from leaderboard.stats import ClassificationSample, EpochSample, EventSample, MeanSample, TaskSample

# Ties between a permuted statistic and the observed one are float ties, not differences.
TIE_TOLERANCE = 1e-12

# Fields that describe the units rather than a run's answers: two runs compared in pairs share them.
_UNIT_FIELDS = ("gold", "subject", "n_classes")


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted means along the last axis, 0 where no unit has weight (the T5 rule)."""
    total = weights.sum(axis=-1)
    return np.divide((values * weights).sum(axis=-1), total, out=np.zeros(total.shape), where=total > 0)


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F1 = 2TP / (2TP + FP + FN) of counts, 0 where undefined, and where it is defined."""
    denominator = 2 * tp + fp + fn
    defined = denominator > 0
    return np.divide(2 * tp, denominator, out=np.zeros(np.shape(tp)), where=defined), defined


@dataclass(frozen=True)
class WeightedMeanSample:
    """A task scored as the weighted mean of per-unit values, 0 when no unit has weight.

    T5's Event-F1 over subjects is one (see ``subject_sample``: values are each subject's F1 of
    its summed counts, weights 1 where that F1 is defined and 0 where not); any per-unit mean is
    another (weights 1). Same interface as the samples of ``leaderboard.stats``.

    Attributes
    ----------
    values : ndarray, shape (n_items,)
        One value per unit.
    weights : ndarray, shape (n_items,)
        Non-negative weight of each unit.
    """

    values: np.ndarray
    weights: np.ndarray

    def __post_init__(self):
        values, weights = np.asarray(self.values, dtype=float), np.asarray(self.weights, dtype=float)
        if values.ndim != 1 or values.shape != weights.shape:
            raise ValueError(f"values and weights must be 1-D of one length, got {values.shape} and {weights.shape}")
        if (weights < 0).any() or np.isnan(weights).any():
            raise ValueError("weights must be non-negative numbers")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "weights", weights)

    @property
    def n_items(self) -> int:
        return len(self.values)

    def score(self) -> float:
        return float(self.resampled(np.arange(self.n_items)[np.newaxis, :])[0])

    def resampled(self, indices: np.ndarray) -> np.ndarray:
        """Weighted means of resampled unit sets; ``indices`` has shape (n_resamples, n_items)."""
        return _weighted_mean(self.values[indices], self.weights[indices])


PairedSample = TaskSample | WeightedMeanSample


def _one_hot_removed(totals: np.ndarray, bins: np.ndarray, amounts: np.ndarray) -> np.ndarray:
    """``totals`` (n_bins,) less each item's ``amounts`` in its bin: shape (n_items, n_bins)."""
    return totals[np.newaxis, :] - (bins[:, np.newaxis] == np.arange(len(totals))) * amounts[:, np.newaxis]


def _subject_counts(sample: EventSample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_subjects = int(sample.subject.max()) + 1 if sample.n_items else 0
    return tuple(np.bincount(sample.subject, weights=counts, minlength=n_subjects)
                 for counts in (sample.tp, sample.fp, sample.fn))  # fmt: skip


def subject_sample(subject, tp, fp, fn) -> WeightedMeanSample:
    """T5 at the subject level: one unit per subject, for comparing runs subject by subject.

    Parameters
    ----------
    subject : array of int, shape (n_records,)
        Subject index of each record, in ``[0, n_subjects)`` as for ``EventSample``.
    tp, fp, fn : array of int, shape (n_records,)
        Event counts of each record.

    Returns
    -------
    sample : WeightedMeanSample, n_items = n_subjects
        Units in subject order; value the F1 of the subject's summed counts, weight 1 where that
        F1 is defined (2TP + FP + FN > 0) and 0 (value 0) where not. Its score equals
        ``EventSample(subject, tp, fp, fn).score()``.
    """
    f1, defined = _f1(*_subject_counts(EventSample(subject, tp, fp, fn)))
    return WeightedMeanSample(f1, defined.astype(float))


def _check_same_units(a, b) -> int:
    for sample in (a, b):
        if not isinstance(sample, (MeanSample, ClassificationSample, EventSample, WeightedMeanSample, EpochSample)):
            raise TypeError(f"expected a task sample, got {type(sample).__name__}")
    if a.n_items != b.n_items:
        raise ValueError(f"the runs must answer the same units: A has {a.n_items}, B has {b.n_items}")
    if a.n_items == 0:
        raise ValueError("the runs must share at least one unit")
    return a.n_items


def paired_bootstrap(a, b, *, n_resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """Bootstrap distribution of B − A, the units drawn alike for both runs.

    One draw of unit indices (with replacement) serves both runs, which keeps the pairing: the
    variation the units share cancels out of the difference. For an ``EpochSample`` its epochs
    are drawn too, for each run independently, from a generator of their own (as
    ``stats.overall_resamples`` does), so A and B may have different epoch counts.

    Parameters
    ----------
    a, b : MeanSample, ClassificationSample, EventSample, WeightedMeanSample or EpochSample
        The two runs' samples of one task, over the same units in the same order.
    n_resamples : int
        Number of bootstrap resamples.
    seed : int
        Seed of the local random generators; equal inputs give equal distributions.

    Returns
    -------
    differences : ndarray, shape (n_resamples,)
        B's score minus A's on each resample, on the scale of the scores.
    """
    n_units = _check_same_units(a, b)
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    indices = np.random.default_rng(seed).integers(0, n_units, size=(n_resamples, n_units))
    epoch_rng = np.random.default_rng([seed, 1])

    def resampled(sample) -> np.ndarray:
        if isinstance(sample, EpochSample):
            return sample.resampled(indices, epoch_rng.integers(0, sample.n_epochs, (n_resamples, sample.n_epochs)))
        return sample.resampled(indices)

    return resampled(b) - resampled(a)


def interval(differences: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap differences, as ``stats.bootstrap_overall`` gives Overall's.

    Returns (low, high), the central ``confidence`` part (in (0, 1)) of ``paired_bootstrap``'s B − A."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    differences = np.asarray(differences, dtype=float)
    if differences.size == 0:
        raise ValueError("the interval needs at least one difference")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    return float(low), float(high)


def _stacked(a, b) -> tuple[PairedSample, np.ndarray]:
    """A's units then B's in one sample of length 2n, and which units' data differ between A and B."""
    n_units = _check_same_units(a, b)
    if isinstance(a, EpochSample) or isinstance(b, EpochSample):
        raise ValueError("the permutation test takes one sample per run: reduce several epochs to per-unit "
                         "means (a MeanSample or WeightedMeanSample) first")
    if type(a) is not type(b):
        raise ValueError(f"A and B must be samples of one kind, got {type(a).__name__} and {type(b).__name__}")
    fields, differs = {}, np.zeros(n_units, dtype=bool)
    for field in dataclasses.fields(a):
        value_a, value_b = getattr(a, field.name), getattr(b, field.name)
        if field.name in _UNIT_FIELDS:
            if not np.array_equal(value_a, value_b):
                raise ValueError(f"A and B must share their {field.name}: they are not the same units")
            fields[field.name] = np.concatenate([value_a, value_b]) if np.ndim(value_a) else value_a
        else:
            fields[field.name] = np.concatenate([value_a, value_b])
            differs |= value_a != value_b
    return type(a)(**fields), differs


def permutation_null(a, b, *, n_permutations: int = 2000, seed: int = 0) -> tuple[float, np.ndarray, bool]:
    """Observed B − A and its null distribution under the paired permutation test.

    Under the null hypothesis each unit's A and B data are exchangeable. A permutation swaps A's
    and B's data on a subset of the units and recomputes B' − A' with the task's own metric. When
    the m units whose data differ allow 2**m <= ``n_permutations`` swaps, all of them are
    enumerated (an exact test); otherwise ``n_permutations`` random swaps are drawn. Units whose
    data are equal in A and B never change the statistic.

    Parameters
    ----------
    a, b : MeanSample, ClassificationSample, EventSample or WeightedMeanSample
        The two runs' samples of one task, of the same kind, over the same units in the same order
        (for a ClassificationSample the same gold and n_classes, for an EventSample the same
        subjects). Several epochs are reduced to per-unit means by the caller.
    n_permutations : int
        Largest number of swaps enumerated, and number of random swaps otherwise.
    seed : int
        Seed of the local random generator of the random swaps.

    Returns
    -------
    observed : float
        B's score minus A's.
    null : ndarray, shape (2**m,) if exact else (n_permutations,)
        B' − A' of each swap.
    exact : bool
        Whether ``null`` enumerates every swap (see ``permutation_p_value``).
    """
    combined, differs = _stacked(a, b)
    if n_permutations < 1:
        raise ValueError("n_permutations must be at least 1")
    n_units, differing = a.n_items, np.flatnonzero(differs)
    exact = 2 ** len(differing) <= n_permutations
    if exact:
        swaps_of_differing = (np.arange(2 ** len(differing))[:, np.newaxis] >> np.arange(len(differing))) & 1
    else:
        swaps_of_differing = np.random.default_rng(seed).integers(0, 2, size=(n_permutations, len(differing)))
    swaps = np.zeros((len(swaps_of_differing), n_units), dtype=np.int64)
    swaps[:, differing] = swaps_of_differing

    def b_minus_a(swaps: np.ndarray) -> np.ndarray:
        units = np.arange(n_units)
        return combined.resampled(units + n_units * (1 - swaps)) - combined.resampled(units + n_units * swaps)

    # The observed statistic is computed the null's own way, so that swapping nothing ties it exactly.
    return float(b_minus_a(np.zeros((1, n_units), dtype=np.int64))[0]), b_minus_a(swaps), exact


def permutation_p_value(observed: float, null: np.ndarray, *, exact: bool) -> float:
    """Two-sided p-value of a permutation test.

    ``observed`` and ``null`` (shape (n_permutations,)) as ``permutation_null`` gives them. When
    ``exact`` (every permutation enumerated) the p-value is the share of ``null`` with
    ``|t| >= |observed|``, float ties within 1e-12 counting; for random permutations it is
    (1 + count) / (1 + n_permutations), which never reaches 0. In (0, 1].
    """
    null = np.asarray(null, dtype=float)
    if null.size == 0:
        raise ValueError("the null distribution is empty")
    count = int((np.abs(null) >= abs(observed) - TIE_TOLERANCE).sum())
    p_value = count / null.size if exact else (1 + count) / (1 + null.size)
    return min(1.0, p_value)


def mcnemar_exact(n_a_only: int, n_b_only: int) -> float:
    """Exact two-sided McNemar test of two runs' correctness on the same items.

    Only the discordant items count: under the null hypothesis each is as likely to be one that
    A alone got right as one that B alone got right, a binomial of n = ``n_a_only + n_b_only`` at
    1/2, tested two-sided on min(``n_a_only``, ``n_b_only``) with exact integers.

    Parameters
    ----------
    n_a_only, n_b_only : int
        Items that A answered correctly and B not, and the reverse.

    Returns
    -------
    p_value : float
        ``min(1, 2 * sum_{k <= min} C(n, k) / 2**n)``, and 1.0 when no item is discordant.
    """
    if any(int(count) != count or count < 0 for count in (n_a_only, n_b_only)):
        raise ValueError(f"discordant counts must be non-negative integers, got {n_a_only} and {n_b_only}")
    n, smaller = int(n_a_only) + int(n_b_only), int(min(n_a_only, n_b_only))
    if n == 0:
        return 1.0
    # C(n, k) from C(n, k - 1), in exact integers: a math.comb afresh for each k took 3.8 s at n = 10,000.
    term = tail = 1
    for k in range(1, smaller + 1):
        term = term * (n - k + 1) // k
        tail += term
    return min(1.0, 2 * tail / 2**n)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values, for testing several tasks at once.

    The i-th smallest of m p-values is multiplied by m - i + 1 (i from 1), the products are made
    non-decreasing in that order (step-down) and capped at 1.

    Parameters
    ----------
    p_values : sequence of float or None
        Raw p-values in [0, 1]; None for a test not made, which is kept and not counted in m.

    Returns
    -------
    adjusted : list of float or None
        In input order.
    """
    tested = [index for index, p_value in enumerate(p_values) if p_value is not None]
    raw = np.array([p_values[index] for index in tested], dtype=float)
    if np.isnan(raw).any() or (raw < 0).any() or (raw > 1).any():
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(raw, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(raw[order] * (len(raw) - np.arange(len(raw)))))
    adjusted: list[float | None] = [None] * len(p_values)
    for index, value in zip(np.asarray(tested)[order], stepped):
        adjusted[index] = float(value)
    return adjusted


def leave_one_out(sample: PairedSample) -> np.ndarray:
    """The task score without each item, as the task's own metric gives it on the other items.

    Computed from the totals less each item's share, all items at once: for a ClassificationSample
    the pooled confusion matrix less the item's cell, for an EventSample its subject's summed
    counts less the record's (a subject left without records drops out, its F1 undefined).

    Returns
    -------
    scores : ndarray, shape (n_items,)
        ``scores[i]`` equals the score of ``sample`` (any single-epoch sample) without item i; NaN
        where no item is left.
    """
    n_items = sample.n_items
    if isinstance(sample, MeanSample):
        scores = (sample.values.sum() - sample.values) / max(n_items - 1, 1)
    elif isinstance(sample, WeightedMeanSample):
        weighted = sample.values * sample.weights
        total = sample.weights.sum() - sample.weights
        others_weighted = np.count_nonzero(sample.weights) - (sample.weights > 0) > 0
        scores = np.divide(weighted.sum() - weighted, total, out=np.zeros(n_items), where=others_weighted)
    elif isinstance(sample, ClassificationSample):
        k = sample.n_classes
        codes = sample.gold * (k + 1) + sample.predicted
        confusion = np.bincount(codes, minlength=k * (k + 1))
        without = _one_hot_removed(confusion, codes, np.ones(n_items, dtype=int)).reshape(n_items, k, k + 1)
        tp = np.einsum("bii->bi", without[:, :, :k])
        scores = _f1(tp, without[:, :, :k].sum(axis=1) - tp, without.sum(axis=2) - tp)[0].mean(axis=1)
    elif isinstance(sample, EventSample):
        counts = zip(_subject_counts(sample), (sample.tp, sample.fp, sample.fn))
        f1, defined = _f1(*(_one_hot_removed(totals, sample.subject, record) for totals, record in counts))
        scores = _weighted_mean(f1, defined)
    else:
        raise TypeError(f"expected a single-epoch task sample, got {type(sample).__name__}")
    return np.where(n_items > 1, scores, np.nan)


def item_total_correlation(item_values: np.ndarray, rest_scores: np.ndarray) -> np.ndarray:
    """Corrected item-total correlation of each item across runs.

    The Pearson correlation between an item's value in each run and that run's task score
    without the item (``leave_one_out``): an item that the better runs get right correlates
    positively, one that disagrees with the rest of the task negatively.

    Parameters
    ----------
    item_values : ndarray, shape (n_runs, n_items)
        Each run's value of each item (correctness 0/1 or an item score); NaN where the run lacks
        the item.
    rest_scores : ndarray, shape (n_runs, n_items)
        Each run's task score without each item; NaN where the run lacks the item.

    Returns
    -------
    correlation : ndarray, shape (n_items,)
        In [-1, 1] over the runs that have the item on both sides; NaN where fewer than 3 runs
        remain or either side is constant over them.
    """
    x, y = np.asarray(item_values, dtype=float), np.asarray(rest_scores, dtype=float)
    if x.ndim != 2 or x.shape != y.shape:
        raise ValueError(f"item_values and rest_scores must be (n_runs, n_items) alike, got {x.shape} and {y.shape}")
    present = ~(np.isnan(x) | np.isnan(y))
    n_runs = present.sum(axis=0)
    x, y = np.where(present, x, 0.0), np.where(present, y, 0.0)

    def centred(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean = values.sum(axis=0) / np.maximum(n_runs, 1)
        # Constant is told by the extremes, not by a variance that rounding may leave above zero.
        constant = np.where(present, values, np.inf).min(axis=0) == np.where(present, values, -np.inf).max(axis=0)
        return np.where(present, values - mean, 0.0), constant

    (dx, constant_x), (dy, constant_y) = centred(x), centred(y)
    valid = (n_runs >= 3) & ~constant_x & ~constant_y
    denominator = np.sqrt((dx**2).sum(axis=0) * (dy**2).sum(axis=0))
    correlation = np.divide((dx * dy).sum(axis=0), denominator, out=np.full(x.shape[1], np.nan), where=valid)
    return np.clip(correlation, -1.0, 1.0)
