"""The item analysis's figures, each against a computation of its own from the episodes.

Solve rates are counted from the episodes' per-item results; discrimination is ``numpy.corrcoef``
over runs between an instance's correctness (or item score) and the run's task score recomputed
from scratch without it: the mean (T1, T6), scikit-learn's macro-F1 (T2-T4) or the subject-level
Event-F1 summed by hand (T5). The runs are official-size runs of ``tests.leaderboard.boards``.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from sklearn.metrics import f1_score

from benchmark.scoring.classification import REFERENCE_CLASSES
from leaderboard.board.published import import_published
from leaderboard.items import selectors
from leaderboard.summaries.scoring import refresh_run_summary
from runs.models import Episode, Status
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db

SKILLS = (0.3, 0.45, 0.6, 0.75, 0.9)
NOT_COMPARABLE = {"tool_protocol": "text", "max_tokens": 8192, "temperature": 0.7}
# Instances per task whose leave-one-out scores the tests recompute from scratch (all of T1, T4).
CHECKED = 40


def scored_runs(suite, skills=SKILLS, *, name="Model", **options):
    runs = [add_run(suite=suite, model=model_spec(f"{name}-{index}"), skill=skill, seed=index, **options)
            for index, skill in enumerate(skills)]  # fmt: skip
    for run in runs:
        refresh_run_summary(run)
    return runs


def five_runs(*tasks: str):
    """The official suite whose ``tasks`` five runs of increasing skill played, their summaries stored."""
    suite = official_suite(name="items-suite")
    return suite, scored_runs(suite, tasks=tasks)


def episode_results(runs, task: str) -> dict[int, dict[int, dict]]:
    """Run id -> instance id -> the completed episode's per-item result, read from the episodes."""
    results: dict[int, dict[int, dict]] = defaultdict(dict)
    episodes = Episode.objects.filter(run__in=runs, instance__task__code=task, status=Status.COMPLETED)
    for run_id, instance_id, scores in episodes.values_list("run_id", "instance_id", "scores"):
        results[run_id][instance_id] = scores
    return results


def value_of(task: str, result: dict) -> float:
    if task == "T5":
        return 1.0 if result["event_f1"] is None else result["event_f1"]
    if task == "T6":
        return result["macro_f1"]
    return 1.0 if result["correct"] else 0.0


def score_without(task: str, results: dict[int, dict], left_out: int) -> float:
    """A run's task score on every instance but ``left_out``, from scratch."""
    kept = [result for instance, result in results.items() if instance != left_out]
    if task in ("T1", "T6"):
        return float(np.mean([value_of(task, result) for result in kept]))
    if task == "T5":
        counts = defaultdict(lambda: np.zeros(3))
        for result in kept:
            counts[result["subject"]] += [result["tp"], result["fp"], result["fn"]]
        f1 = [2 * tp / (2 * tp + fp + fn) for tp, fp, fn in counts.values() if 2 * tp + fp + fn > 0]
        return float(np.mean(f1)) if f1 else 0.0
    return f1_score([result["gold"] for result in kept], [result["predicted"] for result in kept],
                    labels=list(REFERENCE_CLASSES[task]), average="macro", zero_division=0)


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4"])
def test_a_solve_rate_is_the_share_of_runs_correct_on_the_instance(task):
    suite, runs = five_runs(task)
    results = episode_results(runs, task)
    analysis = selectors.item_analysis(suite=suite.name, task=task)
    assert analysis.runs == "all" and analysis.run_ids == [run.pk for run in runs]
    assert len(analysis.items) == suite.instances.filter(task__code=task).count()
    for row in analysis.items:
        correct = sum(bool(results[run.pk][row["instance"]]["correct"]) for run in runs)
        assert row["n_runs"] == len(runs)
        assert row["solve_rate"] == pytest.approx(correct / len(runs))
        assert "mean_score" not in row


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5", "T6"])
def test_discrimination_is_the_correlation_with_each_runs_score_without_the_instance(task):
    suite, runs = five_runs(task)
    results = episode_results(runs, task)
    rows = {row["instance"]: row for row in selectors.item_analysis(suite=suite.name, task=task).items}
    checked = 0
    for instance in sorted(rows)[:CHECKED]:
        values = [value_of(task, results[run.pk][instance]) for run in runs]
        rest = [score_without(task, results[run.pk], instance) for run in runs]
        row = rows[instance]
        if task in ("T5", "T6"):
            assert row["mean_score"] == pytest.approx(np.mean(values))
        if np.ptp(values) == 0 or np.ptp(rest) == 0:
            assert row["discrimination"] is None
            continue
        assert row["discrimination"] == pytest.approx(np.corrcoef(values, rest)[0, 1], abs=1e-9)
        checked += 1
    assert checked >= 10


