"""T5 seizure detection: SzCORE-style Event-F1, Dice@seizure, miss and over-alarm rates.

Everything works on intervals in seconds, never on per-sample masks, so a
23-hour record costs no more than a 1-minute one. The processing order and
parameters are those of the official scorer (paper Table 3): clip, quantise to
0.1 s, merge gaps shorter than 90 s, split events longer than 300 s, extend the
references by 30 s before and 60 s after, and match on any positive overlap.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

Interval = tuple[float, float]

SUBJECT_PATTERN = re.compile(r"(?:^|[/_])(chb\d+)[a-z]?(?:[/_]|$)", re.IGNORECASE)

_ONSET_KEYS = ("onset_sec", "onset", "start_sec", "start")
_OFFSET_KEYS = ("offset_sec", "offset", "end_sec", "end")
# The Dice path of the official scorer knows fewer key spellings than its
# Event-F1 path; both are kept so the same answers give the same numbers.
_DICE_ONSET_KEYS = ("onset_sec", "onset", "start")
_DICE_OFFSET_KEYS = ("offset_sec", "offset", "end")


@dataclass(frozen=True)
class EventScoringParameters:
    """Parameters of the SzCORE event scoring (seconds, and Hz for the resolution)."""

    tolerance_start_sec: float = 30.0
    tolerance_end_sec: float = 60.0
    min_overlap_sec: float = 0.0
    min_duration_between_events_sec: float = 90.0
    max_event_duration_sec: float = 300.0
    sampling_frequency_hz: float = 10.0


DEFAULT_PARAMETERS = EventScoringParameters()


def subject_of(scenario_id: str) -> str:
    """CHB-MIT subject of a scenario id: ``c1_seizure_chb17b_63`` gives ``chb17``."""
    match = SUBJECT_PATTERN.search(scenario_id)
    if not match:
        raise ValueError(f"cannot recover the CHB-MIT subject from scenario id {scenario_id!r}")
    return match.group(1).lower()


def _first_present(event: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in event:
            return event[key]
    return None


def _event_bounds(event: Any, onset_keys: Sequence[str], offset_keys: Sequence[str]):
    if type(event) is list or isinstance(event, tuple):
        if len(event) >= 2:
            return event[0], event[1]
    elif isinstance(event, Mapping):
        return _first_present(event, onset_keys), _first_present(event, offset_keys)
    raise ValueError("unsupported interval format")


def _as_event_list(raw_events: Any) -> list[Any]:
    """The items of a ``seizure_events`` value; anything but a list holds no events."""
    return list(raw_events) if isinstance(raw_events, (list, tuple)) else []


def parse_events(
    raw_events: Any,
    duration_sec: float,
    *,
    sampling_frequency_hz: float = DEFAULT_PARAMETERS.sampling_frequency_hz,
) -> tuple[list[Interval], list[str]]:
    """Parse, clip and quantise events for Event-F1.

    Parameters
    ----------
    raw_events : list
        Events as objects (``onset_sec``/``onset``/``start_sec``/``start`` and
        ``offset_sec``/``offset``/``end_sec``/``end``) or ``[onset, offset]`` pairs.
    duration_sec : float
        Record duration in seconds, finite and positive.
    sampling_frequency_hz : float
        Resolution of the quantisation (10 Hz: 0.1 s).

    Returns
    -------
    intervals : list of (float, float)
        Sorted, non-empty intervals in seconds inside ``[0, duration]``.
    warnings : list of str
        One line per event swapped or dropped (non-finite, unparseable, empty).
    """
    if not math.isfinite(duration_sec) or duration_sec <= 0:
        raise ValueError("duration_sec must be finite and positive")
    quantum = 1.0 / sampling_frequency_hz
    quantised_duration = round(duration_sec / quantum) * quantum
    intervals: list[Interval] = []
    warnings: list[str] = []
    for index, event in enumerate(_as_event_list(raw_events)):
        try:
            onset_raw, offset_raw = _event_bounds(event, _ONSET_KEYS, _OFFSET_KEYS)
            onset, offset = float(onset_raw), float(offset_raw)
            if not (math.isfinite(onset) and math.isfinite(offset)):
                raise ValueError("non-finite boundary")
            if offset < onset:
                onset, offset = offset, onset
                warnings.append(f"event[{index}] boundaries swapped")
            # clip, quantise, clip again (the conditionals are min/max, written out for speed)
            onset = round((0.0 if onset < 0.0 else duration_sec if onset > duration_sec else onset) / quantum) * quantum
            offset = round((0.0 if offset < 0.0 else duration_sec if offset > duration_sec else offset) / quantum) * quantum
            if onset > quantised_duration:
                onset = quantised_duration
            if offset > quantised_duration:
                offset = quantised_duration
            if offset <= onset:
                raise ValueError("empty interval after clipping and quantization")
            intervals.append((onset, offset))
        except (TypeError, ValueError, OverflowError) as exc:
            warnings.append(f"event[{index}] dropped: {exc}")
    intervals.sort()
    return intervals, warnings


def merge_close_events(intervals: Iterable[Interval], min_gap_sec: float) -> list[Interval]:
    """Merge events whose gap is strictly shorter than ``min_gap_sec``."""
    merged: list[Interval] = []
    for onset, offset in sorted(intervals):
        if merged and onset - merged[-1][1] < min_gap_sec:
            merged[-1] = (merged[-1][0], max(merged[-1][1], offset))
        else:
            merged.append((onset, offset))
    return merged


def split_long_events(intervals: Iterable[Interval], max_duration_sec: float) -> list[Interval]:
    """Cut events longer than ``max_duration_sec`` into consecutive pieces of that length."""
    if max_duration_sec <= 0:
        raise ValueError("max_duration_sec must be positive")
    pieces: list[Interval] = []
    for onset, offset in intervals:
        cursor = onset
        while offset - cursor > max_duration_sec:
            pieces.append((cursor, cursor + max_duration_sec))
            cursor += max_duration_sec
        if offset > cursor:
            pieces.append((cursor, offset))
    return pieces


def preprocess_events(
    intervals: Iterable[Interval], parameters: EventScoringParameters = DEFAULT_PARAMETERS
) -> list[Interval]:
    """Merge close events, then split long ones (applied to references and predictions)."""
    merged = merge_close_events(intervals, parameters.min_duration_between_events_sec)
    return split_long_events(merged, parameters.max_event_duration_sec)


def event_counts_metrics(tp: int, fp: int, fn: int, duration_sec: float) -> dict[str, float | None]:
    """Sensitivity, precision, Event-F1 and FP/24h from event counts (None when undefined)."""
    f1_denominator = 2 * tp + fp + fn
    return {
        "sensitivity": tp / (tp + fn) if tp + fn else None,
        "precision": tp / (tp + fp) if tp + fp else None,
        "event_f1": 2 * tp / f1_denominator if f1_denominator else None,
        "fp_per_24h": fp / (duration_sec / 86400.0) if duration_sec > 0 else None,
    }


def score_record_events(
    gold_events: Any,
    predicted_events: Any,
    duration_sec: float,
    parameters: EventScoringParameters = DEFAULT_PARAMETERS,
) -> dict[str, Any]:
    """SzCORE-style event counts of one record, matched many-to-many.

    TP counts the processed references that at least one processed prediction
    overlaps (for a positive duration) once extended to [onset - 30, offset + 60];
    FN the other references; FP the predictions that overlap no extended reference.

    Raises
    ------
    ValueError
        When the reference itself holds an event that had to be swapped or dropped.
    """
    gold, gold_warnings = parse_events(
        gold_events, duration_sec, sampling_frequency_hz=parameters.sampling_frequency_hz
    )
    if gold_warnings:
        raise ValueError("invalid reference events: " + "; ".join(gold_warnings))
    predicted, prediction_warnings = parse_events(
        predicted_events, duration_sec, sampling_frequency_hz=parameters.sampling_frequency_hz
    )
    processed_gold = preprocess_events(gold, parameters)
    processed_predicted = preprocess_events(predicted, parameters)
    extended_gold = [
        (
            max(0.0, onset - parameters.tolerance_start_sec),
            min(duration_sec, offset + parameters.tolerance_end_sec),
        )
        for onset, offset in processed_gold
    ]
    tp, matched = 0, [False] * len(processed_predicted)
    min_overlap = parameters.min_overlap_sec
    for ref_onset, ref_offset in extended_gold:
        detected = False
        for index, (onset, offset) in enumerate(processed_predicted):
            overlap = (offset if offset < ref_offset else ref_offset) - (onset if onset > ref_onset else ref_onset)
            if overlap > min_overlap:
                detected = matched[index] = True
        tp += detected
    fp = matched.count(False)
    fn = len(processed_gold) - tp
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "duration_sec": duration_sec,
        "n_gold_processed": len(processed_gold),
        "n_pred_processed": len(processed_predicted),
        "prediction_warnings": prediction_warnings,
        **event_counts_metrics(tp, fp, fn, duration_sec),
    }


def _mean(values: Iterable[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


def _population_std(values: Iterable[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    mean = sum(finite) / len(finite)
    return math.sqrt(sum((v - mean) ** 2 for v in finite) / len(finite))


def aggregate_by_subject(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sum counts and durations per subject, then average the subjects' metrics.

    Parameters
    ----------
    records : iterable of mapping
        Each with ``subject``, ``tp``, ``fp``, ``fn`` and ``duration_sec``.

    Returns
    -------
    aggregate : dict
        ``subject_average`` (mean, population std and count over the subjects whose
        metric is defined, for sensitivity, precision, event_f1 and fp_per_24h),
        ``pooled`` (all counts summed) and ``subjects`` (one entry per subject).
    """
    totals: dict[str, dict[str, float]] = defaultdict(
        lambda: {"tp": 0, "fp": 0, "fn": 0, "duration_sec": 0.0}
    )
    for record in records:
        counts = totals[str(record["subject"])]
        for key in ("tp", "fp", "fn"):
            counts[key] += int(record[key])
        counts["duration_sec"] += float(record["duration_sec"])

    subjects = {
        subject: {
            **counts,
            **event_counts_metrics(counts["tp"], counts["fp"], counts["fn"], counts["duration_sec"]),
        }
        for subject, counts in sorted(totals.items())
    }
    average: dict[str, Any] = {"n_subjects": len(subjects)}
    for name in ("sensitivity", "precision", "event_f1", "fp_per_24h"):
        values = [subject[name] for subject in subjects.values()]
        average[name] = _mean(values)
        average[f"{name}_std"] = _population_std(values)
        average[f"{name}_n"] = sum(value is not None for value in values)

    pooled = {key: sum(c[key] for c in totals.values()) for key in ("tp", "fp", "fn")}
    pooled["duration_sec"] = sum(c["duration_sec"] for c in totals.values())
    pooled.update(event_counts_metrics(pooled["tp"], pooled["fp"], pooled["fn"], pooled["duration_sec"]))
    return {"subject_average": average, "pooled": pooled, "subjects": subjects}


