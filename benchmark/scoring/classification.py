"""Label normalisation and pooled classification metrics for T1-T4.

The rules are those of the official EEGAgentBench scorer: T1 recovers an option
letter from free text, T2 maps artifact aliases, T3/T4 match labels exactly up to
case. Unrecoverable answers become the invalid label ``""``; they stay in the
denominator as a miss of their gold class and never add an averaged class.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

INVALID = "__invalid__"

REFERENCE_CLASSES: dict[str, tuple[str, ...]] = {
    "T1": ("A", "B", "C", "D"),
    "T2": ("clean", "ocular_contaminated", "muscle_contaminated"),
    "T3": ("normal", "epileptic"),
    "T4": ("AD", "FTD", "HC"),
}

_OPTION_LETTERS = REFERENCE_CLASSES["T1"]
_BARE_LETTER = re.compile(r"\(?\s*([A-Da-d])\s*\)?\.?")
_LEADING_LETTER = re.compile(r"\s*(?:option\s*)?\(?([A-Da-d])\)?[\.\):\s]")
_STANDALONE_LETTER = re.compile(r"\b([A-D])\b")

ARTIFACT_ALIASES: dict[str, str] = {
    "clean": "clean",
    "normal": "clean",
    "no_artifact": "clean",
    "none": "clean",
    "ocular_contaminated": "ocular_contaminated",
    "ocular": "ocular_contaminated",
    "eog": "ocular_contaminated",
    "eye": "ocular_contaminated",
    "eye_movement": "ocular_contaminated",
    "eyeblink": "ocular_contaminated",
    "blink": "ocular_contaminated",
    "muscle_contaminated": "muscle_contaminated",
    "muscle": "muscle_contaminated",
    "emg": "muscle_contaminated",
    "myogenic": "muscle_contaminated",
}


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", str(text).strip().casefold())


def normalise_option_letter(raw: Any, options: Mapping[str, str] | None = None) -> str:
    """Recover the chosen option letter of a T1 answer.

    Parameters
    ----------
    raw : object
        The ``answer`` field of the final answer, usually a string.
    options : mapping of str to str, optional
        The question's options ``{"A": text, ...}``, used to match an answer that
        restates an option's text.

    Returns
    -------
    letter : str
        ``"A"``-``"D"``, or ``""`` when no letter can be recovered.

    Notes
    -----
    Tried in order: a bare or parenthesised letter (``B``, ``(b)``, ``B.``); a
    leading token (``B)``, ``B:``, ``Option C``); an exact, then contained, match
    of the casefolded text against the options; the first standalone A-D letter of
    the upper-cased text. The last rule is the official scorer's, so the article
    "a" in a sentence reads as ``A``.
    """
    if raw is None:
        return ""
    text = str(raw).strip()
    if not text:
        return ""
    match = _BARE_LETTER.fullmatch(text) or _LEADING_LETTER.match(text)
    if match:
        return match.group(1).upper()
    if options:
        collapsed = _collapse(text)
        present = [letter for letter in _OPTION_LETTERS if letter in options]
        for letter in present:
            if _collapse(options[letter]) == collapsed:
                return letter
        for letter in present:
            option_text = _collapse(options[letter])
            if option_text and (option_text in collapsed or collapsed in option_text):
                return letter
    match = _STANDALONE_LETTER.search(text.upper())
    return match.group(1) if match else ""


def normalise_artifact_label(raw: Any) -> str:
    """Map a T2 answer to its canonical artifact label.

    Returns ``"clean"``, ``"ocular_contaminated"``, ``"muscle_contaminated"`` or
    ``""``. Punctuation becomes a separator, runs of spaces and hyphens become one
    underscore; then an alias, a canonical label contained in the text, or any
    underscore-separated part that is an alias decides.
    """
    if raw is None:
        return ""
    text = str(raw).strip().lower()
    if not text:
        return ""
    token = re.sub(r"[\s\-]+", "_", re.sub(r"[^\w\s\-]", " ", text)).strip("_")
    if token in ARTIFACT_ALIASES:
        return ARTIFACT_ALIASES[token]
    for label in REFERENCE_CLASSES["T2"]:
        if label in token:
            return label
    for part in token.split("_"):
        if part in ARTIFACT_ALIASES:
            return ARTIFACT_ALIASES[part]
    return ""


def normalise_class_label(task_id: str, raw: Any) -> str:
    """Canonical label of a T2, T3 or T4 answer, or ``""`` when invalid.

    T3 and T4 accept a reference label up to case and surrounding whitespace only.
    """
    if task_id == "T2":
        return normalise_artifact_label(raw)
    text = "" if raw is None else str(raw).strip()
    by_casefold = {label.casefold(): label for label in REFERENCE_CLASSES[task_id]}
    return by_casefold.get(text.casefold(), "")


def classification_metrics(
    pairs: Sequence[tuple[str, str]], classes: Sequence[str]
) -> dict[str, Any]:
    """Accuracy and macro-F1 pooled over items, with invalid answers as misses.

    Parameters
    ----------
    pairs : sequence of (gold, predicted) str
        Canonical labels; a predicted label outside ``classes`` is invalid.
    classes : sequence of str
        The task's fixed reference classes; macro-F1 averages over all of them.

    Returns
    -------
    metrics : dict
        ``accuracy`` and ``macro_f1`` (higher is better, best 1.0), the number of
        ``invalid_predictions``, ``per_class`` precision/recall/F1/support, and the
        ``confusion`` matrix (gold rows, predicted columns plus ``__invalid__``).
        F1 of a class is 2TP / (2TP + FP + FN), or 0 when that is 0/0.
    """
    if not pairs:
        raise ValueError("classification metrics need at least one item")
    valid = set(classes)
    columns = (*classes, INVALID)
    confusion = {gold: dict.fromkeys(columns, 0) for gold in classes}
    for gold, predicted in pairs:
        if gold not in valid:
            raise ValueError(f"gold label {gold!r} is not one of the classes {list(classes)}")
        confusion[gold][predicted if predicted in valid else INVALID] += 1

    per_class = {}
    for label in classes:
        tp = confusion[label][label]
        fp = sum(confusion[other][label] for other in classes if other != label)
        fn = sum(count for column, count in confusion[label].items() if column != label)
        per_class[label] = {
            "precision": tp / (tp + fp) if tp + fp else 0.0,
            "recall": tp / (tp + fn) if tp + fn else 0.0,
            "f1": 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0,
            "support": tp + fn,
        }
    correct = sum(confusion[label][label] for label in classes)
    return {
        "accuracy": correct / len(pairs),
        "macro_f1": sum(per_class[label]["f1"] for label in classes) / len(classes),
        "invalid_predictions": sum(confusion[gold][INVALID] for gold in classes),
        "per_class": per_class,
        "confusion": confusion,
    }