def test_more_skilful_runs_make_the_instances_discriminate_positively():
    suite, _ = five_runs("T2")
    values = [row["discrimination"] for row in selectors.item_analysis(suite=suite.name, task="T2").items
              if row["discrimination"] is not None]  # fmt: skip
    assert np.mean(values) > 0.3


@pytest.mark.parametrize("task", ["T1", "T3", "T5"])
def test_instances_every_run_solves_are_flagged(task):
    suite = official_suite(name="flags-suite")
    perfect = scored_runs(suite, skills=(1.0, 1.0, 1.0), tasks=(task,))
    analysis = selectors.item_analysis(suite=suite.name, task=task)
    # T5's seizure-free records answered with silence have no Event-F1: they count as a perfect 1.0.
    assert {row["flag"] for row in analysis.items} == {selectors.SOLVED_BY_ALL}
    assert {row["discrimination"] for row in analysis.items} == {None}
    assert len(analysis.run_ids) == len(perfect)


def test_scores_at_their_maximum_or_at_zero_in_every_run_are_flagged_and_an_instance_none_played_is_blank():
    # T6: a night's macro-F1 is 1 only where the answer is right and the night has every stage.
    runs = [{1: (1.0, 0.5), 2: (0.0, 0.4), 3: (0.5, 0.3)}, {1: (1.0, 0.6), 2: (0.0, 0.2), 3: (0.7, 0.1)}]
    rows = selectors.item_rows("T6", [(1, "r-a"), (2, "r-b"), (3, "r-c"), (4, "r-d")], runs)
    assert rows == [
        {"instance": 1, "record_id": "r-a", "n_runs": 2, "mean_score": 1.0, "discrimination": None,
         "flag": selectors.SOLVED_BY_ALL},
        {"instance": 2, "record_id": "r-b", "n_runs": 2, "mean_score": 0.0, "discrimination": None,
         "flag": selectors.SOLVED_BY_NONE},
        {"instance": 3, "record_id": "r-c", "n_runs": 2, "mean_score": pytest.approx(0.6), "discrimination": None,
         "flag": None},
        {"instance": 4, "record_id": "r-d", "n_runs": 0, "mean_score": None, "discrimination": None, "flag": None},
    ]


def test_the_flags_are_those_of_the_instances_every_run_or_none_got_right_and_filter_the_list():
    suite = official_suite(name="coin-suite")
    runs = scored_runs(suite, skills=(0.5, 0.5, 0.5), tasks=("T3",))
    results = episode_results(runs, "T3")
    analysis = selectors.item_analysis(suite=suite.name, task="T3")
    expected = {}
    for instance in {row["instance"] for row in analysis.items}:
        correct = [results[run.pk][instance]["correct"] for run in runs]
        expected[instance] = (selectors.SOLVED_BY_NONE if not any(correct)
                              else selectors.SOLVED_BY_ALL if all(correct) else None)  # fmt: skip
    assert {row["instance"]: row["flag"] for row in analysis.items} == expected
    for flag in (selectors.SOLVED_BY_ALL, selectors.SOLVED_BY_NONE):
        flagged = sorted(instance for instance, given in expected.items() if given == flag)
        assert flagged, f"the seeds leave no instance {flag}"
        assert sorted(row["instance"] for row in selectors.listed_items(analysis, flag=flag)) == flagged
    either = selectors.listed_items(analysis, flag="flagged")
    assert {row["instance"] for row in either} == {instance for instance, flag in expected.items() if flag}


def test_the_list_is_most_suspect_first_and_sorts_by_score_and_runs_with_missing_figures_last():
    suite, _ = five_runs("T2")
    analysis = selectors.item_analysis(suite=suite.name, task="T2")
    listed = selectors.listed_items(analysis)
    known = [row["discrimination"] for row in listed if row["discrimination"] is not None]
    assert known == sorted(known) and known[0] < known[-1]
    assert all(row["discrimination"] is None for row in listed[len(known):])
    by_rate = [row["solve_rate"] for row in selectors.listed_items(analysis, sort="-score")]
    assert by_rate == sorted(by_rate, reverse=True)
    assert [row["n_runs"] for row in selectors.listed_items(analysis, sort="n_runs")] == [5] * len(listed)
    with pytest.raises(ValueError, match="sort must be one of"):
        selectors.listed_items(analysis, sort="position")


