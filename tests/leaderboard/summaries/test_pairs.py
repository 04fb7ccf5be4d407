"""Two runs compared from their summaries (``leaderboard.summaries.pairs``), each figure against a computation here.

The summaries are made by hand (unsaved ``RunSummary`` objects, as the scorer's rows look), and every
expected figure is computed in this file from the definitions: macro-F1 from counts, Event-F1 per
subject, the exact McNemar test by scipy, permutation p-values by enumerating every swap.
"""
import itertools

import numpy as np
import pytest
from scipy.stats import binomtest

from benchmark.scoring import TASK_IDS
from leaderboard.models import RunSummary
from leaderboard.summaries import pairs


def summary(items: dict, *, overall: float | None = None) -> RunSummary:
    tasks = {code: {"primary_score": None} for code in items}
    return RunSummary(tasks=tasks, items=items, overall=overall)


def t3_rows(predicted: str, *, first: int = 1, gold: str = "NNNNNEEEEEEE") -> list[dict]:
    labels = {"N": "normal", "E": "epileptic", "?": "__invalid__"}
    return [
        {"instance": first + i, "episode": 100 + i, "gold": labels[g], "predicted": labels[p], "correct": g == p}
        for i, (g, p) in enumerate(zip(gold, predicted))
    ]


def macro_f1(gold: list[str], predicted: list[str], classes: tuple[str, ...]) -> float:
    scores = []
    for label in classes:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted))
        scores.append(2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0)
    return sum(scores) / len(scores)


def t6_rows(values: list[float], *, epoch: int | None = None) -> list[dict]:
    rows = [{"instance": 600 + i, "episode": 700 + i, "subject": f"SC{i}", "duration_sec": 600.0, "macro_f1": value,
             "cohen_kappa": value} for i, value in enumerate(values)]  # fmt: skip
    return [{**row, "epoch": epoch} for row in rows] if epoch is not None else rows


def t5_row(instance: int, subject: str, tp: int, fp: int, fn: int) -> dict:
    defined = 2 * tp + fp + fn
    return {"instance": instance, "episode": instance + 1000, "subject": subject, "tp": tp, "fp": fp, "fn": fn,
            "duration_sec": 3600.0, "event_f1": 2 * tp / defined if defined else None}  # fmt: skip


def exact_sign_flip_p(differences: list[float]) -> float:
    """Every swap of A and B on each unit: the two-sided share of mean differences at least as large."""
    observed = abs(np.mean(differences))
    flips = [abs(np.mean([sign * d for sign, d in zip(signs, differences)]))
             for signs in itertools.product((1, -1), repeat=len(differences))]
    return sum(value >= observed - 1e-12 for value in flips) / len(flips)


def test_a_classification_task_is_compared_by_macro_f1_with_the_exact_mcnemar_test():
    gold = "NNNNNEEEEEEE"
    a_predicted, b_predicted = "NNNEENNEEEEE", "NNNNNEEEEE?E"
    a, b = summary({"T3": t3_rows(a_predicted)}), summary({"T3": t3_rows(b_predicted)})
    task = pairs.compare_summaries(a, b).tasks["T3"]
    labels = {"N": "normal", "E": "epileptic", "?": "__invalid__"}

    def f1(predicted):
        return macro_f1([labels[g] for g in gold], [labels[p] for p in predicted], ("normal", "epileptic"))

    assert task.difference == pytest.approx(f1(b_predicted) - f1(a_predicted))
    b_only = sum(g == q and g != p for g, p, q in zip(gold, a_predicted, b_predicted))
    a_only = sum(g == p and g != q for g, p, q in zip(gold, a_predicted, b_predicted))
    assert (task.improved, task.regressed) == (b_only, a_only) == (4, 1)
    assert task.p_value == pytest.approx(binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue)
    assert task.test == "McNemar (exact)" and task.n_units == 12 and task.unit == "instances"
    low, high = task.ci
    assert low <= task.difference <= high


def test_instances_are_listed_regressions_first_and_those_one_run_played_apart():
    a = summary({"T3": t3_rows("NNNEENNEEEEE")})
    b = summary({"T3": t3_rows("NNNNNEEEE?EE")[:10] + t3_rows("N", first=50, gold="N")})
    comparison = pairs.compare_summaries(a, b)
    changes = [pair.change for pair in comparison.instances]
    assert changes == ["regressed"] + ["improved"] * 4 + ["same_right"] * 5
    regressed = comparison.instances[0]
    assert (regressed.instance, regressed.a.correct, regressed.b.correct) == (10, True, False)
    assert (regressed.a.episode, regressed.b.episode) == (109, 109)
    assert sorted((entry["instance"], entry["run"]) for entry in comparison.only) == [(11, "a"), (12, "a"), (50, "b")]
    task = comparison.tasks["T3"]
    assert (task.n_units, task.only_a, task.only_b) == (10, 2, 1)


def test_nights_are_compared_with_an_exact_permutation_test():
    a_values, b_values = [0.5, 0.6, 0.7, 0.4, 0.8, 0.3], [0.6, 0.7, 0.65, 0.6, 0.9, 0.5]
    task = pairs.compare_summaries(summary({"T6": t6_rows(a_values)}), summary({"T6": t6_rows(b_values)})).tasks["T6"]
    differences = [b - a for a, b in zip(a_values, b_values)]
    assert task.difference == pytest.approx(np.mean(differences))
    assert task.p_value == pytest.approx(exact_sign_flip_p(differences))
    assert task.test == "paired permutation (exact)" and task.unit == "nights"
    assert (task.improved, task.regressed) == (5, 1)


