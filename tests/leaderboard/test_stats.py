"""The leaderboard statistics: resampled metrics equal the official scorer, intervals, frontier, ties."""
import numpy as np
import pytest
from sklearn.metrics import f1_score

from benchmark.scoring import ScoringItem, score_task
from benchmark.scoring.classification import REFERENCE_CLASSES, classification_metrics
from leaderboard import stats


def _classification(task, n_items, seed, invalid_share=0.1):
    """Gold labels balanced over the task's classes, answers uniform with some invalid ones."""
    rng = np.random.default_rng(seed)
    classes = REFERENCE_CLASSES[task]
    gold = np.arange(n_items) % len(classes)
    predicted = rng.integers(0, len(classes), n_items)
    predicted[rng.random(n_items) < invalid_share] = -1
    return classes, gold, predicted


@pytest.mark.parametrize("task", ["T2", "T3", "T4"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_macro_f1_equals_the_official_scorer_and_scikit_learn(task, seed):
    classes, gold, predicted = _classification(task, 90, seed)
    sample = stats.ClassificationSample(gold, predicted, len(classes))
    pairs = [(classes[g], classes[p] if p >= 0 else "") for g, p in zip(gold, predicted)]
    official = classification_metrics(pairs, classes)["macro_f1"]
    sklearn = f1_score(
        [g for g, _ in pairs], [p or "invalid" for _, p in pairs], labels=list(classes), average="macro",
        zero_division=0,
    )
    np.testing.assert_allclose(sample.score(), official)
    np.testing.assert_allclose(sample.score(), sklearn)


def test_resampled_macro_f1_equals_the_scorer_on_the_resampled_items():
    classes, gold, predicted = _classification("T2", 60, 3)
    sample = stats.ClassificationSample(gold, predicted, len(classes))
    indices = np.random.default_rng(7).integers(0, 60, size=(5, 60))
    expected = [
        classification_metrics([(classes[gold[i]], classes[predicted[i]] if predicted[i] >= 0 else "")
                                for i in row], classes)["macro_f1"]
        for row in indices
    ]
    np.testing.assert_allclose(sample.resampled(indices), expected)


def test_a_class_never_drawn_in_a_resample_scores_zero_like_the_scorer():
    sample = stats.ClassificationSample([0, 1, 2], [0, 1, 2], 3)
    only_first = np.array([[0, 0, 0]])
    np.testing.assert_allclose(sample.resampled(only_first), [1 / 3])
    assert classification_metrics([("clean", "clean")] * 3, REFERENCE_CLASSES["T2"])["macro_f1"] == pytest.approx(1 / 3)


def _t5_items(seed, n_records=60, n_subjects=7):
    """Records of several subjects with seizures found, missed and invented."""
    rng = np.random.default_rng(seed)
    items = []
    for index in range(n_records):
        subject = f"chb{index % n_subjects + 1:02d}"
        gold = [[1000.0, 1060.0]] if index % 2 == 0 else []
        roll = rng.random()
        predicted = (
            [{"onset_sec": 995.0, "offset_sec": 1070.0}] if gold and roll < 0.5 else []
        ) + ([{"onset_sec": 2000.0, "offset_sec": 2050.0}] if roll > 0.7 else [])
        items.append(ScoringItem(
            scenario_id=f"c1_seizure_{subject}_{index:02d}", gold={"seizure_events": gold},
            prediction={"seizure_events": predicted}, duration_sec=3600.0,
        ))
    return items


def _event_sample(per_item):
    subjects = sorted({row["subject"] for row in per_item})
    return stats.EventSample(
        subject=[subjects.index(row["subject"]) for row in per_item],
        tp=[row["tp"] for row in per_item], fp=[row["fp"] for row in per_item], fn=[row["fn"] for row in per_item],
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_event_f1_equals_the_official_subject_average(seed):
    summary = score_task("T5", _t5_items(seed))
    assert _event_sample(summary["per_item"]).score() == pytest.approx(summary["metrics"]["event_f1"])


def test_resampled_event_f1_equals_the_scorer_on_the_resampled_records():
    items = _t5_items(4)
    sample = _event_sample(score_task("T5", items)["per_item"])
    indices = np.random.default_rng(11).integers(0, len(items), size=(6, len(items)))
    # The scorer needs distinct scenario ids; a record drawn twice is renamed, its subject kept.
    expected = [
        score_task("T5", [
            ScoringItem(scenario_id=f"{items[i].scenario_id}_{draw}", gold=items[i].gold,
                        prediction=items[i].prediction, duration_sec=3600.0)
            for draw, i in enumerate(row)
        ])["metrics"]["event_f1"]
        for row in indices
    ]
    np.testing.assert_allclose(sample.resampled(indices), expected)


def test_event_f1_is_zero_when_no_subject_has_a_defined_score():
    sample = stats.EventSample(subject=[0, 1], tp=[0, 0], fp=[0, 0], fn=[0, 0])
    assert sample.score() == 0.0


def test_mean_sample_is_the_mean_and_resamples_by_index():
    sample = stats.MeanSample([0.0, 1.0, 1.0, 0.5])
    assert sample.score() == pytest.approx(0.625)
    np.testing.assert_allclose(sample.resampled(np.array([[1, 1, 1, 1], [0, 0, 3, 3]])), [1.0, 0.25])


@pytest.mark.parametrize("bad", [
    lambda: stats.ClassificationSample([0, 1], [0], 2),
    lambda: stats.ClassificationSample([0, 3], [0, 1], 3),
    lambda: stats.ClassificationSample([[0]], [[0]], 1),
    lambda: stats.EventSample(subject=[0, 1], tp=[1], fp=[0, 0], fn=[0, 0]),
    lambda: stats.EventSample(subject=[-1], tp=[1], fp=[0], fn=[0]),
])
def test_samples_reject_inconsistent_arrays(bad):
    with pytest.raises(ValueError):
        bad()


def _run_samples(seed):
    classes, gold, predicted = _classification("T2", 300, seed)
    return [
        stats.MeanSample(np.random.default_rng(seed).random(38) < 0.7),
        stats.ClassificationSample(gold, predicted, len(classes)),
        _event_sample(score_task("T5", _t5_items(seed, n_records=280, n_subjects=24))["per_item"]),
        stats.MeanSample(np.random.default_rng(seed + 1).random(197) * 0.5),
    ]


def test_bootstrap_interval_is_seeded_and_brackets_the_point_estimate():
    samples = _run_samples(0)
    point = np.mean([sample.score() for sample in samples])
    low, high = stats.bootstrap_overall(samples)
    assert low < point < high
    assert high - low < 0.1
    assert stats.bootstrap_overall(samples) == (low, high)
    assert stats.bootstrap_overall(samples, seed=1) != (low, high)


def test_bootstrap_interval_narrows_with_confidence_and_is_a_point_for_constant_scores():
    samples = _run_samples(1)
    low95, high95 = stats.bootstrap_overall(samples)
    low50, high50 = stats.bootstrap_overall(samples, confidence=0.5)
    assert low95 < low50 < high50 < high95
    assert stats.bootstrap_overall([stats.MeanSample([0.4] * 10)]) == pytest.approx((0.4, 0.4))


@pytest.mark.parametrize("kwargs", [{"n_resamples": 0}, {"confidence": 1.0}, {"confidence": 0.0}])
def test_bootstrap_rejects_bad_options(kwargs):
    with pytest.raises(ValueError):
        stats.bootstrap_overall([stats.MeanSample([1.0])], **kwargs)


def test_bootstrap_rejects_no_samples_and_empty_samples():
    with pytest.raises(ValueError):
        stats.bootstrap_overall([])
    with pytest.raises(ValueError):
        stats.bootstrap_overall([stats.MeanSample([])])


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4"])
def test_random_baselines_are_what_the_scorer_gives_uniform_random_answers(task):
    classes = REFERENCE_CLASSES[task]
    rng = np.random.default_rng(0)
    n_items = 120 * len(classes)
    gold = [classes[index % len(classes)] for index in range(n_items)]
    accuracies, macro_f1s = [], []
    for _ in range(200):
        predicted = [classes[index] for index in rng.integers(0, len(classes), n_items)]
        metrics = classification_metrics(list(zip(gold, predicted)), classes)
        accuracies.append(metrics["accuracy"])
        macro_f1s.append(metrics["macro_f1"])
    assert np.mean(accuracies) == pytest.approx(stats.RANDOM_BASELINES[task], abs=0.01)
    assert np.mean(macro_f1s) == pytest.approx(stats.RANDOM_BASELINES[task], abs=0.01)


def test_no_random_baseline_for_the_long_horizon_tasks():
    assert stats.RANDOM_BASELINES["T5"] is None and stats.RANDOM_BASELINES["T6"] is None


@pytest.mark.parametrize("costs, scores, expected", [
    ([1, 2, 3], [0.1, 0.2, 0.3], [True, True, True]),
    ([1, 2, 3], [0.3, 0.2, 0.1], [True, False, False]),
    ([1, 1, 2], [0.2, 0.1, 0.3], [True, False, True]),
    ([1, 1], [0.2, 0.2], [True, True]),
    ([2, 1, None, 3], [0.5, 0.4, 0.9, None], [True, True, False, False]),
    ([], [], []),
])
def test_pareto_frontier_keeps_the_points_nothing_cheaper_and_better_dominates(costs, scores, expected):
    assert stats.pareto_frontier(costs, scores) == expected


def test_pareto_frontier_needs_one_score_per_cost():
    with pytest.raises(ValueError):
        stats.pareto_frontier([1, 2], [0.1])


@pytest.mark.parametrize("intervals, expected", [
    ([(0.5, 0.7), (0.45, 0.65), (0.3, 0.4), (0.35, 0.42)], [1, 1, 2, 2]),
    ([(0.6, 0.7), (0.5, 0.59), (0.45, 0.55)], [1, 2, 2]),
    # overlapping the previous row is not enough: the leader's interval decides
    ([(0.6, 0.7), (0.55, 0.62), (0.5, 0.58)], [1, 1, 2]),
    ([(0.5, 0.5), (0.5, 0.5), (0.4, 0.4)], [1, 1, 2]),
    ([], []),
])
def test_tie_groups_follow_overlap_with_the_group_leader(intervals, expected):
    assert stats.tie_groups(intervals) == expected


def test_tie_groups_reject_reversed_intervals():
    with pytest.raises(ValueError):
        stats.tie_groups([(0.6, 0.5)])


def test_runs_of_one_and_of_several_epochs_are_resampled_on_the_same_instances():
    """Paired resamples: a run whose epochs all equal another run's one epoch gets its distribution exactly."""
    rng = np.random.default_rng(5)
    tasks = [stats.MeanSample(values=rng.random(n)) for n in (38, 300, 188)]
    single = stats.overall_resamples(tasks, n_resamples=200, seed=3)
    repeated = stats.overall_resamples([stats.EpochSample(epochs=(task, task, task)) for task in tasks], n_resamples=200,
                                       seed=3)  # fmt: skip
    mixed = stats.overall_resamples([stats.EpochSample(epochs=(tasks[0], tasks[0])), tasks[1], tasks[2]], n_resamples=200,
                                    seed=3)  # fmt: skip
    np.testing.assert_allclose(repeated, single, rtol=1e-12)
    np.testing.assert_allclose(mixed, single, rtol=1e-12)