def parse_raw_events(raw_events: Any) -> list[Interval]:
    """Raw intervals for Dice@seizure and the miss and over-alarm rates.

    No clipping, quantisation, merging or tolerance: each parseable event becomes
    ``(min, max)`` of its two bounds. Events with a non-finite bound are dropped
    (the official scorer keeps them and its Dice turns NaN; see compatibility.md).
    """
    intervals = []
    for event in _as_event_list(raw_events):
        try:
            onset_raw, offset_raw = _event_bounds(event, _DICE_ONSET_KEYS, _DICE_OFFSET_KEYS)
            onset, offset = float(onset_raw), float(offset_raw)
        except (TypeError, ValueError, OverflowError):
            continue
        if math.isfinite(onset) and math.isfinite(offset):
            intervals.append((onset, offset) if onset <= offset else (offset, onset))
    return intervals


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Disjoint sorted union; intervals that overlap or touch are merged."""
    merged: list[Interval] = []
    for onset, offset in sorted(intervals):
        if merged and onset <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], offset))
        else:
            merged.append((onset, offset))
    return merged


def _intersection_sec(first: list[Interval], second: list[Interval]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(first) and j < len(second):
        low, high = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if high > low:
            total += high - low
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return total


def temporal_dice(gold: Iterable[Interval], predicted: Iterable[Interval]) -> float:
    """Dice of two interval sets on the time axis: 2|G ∩ P| / (|G| + |P|).

    Returns a value in [0, 1], best 1.0; both sets empty gives 1.0.
    """
    gold_union, predicted_union = union(gold), union(predicted)
    gold_sec = sum(offset - onset for onset, offset in gold_union)
    predicted_sec = sum(offset - onset for onset, offset in predicted_union)
    if gold_sec == 0.0 and predicted_sec == 0.0:
        return 1.0
    return 2.0 * _intersection_sec(gold_union, predicted_union) / (gold_sec + predicted_sec)


def any_touching_overlap(gold: Sequence[Interval], predicted: Sequence[Interval]) -> bool:
    """Whether any prediction overlaps or touches any reference (the miss-rate rule)."""
    return any(p[0] <= g[1] and g[0] <= p[1] for g in gold for p in predicted)


@dataclass(frozen=True)
class SeizureItem:
    """One T5 record to score: its scenario id, duration, reference and prediction."""

    scenario_id: str
    duration_sec: float
    gold_events: Any
    predicted_events: Any


def score_seizure_task(
    items: Sequence[SeizureItem], parameters: EventScoringParameters = DEFAULT_PARAMETERS
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Task-level T5 metrics and per-record details.

    Returns
    -------
    metrics : dict
        ``event_f1`` (subject-averaged; 0.0 when no subject has a defined F1),
        ``dice_s`` (mean over seizure-positive records, None without any),
        ``sensitivity``, ``precision``, ``fp_per_24h`` (subject averages),
        ``miss_rate`` and ``over_alarm_rate`` (None without positives or negatives),
        plus counts, parameters, per-subject and pooled figures.
    per_item : list of dict
        Counts, Dice, miss and over-alarm flags of each record, in input order.
    """
    per_item, dice_values = [], []
    n_missed = n_over_alarm = n_negative = warning_count = 0
    for item in items:
        duration = float(item.duration_sec)
        if not math.isfinite(duration) or duration <= 0:
            raise ValueError(f"invalid duration for {item.scenario_id}: {item.duration_sec!r}")
        record = score_record_events(item.gold_events, item.predicted_events, duration, parameters)
        warning_count += len(record["prediction_warnings"])
        raw_gold = parse_raw_events(item.gold_events)
        raw_predicted = parse_raw_events(item.predicted_events)
        entry = {"scenario_id": item.scenario_id, "subject": subject_of(item.scenario_id), **record}
        if raw_gold:
            entry["dice"] = temporal_dice(raw_gold, raw_predicted)
            entry["missed"] = not any_touching_overlap(raw_gold, raw_predicted)
            dice_values.append(entry["dice"])
            n_missed += entry["missed"]
        else:
            entry["over_alarm"] = bool(raw_predicted)
            n_negative += 1
            n_over_alarm += entry["over_alarm"]
        per_item.append(entry)

    aggregate = aggregate_by_subject(per_item)
    average = aggregate["subject_average"]
    n_positive = len(dice_values)
    metrics = {
        "event_f1": average["event_f1"] if average["event_f1"] is not None else 0.0,
        "dice_s": sum(dice_values) / n_positive if n_positive else None,
        "sensitivity": average["sensitivity"],
        "precision": average["precision"],
        "fp_per_24h": average["fp_per_24h"],
        "miss_rate": n_missed / n_positive if n_positive else None,
        "over_alarm_rate": n_over_alarm / n_negative if n_negative else None,
        "n_subjects": average["n_subjects"],
        "n_positive": n_positive,
        "n_negative": n_negative,
        "prediction_warning_count": warning_count,
        "subject_average": average,
        "subjects": aggregate["subjects"],
        "pooled": aggregate["pooled"],
        "event_parameters": asdict(parameters),
    }
    return metrics, per_item