def test_t5_is_compared_subject_by_subject():
    # subject s1: two records, s2: one, s3: one seizure-free record on which neither run predicted anything
    a = [t5_row(1, "s1", 1, 0, 1), t5_row(2, "s1", 0, 2, 0), t5_row(3, "s2", 1, 0, 0), t5_row(4, "s3", 0, 0, 0)]
    b = [t5_row(1, "s1", 2, 0, 0), t5_row(2, "s1", 0, 0, 0), t5_row(3, "s2", 0, 1, 1), t5_row(4, "s3", 0, 0, 0)]
    task = pairs.compare_summaries(summary({"T5": a}), summary({"T5": b})).tasks["T5"]

    def event_f1(rows):  # subject-summed counts, averaged over the subjects where F1 is defined
        per_subject = {}
        for row in rows:
            counts = per_subject.setdefault(row["subject"], [0, 0, 0])
            for index, key in enumerate(("tp", "fp", "fn")):
                counts[index] += row[key]
        defined = [2 * tp / (2 * tp + fp + fn) for tp, fp, fn in per_subject.values() if 2 * tp + fp + fn]
        return sum(defined) / len(defined)

    assert task.difference == pytest.approx(event_f1(b) - event_f1(a))  # (1 + 0) / 2 − (1/2 + 1) / 2
    assert (task.n_units, task.unit) == (3, "subjects")
    assert (task.improved, task.regressed) == (1, 1)  # s1 from 0.5 to 1, s2 from 1 to 0, s3 the same


def test_a_run_of_several_epochs_compares_each_instance_by_its_mean():
    a = summary({"T6": t6_rows([0.2, 0.4, 0.6], epoch=0) + t6_rows([0.4, 0.4, 0.2], epoch=1)})
    b = summary({"T6": t6_rows([0.5, 0.4, 0.4])})
    comparison = pairs.compare_summaries(a, b)
    task = comparison.tasks["T6"]
    means_a = [0.3, 0.4, 0.4]
    assert task.difference == pytest.approx(np.mean([0.5, 0.4, 0.4]) - np.mean(means_a))
    assert [pair.a.score for pair in sorted(comparison.instances, key=lambda p: p.instance)] == pytest.approx(means_a)
    assert task.test.startswith("paired permutation (unit means over epochs)")
    assert {pair.instance: pair.change for pair in comparison.instances} == {600: "improved", 601: "same_wrong",
                                                                             602: "same_wrong"}


def six_tasks(shift: float) -> dict:
    t1 = [{"instance": i, "episode": i, "gold": "A", "predicted": "A" if i % 3 else "B", "correct": bool(i % 3)}
          for i in range(1, 10)]
    return {
        "T1": t1,
        "T2": [{**row, "gold": "clean", "predicted": "clean" if row["correct"] else "ocular_contaminated"}
               for row in t1],
        "T3": t3_rows("NNNEENNEEEEE"),
        "T4": [{**row, "gold": "AD", "predicted": "AD" if row["correct"] else "HC"} for row in t1],
        "T5": [t5_row(1, "s1", 1, 0, 1), t5_row(3, "s2", 1, 0, 0)],
        "T6": t6_rows([min(1.0, value + shift) for value in (0.5, 0.6, 0.7, 0.4, 0.8, 0.3)]),
    }


def test_overall_is_compared_over_the_six_tasks_and_only_when_both_runs_have_them():
    a, b = summary(six_tasks(0.0), overall=0.5), summary(six_tasks(0.2), overall=0.6)
    comparison = pairs.compare_summaries(a, b)
    overall = comparison.overall
    assert overall["difference"] == pytest.approx(np.mean([task.difference for task in comparison.tasks.values()]))
    assert overall["difference"] == pytest.approx(comparison.tasks["T6"].difference / 6)
    assert overall["ci"][0] <= overall["difference"] <= overall["ci"][1]
    assert 0 < overall["p_value"] <= 1 and (overall["a"], overall["b"]) == (0.5, 0.6)
    same = pairs.compare_summaries(a, summary(six_tasks(0.0)))
    assert same.overall["difference"] == 0 and same.overall["p_value"] == 1.0 and same.overall["ci"] == (0.0, 0.0)
    assert pairs.overall_p_value(a, a) == 1.0
    partial = {code: rows for code, rows in six_tasks(0.0).items() if code != "T4"}
    assert pairs.compare_summaries(a, summary(partial)).overall is None
    assert pairs.overall_p_value(a, summary(partial)) is None
    assert sorted(pairs.compare_summaries(a, summary(partial)).tasks) == [c for c in TASK_IDS if c != "T4"]


def test_a_run_of_one_epoch_is_tested_against_one_of_several_by_correctness_means():
    single = summary({"T3": t3_rows("NNNEENNEEEEE")})
    repeated = summary({"T3": [{**row, "epoch": 0} for row in t3_rows("NNNNNEEEEEEE")]
                        + [{**row, "epoch": 1} for row in t3_rows("NNNNNEEEEE?E")]})
    task = pairs.compare_summaries(single, repeated).tasks["T3"]
    assert task.test == "paired permutation (unit means over epochs) (exact)"
    # per instance B − A of mean correctness: +1 on the four A got wrong, −0.5 on the one B missed once
    assert task.p_value == pytest.approx(exact_sign_flip_p([1, 1, 1, 1, -0.5]))
    assert (task.improved, task.regressed) == (4, 1)
