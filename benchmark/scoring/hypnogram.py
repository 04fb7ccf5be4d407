"""T6 sleep staging: tolerant RLE expansion and per-record epoch metrics.

A predicted hypnogram is a run-length encoding; it is expanded to one AASM label
per 30-s epoch exactly as the official scorer does (bad rows skipped, gaps filled
with wake, later rows overwrite earlier ones), then compared with the reference
epoch by epoch. Task scores are means over records, not pools over epochs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STAGES: tuple[str, ...] = ("W", "N1", "N2", "N3", "REM")
FILL_STAGE = "W"
SLEEP_STAGES = frozenset({"N1", "N2", "N3", "REM"})
ARCHITECTURE_FIELDS = ("REM_pct", "N3_pct", "sleep_efficiency")

STAGE_ALIASES: dict[str, str] = {
    "W": "W", "WAKE": "W", "0": "W",
    "N1": "N1", "1": "N1", "S1": "N1", "STAGE 1": "N1",
    "N2": "N2", "2": "N2", "S2": "N2", "STAGE 2": "N2",
    "N3": "N3", "3": "N3", "4": "N3", "S3": "N3", "S4": "N3", "STAGE 3": "N3", "STAGE 4": "N3",
    "R": "REM", "REM": "REM", "STAGE R": "REM",
}  # fmt: skip


def canonical_stage(raw: Any) -> str | None:
    """AASM stage of a label such as ``"rem"``, ``"Stage 2"`` or ``3``; None if unknown."""
    if raw is None:
        return None
    return STAGE_ALIASES.get(str(raw).strip().upper())


@dataclass(frozen=True)
class ExpandedHypnogram:
    """Per-epoch labels from an RLE, with what the expansion had to repair."""

    labels: list[str]
    coverage: float
    n_valid_segments: int
    n_segments_input: int
    warnings: list[str]


def expand_rle(rle: Any, n_epochs: int) -> ExpandedHypnogram:
    """Expand a run-length-encoded hypnogram to ``n_epochs`` stage labels.

    Parameters
    ----------
    rle : list of dict
        Rows ``{"start_epoch", "end_epoch", "stage"}``; epochs are 0-based and both
        ends inclusive. Anything else is tolerated.
    n_epochs : int
        Number of 30-s epochs of the record.

    Returns
    -------
    ExpandedHypnogram
        ``labels`` has exactly ``n_epochs`` entries from ``STAGES``.

    Notes
    -----
    A row is skipped when it is not an object, its bounds are not int-coercible
    (``int(3.7) == 3`` and ``"12"`` are accepted; a missing bound reads as -1),
    its stage is unknown, a bound is negative, or ``end < start``. The end is
    truncated to the last epoch and, as in the official scorer, a start past the
    end is clamped onto the last epoch. Later rows overwrite earlier ones and
    epochs no row covers are wake, so an empty or missing RLE is all wake.
    """
    n_epochs = max(int(n_epochs), 0)
    labels: list[str | None] = [None] * n_epochs
    warnings: list[str] = []
    rows = rle if isinstance(rle, list) else []
    if not isinstance(rle, list):
        warnings.append(f"hypnogram_rle is not a list (got {type(rle).__name__})")
    n_valid = 0
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            warnings.append(f"segment[{index}] is not an object; skipped")
            continue
        try:
            start = int(row.get("start_epoch", -1))
            end = int(row.get("end_epoch", -1))
        except (TypeError, ValueError, OverflowError):
            warnings.append(f"segment[{index}] has non-integer epoch bounds; skipped")
            continue
        stage = canonical_stage(row.get("stage"))
        if stage is None:
            warnings.append(f"segment[{index}] stage {row.get('stage')!r} unrecognised; skipped")
            continue
        if start < 0 or end < 0:
            warnings.append(f"segment[{index}] has a negative bound; skipped")
            continue
        if end < start:
            warnings.append(f"segment[{index}] ends before it starts; skipped")
            continue
        if n_epochs == 0:
            continue
        first, last = min(start, n_epochs - 1), min(end, n_epochs - 1)
        if (first, last) != (start, end):
            warnings.append(f"segment[{index}] truncated to [{first}, {last}]")
        labels[first : last + 1] = [stage] * (last - first + 1)
        n_valid += 1
    covered = sum(label is not None for label in labels)
    return ExpandedHypnogram(
        labels=[label if label is not None else FILL_STAGE for label in labels],
        coverage=covered / n_epochs if n_epochs else 0.0,
        n_valid_segments=n_valid,
        n_segments_input=len(rows),
        warnings=warnings,
    )


def align(predicted: list[str], n_reference: int) -> list[str]:
    """Truncate a predicted sequence to the reference length, or pad it with wake."""
    if len(predicted) >= n_reference:
        return predicted[:n_reference]
    return predicted + [FILL_STAGE] * (n_reference - len(predicted))


def stage_f1(predicted: Sequence[str], reference: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per-stage precision, recall and F1 (2PR / (P + R), 0 when undefined) over ``STAGES``."""
    scores = {}
    for stage in STAGES:
        tp = fp = fn = 0
        for p, g in zip(predicted, reference):
            if p == stage:
                if g == stage:
                    tp += 1
                else:
                    fp += 1
            elif g == stage:
                fn += 1
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        scores[stage] = {"precision": precision, "recall": recall, "f1": f1, "support": tp + fn}
    return scores


