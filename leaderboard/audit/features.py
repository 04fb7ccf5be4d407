"""The shortcut audit's inputs, as pure functions (no Django).

The features one tool call gives, an audited instance, and the folds of the cross-validation.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmark.scoring import ScoringItem

SIGNAL_TASKS = ("T2", "T3", "T4", "T5", "T6")
#: T6 epochs, and the window the T6 rule reads, in seconds.
EPOCH_SEC = 30.0


class AuditError(ValueError):
    """The audit cannot run on these instances (too few per class for the folds, no features, ...)."""


def _leaves(row: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The numbers of a (nested) result row, named by their dotted keys; booleans are not features."""
    leaves = {}
    for key, value in row.items():
        if isinstance(value, Mapping):
            leaves |= _leaves(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            leaves[f"{prefix}{key}"] = float(value)
    return leaves


def _row_unit(row: Mapping[str, Any]) -> str | None:
    """The channel (or left-right pair) a per-channel row describes; None for any other row."""
    if isinstance(row.get("channel"), str):
        return row["channel"]
    if isinstance(row.get("left"), str) and isinstance(row.get("right"), str):
        return f"{row['left']}-{row['right']}"
    return None


def scalar_features(tool_name: str, result: Mapping[str, Any]) -> dict[str, float]:
    """Every scalar of one tool result: top-level numbers, per-channel numbers and their mean and max.

    Parameters
    ----------
    tool_name : str
        The tool that returned ``result``; it prefixes every feature name.
    result : mapping
        A ``tools_app.call_tool`` result. An error result has no features.

    Returns
    -------
    features : dict
        ``{"compute_temporal_features.rms_uv[EEG]": 480.8, "...rms_uv[mean]": ..., "...[max]": ...,
        "get_recording_info.duration_sec": 23.6, ...}``. Lists of per-channel rows (a ``channel``,
        or a ``left``/``right`` pair) give one feature per row and number, nested numbers named by
        their dotted path; other lists (pairwise correlations, the top transients, windows) are
        not scalars of the call and are left out, as are ``_meta`` and the echoed arguments.
    """
    if "error" in result:
        return {}
    features = {f"{tool_name}.{key}": value for key, value in _leaves(
        {key: value for key, value in result.items() if key not in ("_meta", "record_id")}
    ).items()}
    for key, rows in result.items():
        if not isinstance(rows, list):
            continue
        per_name: dict[str, list[float]] = {}
        for row in rows:
            unit = _row_unit(row) if isinstance(row, Mapping) else None
            if unit is None:
                continue
            for name, value in _leaves(row).items():
                features[f"{tool_name}.{name}[{unit}]"] = value
                per_name.setdefault(name, []).append(value)
        for name, values in per_name.items():
            features[f"{tool_name}.{name}[mean]"] = float(np.mean(values))
            features[f"{tool_name}.{name}[max]"] = float(np.max(values))
    return features


def windowed_features(results: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One feature series per (feature, channel) and its mean and max over channels, from windowed calls.

    Parameters
    ----------
    results : sequence of mapping
        ``compute_windowed_features`` results on one recording with one window length (any split
        by channel or time range); error results are skipped.

    Returns
    -------
    starts : ndarray, shape (n_windows,)
        Window starts in seconds, sorted.
    series : dict
        ``{"compute_windowed_features.rms_uv[Fz]": values, "...rms_uv[mean]": ..., "...[max]": ...}``,
        each of shape (n_windows,); NaN where a channel has no value for a window.
    """
    by_channel: dict[str, dict[float, dict[str, float]]] = {}
    for result in results:
        if "error" in result:
            continue
        for channel in result.get("channels") or ():
            windows = by_channel.setdefault(channel["channel"], {})
            for window in channel.get("windows") or ():
                windows[float(window["t_start"])] = {
                    name: float(value) for name, value in window.items()
                    if name not in ("t_start", "t_end") and isinstance(value, (int, float))
                }
    starts = np.array(sorted({start for windows in by_channel.values() for start in windows}), dtype=float)
    index = {start: position for position, start in enumerate(starts)}
    names = sorted({name for windows in by_channel.values() for row in windows.values() for name in row})
    series: dict[str, np.ndarray] = {}
    for name in names:
        matrix = np.full((len(by_channel), len(starts)), np.nan)
        for row_index, (channel, windows) in enumerate(sorted(by_channel.items())):
            for start, row in windows.items():
                matrix[row_index, index[start]] = row.get(name, np.nan)
            series[f"compute_windowed_features.{name}[{channel}]"] = matrix[row_index]
        with np.errstate(all="ignore"):
            present = ~np.isnan(matrix)
            counts = present.sum(axis=0)
            total = np.where(present, matrix, 0.0).sum(axis=0)
            series[f"compute_windowed_features.{name}[mean]"] = np.where(counts > 0, total / np.maximum(counts, 1), np.nan)
            series[f"compute_windowed_features.{name}[max]"] = np.where(
                counts > 0, np.where(present, matrix, -np.inf).max(axis=0), np.nan)
    return starts, series


@dataclass(frozen=True)
class AuditInstance:
    """One instance as the audit sees it.

    Attributes
    ----------
    item : ScoringItem
        What the official scorer needs (the reference included); its prediction is ignored.
    group : str
        The unit a fold keeps whole: the subject (T5), the night (T6), else the instance.
    features : mapping
        T2-T4: scalar features (``scalar_features`` of each tool's call).
    window_starts : ndarray, shape (n_windows,)
        T5/T6: window starts in seconds.
    window_sec : float
        T5/T6: the windows' length in seconds.
    windows : mapping
        T5/T6: feature name -> values per window, shape (n_windows,).
    label : str
        T2-T4: the reference class, as the scorer reads it (``audit_task`` fills it in).
    """

    item: ScoringItem
    group: str
    features: Mapping[str, float] = field(default_factory=dict)
    window_starts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    window_sec: float = 0.0
    windows: Mapping[str, np.ndarray] = field(default_factory=dict)
    label: str = ""


def _check_folds(n_folds: int) -> None:
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
        raise AuditError(f"folds must be an integer of at least 2, got {n_folds!r}")


def feasible_folds(task: str, instances: Sequence[AuditInstance], n_folds: int) -> int:
    """The folds ``task`` can have, at most ``n_folds``: no more than its subjects or nights (T5/T6) or its
    smallest class's instances (T2-T4), so that every fold holds a part of each.

    Raises ``AuditError`` when not even two folds are possible.
    """
    _check_folds(n_folds)
    if task in ("T5", "T6"):
        available, unit = len({instance.group for instance in instances}), "subject(s) or night(s)"
    else:
        counts: dict[str, int] = {}
        for instance in instances:
            counts[instance.label] = counts.get(instance.label, 0) + 1
        available, unit = min(counts.values()), f"instance(s) in its smallest class ({min(counts, key=counts.get)!r})"
    if available < 2:
        raise AuditError(f"{task} has {available} {unit}: cross-validation needs at least 2")
    return min(n_folds, available)


def stratified_folds(labels: Sequence[str], n_folds: int, *, seed: int = 0) -> np.ndarray:
    """Fold index of each instance: every class spread evenly over the folds, in a seeded order.

    Raises ``AuditError`` when a class has fewer instances than there are folds.
    """
    _check_folds(n_folds)
    labels = np.asarray(labels, dtype=object)
    rng = np.random.default_rng(seed)
    folds = np.empty(len(labels), dtype=int)
    offset = 0
    for label in sorted(set(labels)):
        members = np.flatnonzero(labels == label)
        if len(members) < n_folds:
            raise AuditError(
                f"class {label!r} has {len(members)} instance(s), fewer than the {n_folds} folds; "
                "use fewer folds (--folds)")
        members = rng.permutation(members)
        folds[members] = (np.arange(len(members)) + offset) % n_folds
        offset += len(members)
    return folds


def group_folds(groups: Sequence[str], n_folds: int, *, seed: int = 0) -> np.ndarray:
    """Fold index of each instance such that a group (subject, night) lies in one fold only.

    Raises ``AuditError`` when there are fewer groups than folds.
    """
    _check_folds(n_folds)
    names = sorted(set(groups))
    if len(names) < n_folds:
        raise AuditError(f"{len(names)} subject(s) or night(s), fewer than the {n_folds} folds; use fewer folds (--folds)")
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[index]: position % n_folds for position, index in enumerate(order)}
    return np.array([fold_of[group] for group in groups], dtype=int)
