"""Paired run comparison and item analysis: each statistic against an independent computation."""
import itertools
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as scipy_stats

from leaderboard import paired
from leaderboard.stats import ClassificationSample, EpochSample, EventSample, MeanSample

# Direct formulas of the tasks' metrics, written from their definitions without the samples' code.


def _macro_f1(gold, predicted, n_classes):
    f1s = []
    for label in range(n_classes):
        tp = sum(g == label and p == label for g, p in zip(gold, predicted))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted))
        f1s.append(2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0)
    return float(np.mean(f1s))


def _event_f1(subject, tp, fp, fn):
    sums = defaultdict(lambda: [0, 0, 0])
    for s, *counts in zip(subject, tp, fp, fn):
        sums[s] = [total + count for total, count in zip(sums[s], counts)]
    f1s = [2 * t / (2 * t + p + n) for t, p, n in sums.values() if 2 * t + p + n]
    return sum(f1s) / len(f1s) if f1s else 0.0


def _weighted_mean(values, weights):
    total = sum(weights)
    return sum(v * w for v, w in zip(values, weights)) / total if total else 0.0


def _metric(sample, items):
    """Score of the sample's items ``items`` (indices), from the direct formulas."""
    if isinstance(sample, MeanSample):
        return float(np.mean(sample.values[items]))
    if isinstance(sample, ClassificationSample):
        return _macro_f1(sample.gold[items], sample.predicted[items], sample.n_classes)
    if isinstance(sample, EventSample):
        return _event_f1(*(getattr(sample, name)[items] for name in ("subject", "tp", "fp", "fn")))
    return _weighted_mean(sample.values[items], sample.weights[items])


def _pairs(kind, n_units, seed):
    """Two runs' samples of one kind over the same units, some units answered alike."""
    rng = np.random.default_rng(seed)
    alike = rng.random(n_units) < 0.3

    def answered(make):
        a, b = make(), make()
        return a, np.where(alike, a, b)

    if kind == "mean":
        a, b = answered(lambda: rng.integers(0, 2, n_units).astype(float))
        return MeanSample(a), MeanSample(b)
    if kind == "classification":
        gold = np.arange(n_units) % 3
        a, b = answered(lambda: rng.integers(-1, 3, n_units))
        return ClassificationSample(gold, a, 3), ClassificationSample(gold, b, 3)
    if kind == "event":
        subject = rng.integers(0, 3, n_units)
        a, b = zip(*(answered(lambda: rng.integers(0, 3, n_units)) for _ in range(3)))
        return EventSample(subject, *a), EventSample(subject, *b)
    weights = (rng.random(n_units) < 0.7).astype(float)
    a, b = answered(lambda: rng.random(n_units))
    return paired.WeightedMeanSample(a, weights), paired.WeightedMeanSample(b, np.where(alike, weights, 1 - weights))


def _swapped(a, b, swap):
    """The sample of A's data on the units where ``swap`` is 0 and B's where it is 1."""
    fields = {}
    for name in a.__dataclass_fields__:
        value_a, value_b = getattr(a, name), getattr(b, name)
        fields[name] = np.where(swap, value_b, value_a) if np.ndim(value_a) else value_a
    return type(a)(**fields)


KINDS = ["mean", "classification", "event", "weighted"]


@pytest.mark.parametrize("n_a_only", [0, 1, 2, 5, 13, 40, 300, 2000])
@pytest.mark.parametrize("n_b_only", [0, 1, 3, 13, 41, 700])
def test_mcnemar_exact_equals_scipys_two_sided_binomial_test(n_a_only, n_b_only):
    n = n_a_only + n_b_only
    expected = scipy_stats.binomtest(min(n_a_only, n_b_only), n, 0.5).pvalue if n else 1.0
    np.testing.assert_allclose(paired.mcnemar_exact(n_a_only, n_b_only), expected, rtol=1e-9)


