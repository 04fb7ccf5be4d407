"""Task summaries and Overall, with the official completeness rule.

``score_task`` turns the items of one task (reference, prediction and the little
context scoring needs) into the official summary: the metrics under their official
names, whether the summary is official, and per-item details. A summary is
official only when it covers exactly the task's instances once each, all of them
completed (and, for T5, 140 seizure-positive and 140 seizure-free records).
Partial summaries are still scored, and say why they are not official.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.scoring.classification import (
    REFERENCE_CLASSES,
    classification_metrics,
    normalise_class_label,
    normalise_option_letter,
)
from benchmark.scoring.hypnogram import HypnogramItem, score_hypnogram_task
from benchmark.scoring.seizure import SeizureItem, score_seizure_task

TASK_IDS = ("T1", "T2", "T3", "T4", "T5", "T6")
EXPECTED_COUNTS = {"T1": 38, "T2": 300, "T3": 188, "T4": 69, "T5": 280, "T6": 197}
T5_EXPECTED_PER_CLASS = 140
PRIMARY_METRIC = {
    "T1": "accuracy", "T2": "macro_f1", "T3": "macro_f1",
    "T4": "macro_f1", "T5": "event_f1", "T6": "macro_f1",
}  # fmt: skip
SECONDARY_METRICS = {
    "T1": (), "T2": ("accuracy",), "T3": ("accuracy",),
    "T4": ("accuracy",), "T5": ("dice_s",), "T6": ("cohen_kappa",),
}  # fmt: skip
SUMMARY_SCHEMA = "eegagentbench/official-task-summary/v1"
BENCHMARK_SCHEMA = "eegagentbench/official-benchmark-summary/v1"
OVERALL_DEFINITION = (
    "Unweighted mean of T1 accuracy, T2-T4 Macro-F1, T5 subject-averaged Event-F1, and T6 Macro-F1"
)


@dataclass(frozen=True)
class ScoringItem:
    """One instance to score.

    Attributes
    ----------
    scenario_id : str
        The release's scenario id (T5 reads the CHB-MIT subject from it).
    gold : mapping
        The answer key's ``gold`` object.
    prediction : object
        The final answer as submitted (a dict), or None when there is none.
    submitted : bool
        Whether a result exists for the instance at all.
    completed : bool
        Whether the episode ended normally (an infrastructure failure did not).
    options : mapping, optional
        T1 option texts ``{"A": ..., "D": ...}``.
    duration_sec : float, optional
        T5 record duration in seconds.
    n_epochs : int, optional
        T6 number of 30-s epochs.
    """

    scenario_id: str
    gold: Mapping[str, Any]
    prediction: Any = None
    submitted: bool = True
    completed: bool = True
    options: Mapping[str, str] | None = None
    duration_sec: float | None = None
    n_epochs: int | None = None


def _field(prediction: Any, key: str) -> Any:
    return prediction.get(key) if isinstance(prediction, Mapping) else None


def _score_t1(items: Sequence[ScoringItem]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    golds = [str(item.gold.get("answer", "")).strip().upper() for item in items]
    predicted = [normalise_option_letter(_field(i.prediction, "answer"), i.options) for i in items]
    result = classification_metrics(list(zip(golds, predicted)), REFERENCE_CLASSES["T1"])
    metrics = {k: result[k] for k in ("accuracy", "invalid_predictions", "confusion")}
    return metrics, _classification_items(items, golds, predicted)


def _score_labels(task_id: str, items: Sequence[ScoringItem]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    golds = [normalise_class_label(task_id, str(item.gold.get("label", "")).strip()) for item in items]
    predicted = [
        normalise_class_label(task_id, _field(item.prediction, "classification")) for item in items
    ]
    metrics = classification_metrics(list(zip(golds, predicted)), REFERENCE_CLASSES[task_id])
    return metrics, _classification_items(items, golds, predicted)


def _classification_items(items, golds, predicted) -> list[dict[str, Any]]:
    return [
        {"scenario_id": item.scenario_id, "gold": gold, "predicted": label, "correct": label == gold}
        for item, gold, label in zip(items, golds, predicted)
    ]


def _score_t5(items: Sequence[ScoringItem]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    for item in items:
        if item.duration_sec is None:
            raise ValueError(f"T5 item {item.scenario_id} has no duration_sec")
    return score_seizure_task([
        SeizureItem(
            scenario_id=item.scenario_id,
            duration_sec=item.duration_sec,
            gold_events=item.gold.get("seizure_events", []),
            predicted_events=_field(item.prediction, "seizure_events") or [],
        )
        for item in items
    ])


def _score_t6(items: Sequence[ScoringItem]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return score_hypnogram_task([
        HypnogramItem(
            scenario_id=item.scenario_id,
            gold=item.gold,
            prediction=item.prediction,
            n_epochs=item.n_epochs if item.n_epochs is not None
            else len(item.gold.get("epoch_labels_aasm") or []),
        )
        for item in items
    ])


def completeness(
    task_id: str,
    items: Sequence[ScoringItem],
    *,
    extra: int = 0,
    n_positive: int | None = None,
) -> tuple[dict[str, int], list[str]]:
    """Coverage counts of a task and the reasons its summary is not official (none if it is).

    Parameters
    ----------
    task_id : str
        ``"T1"`` ... ``"T6"``.
    items : sequence of ScoringItem
        The task's instances, one each.
    extra : int
        Results that name no instance of the task.
    n_positive : int, optional
        T5 only: the number of seizure-positive records among the items.
    """
    expected = EXPECTED_COUNTS[task_id]
    ids = [item.scenario_id for item in items]
    counts = {
        "expected": expected,
        "completed": sum(item.submitted and item.completed for item in items),
        "missing": sum(not item.submitted for item in items),
        "extra": extra,
        "noncompleted": sum(item.submitted and not item.completed for item in items),
    }
    reasons = []
    if len(ids) != expected:
        reasons.append(f"{task_id} requires {expected} scenarios, found {len(ids)}")
    if len(set(ids)) != len(ids):
        reasons.append(f"{task_id} scenarios contain duplicate IDs")
    if counts["missing"] or counts["extra"] or counts["noncompleted"]:
        reasons.append(
            f"{task_id} result is incomplete: missing={counts['missing']}, "
            f"extra={counts['extra']}, noncompleted={counts['noncompleted']}"
        )
    if task_id == "T5" and n_positive is not None:
        n_negative = len(ids) - n_positive
        if (n_positive, n_negative) != (T5_EXPECTED_PER_CLASS, T5_EXPECTED_PER_CLASS):
            reasons.append(
                f"T5 requires {T5_EXPECTED_PER_CLASS} positive and {T5_EXPECTED_PER_CLASS} "
                f"negative records, found {n_positive}/{n_negative}"
            )
    return counts, reasons


_SCORERS = {
    "T1": _score_t1,
    "T2": lambda items: _score_labels("T2", items),
    "T3": lambda items: _score_labels("T3", items),
    "T4": lambda items: _score_labels("T4", items),
    "T5": _score_t5,
    "T6": _score_t6,
}


def score_task(task_id: str, items: Sequence[ScoringItem], *, extra: int = 0) -> dict[str, Any]:
    """Official summary of one task.

    Parameters
    ----------
    task_id : str
        ``"T1"`` ... ``"T6"``.
    items : sequence of ScoringItem
        Every instance of the task that is being scored, once each; an instance
        without a result has ``submitted=False`` and scores an empty prediction.
    extra : int
        Results that name no instance of the task (they make the summary unofficial).

    Returns
    -------
    summary : dict
        ``schema``, ``task_id``, ``official``, ``reasons`` (why not official),
        ``n_items``, ``primary_metric``, ``primary_score``, ``completeness``,
        ``metrics`` (official names) and ``per_item``.
    """
    if task_id not in _SCORERS:
        raise ValueError(f"unknown task {task_id!r}; expected one of {', '.join(TASK_IDS)}")
    if not items:
        raise ValueError(f"{task_id} has no items to score")
    metrics, per_item = _SCORERS[task_id](items)
    counts, reasons = completeness(task_id, items, extra=extra, n_positive=metrics.get("n_positive"))
    primary = PRIMARY_METRIC[task_id]
    return {
        "schema": SUMMARY_SCHEMA,
        "task_id": task_id,
        "official": not reasons,
        "reasons": reasons,
        "n_items": len(items),
        "primary_metric": primary,
        "primary_score": metrics[primary],
        "completeness": counts,
        "metrics": metrics,
        "per_item": per_item,
    }


def overall(summaries: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The Overall score: the unweighted mean of the six primary scores.

    Returns None unless all six task summaries are present and official.
    """
    if sorted(summaries) != list(TASK_IDS):
        return None
    if not all(summary.get("official") is True for summary in summaries.values()):
        return None
    return sum(float(summaries[task]["primary_score"]) for task in TASK_IDS) / len(TASK_IDS)


def benchmark_summary(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The official benchmark summary, or ``{"official": false, "error"}`` when incomplete."""
    value = overall(summaries)
    if value is None:
        return {
            "schema": BENCHMARK_SCHEMA,
            "official": False,
            "error": "Overall requires six official complete task summaries",
        }
    return {
        "schema": BENCHMARK_SCHEMA,
        "official": True,
        "overall": value,
        "primary_scores": {task: float(summaries[task]["primary_score"]) for task in TASK_IDS},
        "definition": OVERALL_DEFINITION,
    }