def test_without_figures_the_rows_keep_their_ids_and_runs_and_list_by_record_id():
    suite, _ = five_runs("T3")
    analysis = selectors.item_analysis(suite=suite.name, task="T3")
    hidden = selectors.listed_items(analysis, sort="-score", flag="flagged", figures=False)
    assert len(hidden) == len(analysis.items)
    assert [row["record_id"] for row in hidden] == sorted(row["record_id"] for row in analysis.items)
    assert {(row["solve_rate"], row["discrimination"], row["flag"]) for row in hidden} == {(None, None, None)}
    assert {row["n_runs"] for row in hidden} == {5}


def test_only_a_completed_episode_is_a_play_of_its_instance():
    suite = official_suite(name="partial-suite")
    runs = scored_runs(suite, skills=(0.5, 0.6, 0.7), tasks=("T3",))
    partial = add_run(suite=suite, model=model_spec("Partial"), skill=0.8, tasks=("T3",), complete=0.5, seed=9)
    refresh_run_summary(partial)
    played = set(Episode.objects.filter(run=partial, status=Status.COMPLETED).values_list("instance_id", flat=True))
    analysis = selectors.item_analysis(suite=suite.name, task="T3")
    assert len(analysis.run_ids) == len(runs) + 1
    assert {row["instance"]: row["n_runs"] for row in analysis.items} == {
        row["instance"]: len(runs) + (row["instance"] in played) for row in analysis.items
    }


def test_a_run_of_several_epochs_counts_its_means_over_epochs():
    rows = [
        {"instance": instance, "episode": 10 * epoch + instance, "correct": correct, "epoch": epoch}
        for epoch, answers in enumerate(([1, 0, 1], [1, 1, 0]))
        for instance, correct in zip((1, 2, 3), answers)
    ]
    # Per epoch, the score without an instance is the mean of the other two: epoch 0 gives 0.5, 1, 0.5
    # and epoch 1 gives 0.5, 0.5, 1.
    assert selectors.run_items("T1", rows) == {1: (1.0, 0.5), 2: (0.5, 0.75), 3: (0.5, 0.75)}


def test_the_repeated_runs_of_the_bench_count_gammas_three_epochs_as_their_mean(repeated):
    analysis = selectors.item_analysis(suite=repeated.bench.suite.name, task="T1")
    # Alpha and its warm run answer B (right), Beta and the latest Alpha C; Gamma B, C, B over its epochs.
    [row] = analysis.items
    assert row["n_runs"] == 5
    assert row["solve_rate"] == pytest.approx((1 + 0 + 0 + 1 + 2 / 3) / 5)


def test_on_the_papers_board_only_comparable_runs_count_unless_all_are_asked_for():
    import_published()
    suite = official_suite()  # the paper's board's suite
    comparable = scored_runs(suite, skills=(0.5, 0.7), tasks=("T1",))
    warm = add_run(suite=suite, model=model_spec("Warm"), skill=0.9, tasks=("T1",), settings=NOT_COMPARABLE)
    refresh_run_summary(warm)
    default = selectors.item_analysis(suite=suite.name, task="T1")
    assert (default.runs, default.among_paper_rows, default.n_published) == ("comparable", True, 29)
    assert default.run_ids == [run.pk for run in comparable]
    assert {row["n_runs"] for row in default.items} == {2}
    every = selectors.item_analysis(suite=suite.name, task="T1", runs="all")
    assert every.runs == "all" and every.run_ids == [*default.run_ids, warm.pk]
    assert {row["n_runs"] for row in every.items} == {3}


def test_on_any_other_board_every_run_counts_whatever_is_asked():
    suite, runs = five_runs("T4")
    analysis = selectors.item_analysis(suite=suite.name, task="T4", runs="comparable")
    assert (analysis.runs, analysis.among_paper_rows, analysis.n_published) == ("all", False, 0)
    assert analysis.run_ids == [run.pk for run in runs]


def test_unknown_tasks_and_choices_are_refused():
    suite, _ = five_runs("T1")
    with pytest.raises(ValueError, match="unknown task"):
        selectors.item_analysis(suite=suite.name, task="T7")
    with pytest.raises(ValueError, match="runs must be one of"):
        selectors.item_analysis(suite=suite.name, task="T1", runs="some")