def test_mcnemar_exact_is_symmetric_and_rejects_negative_counts():
    assert paired.mcnemar_exact(3, 12) == paired.mcnemar_exact(12, 3)
    assert paired.mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError):
        paired.mcnemar_exact(-1, 3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_permutation_test_equals_brute_force_enumeration(kind, seed):
    a, b = _pairs(kind, 8, seed)
    units = np.arange(a.n_items)
    brute = np.array([
        _metric(_swapped(b, a, swap), units) - _metric(_swapped(a, b, swap), units)
        for swap in itertools.product([0, 1], repeat=a.n_items)
    ])
    observed_brute = _metric(b, units) - _metric(a, units)

    observed, null, exact = paired.permutation_null(a, b)

    assert exact
    np.testing.assert_allclose(observed, observed_brute, atol=1e-12)
    # Units answered alike do not change the statistic: each value stands 2**(n - m) times in the brute force.
    np.testing.assert_allclose(np.sort(np.repeat(null, len(brute) // len(null))), np.sort(brute), atol=1e-12)
    p_brute = np.mean(np.abs(brute) >= abs(observed_brute) - 1e-12)
    np.testing.assert_allclose(paired.permutation_p_value(observed, null, exact=True), p_brute)


def test_a_unit_whose_weight_is_zero_in_both_runs_changes_nothing():
    a = paired.WeightedMeanSample([0.2, 0.9, 0.5], [1, 0, 1])
    b = paired.WeightedMeanSample([0.6, 0.1, 0.5], [1, 0, 1])
    observed, null, exact = paired.permutation_null(a, b)
    assert exact and observed == pytest.approx(0.2)
    np.testing.assert_allclose(np.sort(null), [-0.2, -0.2, 0.2, 0.2])


@pytest.mark.parametrize("kind", KINDS)
def test_monte_carlo_permutation_test_is_seeded_and_never_reaches_zero(kind):
    a, b = _pairs(kind, 40, 5)
    observed, null, exact = paired.permutation_null(a, b, n_permutations=300, seed=4)
    assert not exact and null.shape == (300,)
    np.testing.assert_array_equal(paired.permutation_null(a, b, n_permutations=300, seed=4)[1], null)
    assert not np.array_equal(paired.permutation_null(a, b, n_permutations=300, seed=5)[1], null)
    count = np.sum(np.abs(null) >= abs(observed) - 1e-12)
    assert paired.permutation_p_value(observed, null, exact=False) == (1 + count) / 301


def test_b_better_on_every_one_of_20_units_is_significant():
    a, b = MeanSample(np.zeros(20)), MeanSample(np.ones(20))
    observed, null, exact = paired.permutation_null(a, b)
    assert observed == 1.0 and not exact
    assert paired.permutation_p_value(observed, null, exact=exact) == pytest.approx(1 / 2001)


def test_b_better_on_every_one_of_6_units_gives_the_exact_sign_test():
    observed, null, exact = paired.permutation_null(MeanSample(np.zeros(6)), MeanSample(np.ones(6)))
    assert exact and len(null) == 64
    assert paired.permutation_p_value(observed, null, exact=True) == pytest.approx(2 / 64)


def test_identical_runs_have_p_value_one():
    a = ClassificationSample([0, 1, 2, 0], [0, 2, 2, -1], 3)
    observed, null, exact = paired.permutation_null(a, a)
    assert (observed, list(null), exact) == (0.0, [0.0], True)
    assert paired.permutation_p_value(observed, null, exact=True) == 1.0


@pytest.mark.parametrize(("a", "b"), [
    (MeanSample([1.0, 0.0]), MeanSample([1.0, 0.0, 1.0])),
    (MeanSample([1.0, 0.0]), paired.WeightedMeanSample([1.0, 0.0], [1, 1])),
    (ClassificationSample([0, 1], [0, 1], 2), ClassificationSample([1, 1], [0, 1], 2)),
    (ClassificationSample([0, 1], [0, 1], 2), ClassificationSample([0, 1], [0, 1], 3)),
    (EventSample([0, 1], [1, 0], [0, 0], [0, 1]), EventSample([0, 0], [1, 0], [0, 0], [0, 1])),
    (EpochSample((MeanSample([1.0, 0.0]),)), EpochSample((MeanSample([0.0, 0.0]),))),
])
def test_permutation_test_refuses_samples_that_do_not_pair(a, b):
    with pytest.raises(ValueError):
        paired.permutation_null(a, b)


def test_paired_bootstrap_of_identical_runs_is_zero_and_of_a_shift_is_the_shift():
    values = np.random.default_rng(0).random(50)
    np.testing.assert_array_equal(paired.paired_bootstrap(MeanSample(values), MeanSample(values)), np.zeros(1000))
    shifted = paired.paired_bootstrap(MeanSample(values), MeanSample(values + 0.25), n_resamples=200)
    np.testing.assert_allclose(shifted, 0.25)


@pytest.mark.parametrize("kind", KINDS)
def test_paired_bootstrap_recomputes_both_runs_on_the_same_drawn_units(kind):
    a, b = _pairs(kind, 30, 3)
    indices = np.random.default_rng(9).integers(0, 30, size=(25, 30))
    expected = [_metric(b, row) - _metric(a, row) for row in indices]
    np.testing.assert_allclose(paired.paired_bootstrap(a, b, n_resamples=25, seed=9), expected, atol=1e-12)


def test_paired_bootstrap_accepts_epoch_samples_of_different_epoch_counts():
    a, b = _pairs("classification", 40, 1)
    alike_epochs = paired.paired_bootstrap(EpochSample((a, a, a)), b, n_resamples=100, seed=2)
    np.testing.assert_allclose(alike_epochs, paired.paired_bootstrap(a, b, n_resamples=100, seed=2))
    other = ClassificationSample(b.gold, np.roll(b.predicted, 1), 3)
    mixed = paired.paired_bootstrap(EpochSample((a, b)), EpochSample((b, other, a)), n_resamples=100, seed=2)
    assert mixed.shape == (100,)
    np.testing.assert_array_equal(
        mixed, paired.paired_bootstrap(EpochSample((a, b)), EpochSample((b, other, a)), n_resamples=100, seed=2)
    )
    with pytest.raises(ValueError):
        paired.paired_bootstrap(a, MeanSample(np.ones(39)))


def test_interval_is_the_central_percentile_range():
    differences = np.linspace(-1, 1, 2001)
    assert paired.interval(differences, 0.9) == pytest.approx((-0.9, 0.9))
    with pytest.raises(ValueError):
        paired.interval(differences, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_subject_sample_scores_exactly_as_the_event_sample(seed):
    rng = np.random.default_rng(seed)
    n_records = 30
    subject = rng.choice([0, 1, 2, 4, 5], n_records)  # subject 3 has no record
    counts = [rng.integers(0, 3, n_records) * (rng.random(n_records) < 0.6) for _ in range(3)]
    counts[0][subject == 5] = counts[1][subject == 5] = counts[2][subject == 5] = 0  # F1 undefined
    sample = paired.subject_sample(subject, *counts)
    assert sample.n_items == 6
    np.testing.assert_array_equal(sample.weights[[3, 5]], [0, 0])
    assert sample.score() == EventSample(subject, *counts).score()


def test_subject_sample_scores_zero_when_no_subject_has_a_defined_f1():
    sample = paired.subject_sample([0, 1], [0, 0], [0, 0], [0, 0])
    assert sample.score() == 0.0 == EventSample([0, 1], [0, 0], [0, 0], [0, 0]).score()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_leave_one_out_equals_the_score_of_the_other_items(kind, seed):
    sample = _pairs(kind, 25, seed)[0]
    expected = [_metric(sample, np.delete(np.arange(25), item)) for item in range(25)]
    np.testing.assert_allclose(paired.leave_one_out(sample), expected, atol=1e-12)


def test_leave_one_out_drops_a_subject_left_without_records():
    sample = EventSample([0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 3])
    np.testing.assert_allclose(paired.leave_one_out(sample), [0.0, 0.5, 2 / 3])  # record 2 leaves subject 0 alone


@pytest.mark.parametrize("sample", [
    MeanSample([0.3]), ClassificationSample([1], [1], 2), EventSample([0], [1], [0], [0]),
    paired.WeightedMeanSample([0.5], [1.0]),
])
def test_leave_one_out_of_a_single_item_is_nan(sample):
    assert np.isnan(paired.leave_one_out(sample)).all()


def test_item_total_correlation_equals_numpys_corrcoef_on_complete_data():
    rng = np.random.default_rng(0)
    items = rng.integers(0, 2, size=(12, 5)).astype(float)
    rest = rng.random((12, 5)) + 0.3 * items
    expected = [np.corrcoef(items[:, i], rest[:, i])[0, 1] for i in range(5)]
    np.testing.assert_allclose(paired.item_total_correlation(items, rest), expected, rtol=1e-12)


def test_item_total_correlation_leaves_out_runs_that_lack_the_item():
    rng = np.random.default_rng(1)
    items, rest = rng.random((10, 4)), rng.random((10, 4))
    items[[0, 3], 1] = np.nan
    rest[[5], 1] = np.nan
    rest[:, 2] = np.nan
    rest[:3, 2] = [0.1, 0.5, 0.9]  # 3 runs: the least that counts
    items[3:, 3] = np.nan  # 3 runs
    items[:2, 3] = np.nan  # 1 run left: too few
    correlation = paired.item_total_correlation(items, rest)
    for item in (0, 1, 2):
        present = ~np.isnan(items[:, item]) & ~np.isnan(rest[:, item])
        expected = scipy_stats.pearsonr(items[present, item], rest[present, item]).statistic
        np.testing.assert_allclose(correlation[item], expected, rtol=1e-10)
    assert np.isnan(correlation[3])


def test_item_total_correlation_is_nan_for_an_item_every_run_got_right():
    items = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    rest = np.array([[0.1, 0.1], [0.7, 0.7], [0.3, 0.3], [0.3, 0.3]])
    correlation = paired.item_total_correlation(items, rest)
    assert np.isnan(correlation[0]) and np.isfinite(correlation[1])
    assert np.isnan(paired.item_total_correlation(rest, items)[0])


@pytest.mark.parametrize(("p_values", "expected"), [
    ([0.01, 0.04, 0.03, None], [0.03, 0.06, 0.06, None]),
    ([0.04, 0.001], [0.04, 0.002]),
    ([0.5, 0.6, None], [1.0, 1.0, None]),
    ([None, None], [None, None]),
    ([], []),
])
def test_holm_adjusts_step_down_and_keeps_missing_tests(p_values, expected):
    adjusted = paired.holm(p_values)
    assert [value is None for value in adjusted] == [value is None for value in expected]
    np.testing.assert_allclose([v for v in adjusted if v is not None], [v for v in expected if v is not None])


def test_holm_equals_its_definition_on_random_p_values():
    raw = np.random.default_rng(3).random(9) ** 3
    order = np.argsort(raw)
    expected = np.empty(9)
    for rank, index in enumerate(order):
        expected[index] = min(1.0, max(raw[earlier] * (9 - step) for step, earlier in enumerate(order[: rank + 1])))
    np.testing.assert_allclose(paired.holm(list(raw)), expected)
