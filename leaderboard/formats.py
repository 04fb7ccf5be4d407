"""How the site writes a metric's name, a score and a seizure record's counts: one table and one format for pages,
templates and charts."""
from __future__ import annotations

METRIC_NAMES = {
    "accuracy": "Acc.",
    "macro_f1": "Macro-F1",
    "event_f1": "Event-F1",
    "dice_s": "Dice-S",
    "cohen_kappa": "κ",
    "sensitivity": "Sensitivity",
    "precision": "Precision",
    "fp_per_24h": "FP/24h",
    "miss_rate": "Miss rate",
    "over_alarm_rate": "Over-alarm rate",
    "invalid_predictions": "Invalid answers",
}


def metric_name(key: str) -> str:
    """A metric's short display name (``macro_f1`` → ``Macro-F1``)."""
    return METRIC_NAMES.get(key, str(key).replace("_", " "))


def score(value, places: int = 3) -> str:
    """A score with ``places`` decimals; an en dash when there is none."""
    if value is None or value == "":
        return "–"
    try:
        return f"{float(value):.{int(places)}f}"
    except (TypeError, ValueError):
        return str(value)


def seizure_counts_text(scores: dict) -> str:
    """A T5 record's per-item result in words: the seizures found and the false alarms.

    It is what the scorer gives for a seizure-free record answered with silence, whose Event-F1
    is undefined: "no events, no false alarms".
    """
    tp, fp, fn = (int(scores.get(key) or 0) for key in ("tp", "fp", "fn"))
    alarms = f"{fp} false alarm{'s' if fp != 1 else ''}"
    if tp + fn == 0:
        return "no events, no false alarms" if fp == 0 else f"no seizure, {alarms}"
    return f"{tp} of {tp + fn} seizure{'s' if tp + fn != 1 else ''} found, {alarms}"


def signed(value, places: int = 3) -> str:
    """A difference with its sign (``+0.120``, ``−0.045``, ``0.000``); an en dash when there is none."""
    if value is None:
        return "–"
    shown = f"{abs(float(value)):.{int(places)}f}"
    if float(shown) == 0:
        return shown
    return ("+" if value > 0 else "−") + shown


def p_value(value) -> str:
    """A p-value as papers print it: three decimals, ``< 0.001`` below; an en dash when there is none."""
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{float(value):.3f}"
