"""The official scorer on one episode's answer."""
from __future__ import annotations

from benchmark.scoring import ScoringItem, score_task
from benchmark.scoring.files import epoch_count


def scoring_item(instance, prediction: dict | None, *, submitted: bool = True, completed: bool = True) -> ScoringItem:
    """What the official scorer needs to score ``prediction`` for ``instance``."""
    return ScoringItem(
        scenario_id=instance.scenario_id,
        gold=instance.reference,
        prediction=prediction,
        submitted=submitted,
        completed=completed,
        options=(instance.prompt_input or {}).get("options"),
        duration_sec=instance.recording_sec,
        n_epochs=epoch_count(instance.reference or {}, {"n_epochs_total": instance.epochs_total})
        if instance.task.code == "T6" else None,
    )


def score_prediction(instance, prediction: dict | None) -> dict:
    """The official scorer's per-item result for one prediction.

    The scenario id is left out: it names the label.
    """
    per_item = dict(score_task(instance.task.code, [scoring_item(instance, prediction)])["per_item"][0])
    per_item.pop("scenario_id", None)
    return per_item
