"""A run of several epochs: each epoch scored on its own, then their means, spread and agreement.

An epoch here is one play of every instance of a run (``run_benchmark --epochs K``), not a 30-s
epoch of a night. The official scorer has no notion of them: each epoch's summary is an ordinary
official summary, and this module combines them, as the leaderboard's summary and the run's
report both do. Correctness of one instance in one epoch is the run page's rule
(``answered_correctly``), from which the agreement over epochs (flip rate, pass^k, pass@k) follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchmark.scoring.official import TASK_IDS

# The tasks with one right label per instance, whose repeated runs report pass^k and pass@k.
CLASSIFICATION_TASKS = ("T1", "T2", "T3", "T4")
# A T6 night counts as correct from this macro-F1 on (it has no single right answer); the run page says so.
T6_CORRECT_MACRO_F1 = 0.5


# What makes an answered episode correct, from its per-item scores: per task, conditions that must
# all hold, as (score, comparison, value) with the comparisons "exact" and "gte". T1-T4: the
# reference label. T5: every seizure found and no false alarm (on a seizure-free record, none
# predicted). T6: a night's macro-F1 of at least T6_CORRECT_MACRO_F1, since a night has no single
# right answer. ``is_correct`` reads them, and the leaderboard's episode query is built from them
# (``leaderboard.outcomes``), so the run page's filter and the repeated-run statistics never differ.
CORRECT_WHEN: dict[str, tuple[tuple[str, str, Any], ...]] = {
    **{task: (("correct", "exact", True),) for task in CLASSIFICATION_TASKS},
    "T5": (("fn", "exact", 0), ("fp", "exact", 0)),
    "T6": (("macro_f1", "gte", T6_CORRECT_MACRO_F1),),
}


def _holds(value: Any, comparison: str, wanted: Any) -> bool:
    if comparison == "gte":
        return value is not None and not isinstance(value, bool) and value >= wanted
    return value is wanted if isinstance(wanted, bool) else not isinstance(value, bool) and value == wanted


def is_correct(task: str, scores: Mapping[str, Any]) -> bool:
    """Whether an answered episode is correct, from its per-item scores: the run page's rule (``CORRECT_WHEN``)."""
    conditions = CORRECT_WHEN.get(task, CORRECT_WHEN["T1"])  # a task of one right label, as before the table
    return all(_holds(scores.get(key), comparison, wanted) for key, comparison, wanted in conditions)


def answered_correctly(task: str, scores: Mapping[str, Any], *, completed: bool, answered: bool) -> bool:
    """Whether an episode is correct: it completed, gave a final answer, and ``is_correct`` by ``scores``.

    The scorer scores an episode that failed or ended without an answer as an empty answer, which
    can look right (no seizure predicted on a seizure-free record): such an episode is never correct.
    """
    return completed and answered and is_correct(task, scores)


def epoch_agreement(correct: Sequence[Sequence[bool]]) -> dict[str, float | None]:
    """How often an instance's correctness holds across the epochs of a run.

    Parameters
    ----------
    correct : sequence of sequence of bool, shape (n_instances, n_epochs)
        Whether each instance was answered correctly in each epoch.

    Returns
    -------
    dict
        ``flip_rate``: the share of instances correct in some epochs and not in others;
        ``pass_hat_k`` (pass^k): the share correct in every epoch; ``pass_at_k`` (pass@k): the
        share correct in at least one. Each in [0, 1], None without instances.
    """
    if not correct:
        return {"flip_rate": None, "pass_hat_k": None, "pass_at_k": None}
    n = len(correct)
    every = sum(all(epochs) for epochs in correct)
    some = sum(any(epochs) for epochs in correct)
    return {"flip_rate": (some - every) / n, "pass_hat_k": every / n, "pass_at_k": some / n}