def macro_f1(predicted: Sequence[str], reference: Sequence[str]) -> float:
    """Mean F1 over all five stages, in [0, 1], best 1.0.

    A stage absent from both sequences scores 0 rather than being left out, so a
    perfect staging of a night without N3 scores 0.8 (the official rule).
    """
    return sum(s["f1"] for s in stage_f1(predicted, reference).values()) / len(STAGES)


def cohen_kappa(predicted: Sequence[str], reference: Sequence[str]) -> float:
    """Cohen's kappa (po - pe) / (1 - pe) over the five stages, in [-1, 1], best 1.0.

    When chance agreement is 1 (one stage fills both sequences), a perfect match
    scores 1 and anything else 0. An empty pair of sequences scores 0.
    """
    n = min(len(predicted), len(reference))
    if n == 0:
        return 0.0
    po = sum(p == g for p, g in zip(predicted, reference)) / n
    predicted_counts = dict.fromkeys(STAGES, 0)
    reference_counts = dict.fromkeys(STAGES, 0)
    for p, g in zip(predicted[:n], reference[:n]):
        if p in predicted_counts:
            predicted_counts[p] += 1
        if g in reference_counts:
            reference_counts[g] += 1
    pe = sum((predicted_counts[s] / n) * (reference_counts[s] / n) for s in STAGES)
    if abs(1.0 - pe) < 1e-12:
        return 1.0 if po >= 1.0 - 1e-12 else 0.0
    return (po - pe) / (1.0 - pe)


def transition_accuracy(predicted: Sequence[str], reference: Sequence[str]) -> float:
    """Share of consecutive epoch pairs whose two labels both match, in [0, 1]."""
    n = min(len(predicted), len(reference)) - 1
    if n <= 0:
        return 0.0
    return sum(
        predicted[i] == reference[i] and predicted[i + 1] == reference[i + 1] for i in range(n)
    ) / n


def architecture(labels: Sequence[str]) -> dict[str, float]:
    """REM and N3 fractions and sleep efficiency (non-wake fraction) of a labelling."""
    n = len(labels)
    if n == 0:
        return dict.fromkeys(ARCHITECTURE_FIELDS, 0.0)
    return {
        "REM_pct": sum(label == "REM" for label in labels) / n,
        "N3_pct": sum(label == "N3" for label in labels) / n,
        "sleep_efficiency": sum(label in SLEEP_STAGES for label in labels) / n,
    }


def _fraction(value: Any) -> float | None:
    """A reported architecture value as a fraction; a value above 1 is a percentage."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%").strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    if not math.isfinite(value):
        return None
    return value / 100.0 if value > 1.0 else value


def architecture_error(
    reported: Any, predicted_labels: Sequence[str], reference: Mapping[str, Any] | None,
    reference_labels: Sequence[str],
) -> float:
    """Negative mean absolute error of the three architecture figures (best 0.0).

    A figure the agent did not report, or reported unreadably, is derived from its
    expanded hypnogram; the reference figures come from the answer key, or from the
    reference labels when the key has none.
    """
    derived = architecture(predicted_labels)
    reported = reported if isinstance(reported, Mapping) else {}
    if reference:
        gold = {field: float(reference.get(field, 0.0)) for field in ARCHITECTURE_FIELDS}
    else:
        gold = architecture(reference_labels)
    errors = []
    for field in ARCHITECTURE_FIELDS:
        value = _fraction(reported.get(field))
        errors.append(abs((derived[field] if value is None else value) - gold[field]))
    return -sum(errors) / len(errors)


@dataclass(frozen=True)
class HypnogramItem:
    """One T6 night to score."""

    scenario_id: str
    gold: Mapping[str, Any]
    prediction: Any
    n_epochs: int


def score_hypnogram_record(item: HypnogramItem) -> dict[str, Any]:
    """Macro-F1, kappa, transition accuracy and architecture error of one night."""
    reference = list(item.gold.get("epoch_labels_aasm") or [])
    prediction = item.prediction if isinstance(item.prediction, Mapping) else {}
    expanded = expand_rle(prediction.get("hypnogram_rle", []), item.n_epochs)
    predicted = align(expanded.labels, len(reference))
    return {
        "scenario_id": item.scenario_id,
        "macro_f1": macro_f1(predicted, reference),
        "cohen_kappa": cohen_kappa(predicted, reference),
        "transition_accuracy": transition_accuracy(predicted, reference),
        "architecture_error": architecture_error(
            prediction.get("architecture"), predicted, item.gold.get("architecture"), reference
        ),
        "empty_prediction": not prediction.get("hypnogram_rle"),
        "coverage": expanded.coverage,
        "n_epochs": len(reference),
        "rle_warnings": expanded.warnings[:20],
    }


def score_hypnogram_task(items: Sequence[HypnogramItem]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Task-level T6 metrics: per-record macro-F1 and kappa averaged over records."""
    per_item = [score_hypnogram_record(item) for item in items]
    n = len(per_item)
    if n == 0:
        raise ValueError("T6 scoring needs at least one record")
    metrics = {
        "macro_f1": sum(r["macro_f1"] for r in per_item) / n,
        "cohen_kappa": sum(r["cohen_kappa"] for r in per_item) / n,
        "empty_predictions": sum(r["empty_prediction"] for r in per_item),
        "transition_accuracy": sum(r["transition_accuracy"] for r in per_item) / n,
        "architecture_error": sum(r["architecture_error"] for r in per_item) / n,
    }
    return metrics, per_item