def mean_over_epochs(values: list[Any]) -> Any:
    """Epochs' metrics averaged leaf by leaf, as ``primary_score`` is.

    Numbers are averaged over the epochs that have one (an epoch where a metric is undefined, None,
    is left out; None when no epoch has it); mappings key by key; anything else (lists, text) is
    the first epoch's.
    """
    def is_number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if all(value is None or is_number(value) for value in values):
        known = [float(value) for value in values if value is not None]
        return sum(known) / len(known) if known else None
    if all(isinstance(value, Mapping) for value in values):
        return {key: mean_over_epochs([value.get(key) for value in values]) for key in values[0]}
    return values[0]


def sample_sd(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1), None with fewer than two values."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1))


def combine_epochs(summaries: list[dict], expected: int) -> dict:
    """A task's summary over several epochs, each scored on its own by the official scorer.

    Parameters
    ----------
    summaries : list of dict
        The task's official summary in each epoch (``score_task``), in epoch order.
    expected : int
        The instances of the task each epoch plays.

    Returns
    -------
    dict
        ``official``, ``reasons``, ``primary_metric``, ``primary_score``, ``completeness`` and
        ``metrics``: ``primary_score`` and ``metrics`` are means over epochs; ``official`` holds
        when every epoch's summary is official; ``completeness`` counts episodes, ``expected``
        instances times epochs.
    """
    reasons = list(dict.fromkeys(reason for summary in summaries for reason in summary["reasons"]))
    counts = {
        key: sum(summary["completeness"][key] for summary in summaries)
        for key in summaries[0]["completeness"] if key != "expected"
    }
    return {
        "official": all(summary["official"] for summary in summaries),
        "reasons": reasons,
        "primary_metric": summaries[0]["primary_metric"],
        "primary_score": mean_over_epochs([summary["primary_score"] for summary in summaries]),
        "completeness": {"expected": expected * len(summaries), **counts},
        "metrics": mean_over_epochs([summary["metrics"] for summary in summaries]),
    }


def epochs_entry(task: str, scores: list[float | None], correct: Sequence[Sequence[bool]]) -> dict[str, Any]:
    """A task's ``epochs`` entry: ``k``, per-epoch primary ``scores``, their ``sd``, and ``epoch_agreement``.

    Parameters
    ----------
    task : str
        ``"T1"`` ... ``"T6"``.
    scores : list of float or None
        The task's primary score in each epoch.
    correct : sequence of sequence of bool, shape (n_instances, n_epochs)
        Whether each instance was answered correctly in each epoch (``answered_correctly``).

    Returns
    -------
    dict
        ``k``, ``scores``, ``sd`` (of the scores known) and ``flip_rate``; pass^k and pass@k
        (``pass_hat_k``, ``pass_at_k``) only for the classification tasks, where an instance has
        one right answer.
    """
    agreement = epoch_agreement(correct)
    if task not in CLASSIFICATION_TASKS:
        agreement = {"flip_rate": agreement["flip_rate"]}
    sd = sample_sd([float(score) for score in scores if score is not None])
    return {"k": len(scores), "scores": scores, "sd": sd, **agreement}


def overall_over_epochs(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """Overall of each epoch of a run of several epochs, and their standard deviation.

    Parameters
    ----------
    tasks : mapping
        Each task's summary over epochs with its ``epochs`` entry (``RunSummary.tasks``, or the
        ``tasks`` of a run's report).

    Returns
    -------
    dict or None
        ``{"k", "scores", "sd"}``: the mean of the six primary scores of each epoch (None for an
        epoch with a task unscored) and the sample standard deviation of those known. None when the
        run has one epoch or lacks one of the six tasks. Their mean is the run's Overall.
    """
    if sorted(tasks) != list(TASK_IDS) or any("epochs" not in tasks[code] for code in TASK_IDS):
        return None
    k = tasks[TASK_IDS[0]]["epochs"]["k"]
    scores = []
    for epoch in range(k):
        primaries = [tasks[code]["epochs"]["scores"][epoch] for code in TASK_IDS]
        scores.append(None if None in primaries else sum(primaries) / len(primaries))
    return {"k": k, "scores": scores, "sd": sample_sd([score for score in scores if score is not None])}
