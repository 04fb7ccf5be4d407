"""The one-feature shortcut audit, as pure functions (no Django): could one tool output do as well?

For each signal task, every scalar a single default-argument call of one tool returns (per channel,
and its mean and max over channels) is a candidate feature. A one-feature rule is fitted on it by
cross-validation over the suite's instances, and every instance is predicted by the rule of the
fold that held it out; the predictions are scored with the official scorer. The rules:

- T2-T4: ordered thresholds (one threshold for two classes, ``k - 1`` for ``k`` classes, the class
  order fitted too), and for three classes or more the nearest class mean;
- T5: a threshold on one windowed feature (``compute_windowed_features``, its default 5-s windows),
  the windows beyond it merged into seizure events;
- T6: per-epoch nearest class mean of one windowed feature over 30-s windows.

Folds are stratified by class for T2-T4, and keep a subject (T5) or a night (T6) whole. Selecting
the best of many candidates on the same folds flatters it a little: the audit says what a trivial
rule *can* reach on these instances, a reference for the models, not a model itself.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from benchmark.scoring import PRIMARY_METRIC, score_task
from benchmark.scoring.classification import REFERENCE_CLASSES, normalise_class_label
from benchmark.scoring.hypnogram import STAGES, canonical_stage
from leaderboard import stats
from leaderboard.audit.features import (
    SIGNAL_TASKS,
    AuditError,
    AuditInstance,
    feasible_folds,
    group_folds,
    stratified_folds,
)

#: Candidates reported beside the best one.
N_RUNNERS_UP = 4
#: The window the T5 rule reads, in seconds: the windowed tool's default.
T5_WINDOW_SEC = 5.0
#: Quantile levels of the training windows' values tried as T5 thresholds (above, then below).
T5_LEVELS_ABOVE = (0.5, 0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.998, 0.999, 0.9995)
T5_LEVELS_BELOW = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)

SampleOf = Callable[[list[dict[str, Any]]], "stats.TaskSample"]



# ── rules ────────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Fit:
    """One fold's fitted rule: the instances it was fitted on and its parameters."""

    fold: int
    train: np.ndarray
    params: Any


class Rule:
    """A one-feature rule: ``fit`` on training instances, ``predict`` an instance, ``describe`` a fit."""

    name = ""

    def applies(self, values: Sequence[Any]) -> bool:
        return True

    def fit(self, values: list[Any], instances: list[AuditInstance], classes: tuple[str, ...]) -> Any:
        raise NotImplementedError

    def predict(self, params: Any, value: Any, instance: AuditInstance) -> dict:
        raise NotImplementedError

    def describe(self, params: Any, feature: str) -> str:
        raise NotImplementedError


def _ordered(values: np.ndarray) -> np.ndarray:
    """Missing values (NaN: a channel with no transient, say) sort below every value."""
    return np.where(np.isnan(values), -np.inf, values)


def _classification(label: str) -> dict:
    return {"action": "final_answer", "classification": label, "findings": []}


class OrderedThresholds(Rule):
    """``k - 1`` thresholds cut the feature's axis into ``k`` intervals, one class each (a class may get none).

    The class order and the cuts maximise the pooled macro-F1 on the training instances (every cut
    between two distinct training values is tried, for every order), each cut halfway between values.
    """

    name = "ordered thresholds"

    def fit(self, values, instances, classes):
        values = _ordered(np.asarray(values, dtype=float))
        codes = np.array([classes.index(instance.label) for instance in instances])
        unique, inverse = np.unique(values, return_inverse=True)
        k, m = len(classes), len(unique)
        counts = np.zeros((m, k))
        np.add.at(counts, (inverse, codes), 1)
        prefix = np.vstack([np.zeros(k), np.cumsum(counts, axis=0)])  # (m + 1, k)
        gold = counts.sum(axis=0)
        cuts = np.meshgrid(*[np.arange(m + 1)] * (k - 1), indexing="ij")
        valid = np.ones(cuts[0].shape, dtype=bool)
        for lower, upper in itertools.pairwise(cuts):
            valid &= lower <= upper
        bounds = [0, *cuts, m]
        best_score, best = -1.0, None
        for order in itertools.permutations(range(k)):
            total = np.zeros(cuts[0].shape)
            for segment, code in enumerate(order):
                inside = prefix[bounds[segment + 1]] - prefix[bounds[segment]]
                denominator = inside.sum(axis=-1) + gold[code]
                total += np.divide(2 * inside[..., code], denominator, out=np.zeros(total.shape),
                                   where=denominator > 0)
            total = np.where(valid, total, -1.0)
            position = np.unravel_index(int(np.argmax(total)), total.shape)
            if total[position] > best_score + 1e-12:
                best_score = float(total[position])
                best = (tuple(classes[code] for code in order),
                        tuple(_midpoint(unique, int(cut[position])) for cut in cuts))
        return best

    def predict(self, params, value, instance):
        order, cuts = params
        position = int(np.searchsorted(np.asarray(cuts), _ordered(np.array([value], dtype=float))[0], side="right"))
        return _classification(order[position])

    def describe(self, params, feature):
        order, cuts = params
        bounds = [-math.inf, *cuts, math.inf]
        parts = []
        for label, low, high in zip(order, bounds, bounds[1:]):
            if low == high:
                continue
            if math.isinf(low) and math.isinf(high):
                parts.append(f"{label} always")
            elif math.isinf(low):
                parts.append(f"{label} below {_number(high)}")
            elif math.isinf(high):
                parts.append(f"{label} from {_number(low)}")
            else:
                parts.append(f"{label} from {_number(low)} to {_number(high)}")
        rule = "threshold" if len(order) == 2 else self.name
        return f"{rule} on {feature}: " + ", ".join(parts)


def _midpoint(unique: np.ndarray, cut: int) -> float:
    if cut == 0:
        return -math.inf
    if cut == len(unique):
        return math.inf
    low, high = unique[cut - 1], unique[cut]
    return float(high) if math.isinf(low) else float((low + high) / 2)


def _number(value: float) -> str:
    return f"{value:.4g}"


class NearestClassMean(Rule):
    """Each class is its training instances' mean of the feature; an instance takes the nearest class."""

    name = "nearest class mean"

    def applies(self, values):
        return bool(np.all(np.isfinite(np.asarray(values, dtype=float))))

    def fit(self, values, instances, classes):
        values = np.asarray(values, dtype=float)
        labels = np.array([instance.label for instance in instances], dtype=object)
        return {label: float(values[labels == label].mean()) for label in classes if np.any(labels == label)}

    def predict(self, params, value, instance):
        return _classification(min(params, key=lambda label: abs(params[label] - value)))

    def describe(self, params, feature):
        means = ", ".join(f"{label} {_number(mean)}" for label, mean in params.items())
        return f"{self.name} on {feature}: {means}"


def _events(active: np.ndarray, starts: np.ndarray, window_sec: float) -> list[dict[str, float]]:
    """Consecutive active windows merged into events ``{"onset_sec", "offset_sec"}``."""
    events = []
    onset = None
    for position, on in enumerate(active):
        if on and onset is None:
            onset = starts[position]
        if onset is not None and (not on or position == len(active) - 1 or
                                  starts[position + 1] - starts[position] > window_sec + 1e-6):
            end = starts[position] + window_sec if on else starts[position - 1] + window_sec
            events.append({"onset_sec": float(onset), "offset_sec": float(end)})
            onset = None
    return events


class WindowThreshold(Rule):
    """T5: windows whose feature is above (or below) a threshold are seizure; adjacent ones merge into events.

    The threshold is the quantile of the training windows' values (levels ``T5_LEVELS_*``) whose
    events give the best Event-F1 on the training records, by the official scorer.
    """

    name = "window threshold"

    def fit(self, values, instances, classes):
        pooled = np.concatenate([series[np.isfinite(series)] for series in values]) if values else np.zeros(0)
        if not len(pooled):
            return ("above", math.inf)
        candidates = [("above", float(np.quantile(pooled, level))) for level in T5_LEVELS_ABOVE]
        candidates += [("below", float(np.quantile(pooled, level))) for level in T5_LEVELS_BELOW]
        best_score, best = -1.0, candidates[0]
        for params in dict.fromkeys(candidates):
            items = [replace(instance.item, prediction=self.predict(params, series, instance))
                     for series, instance in zip(values, instances)]
            score = score_task("T5", items)["primary_score"]
            if score > best_score + 1e-12:
                best_score, best = score, params
        return best

    def predict(self, params, value, instance):
        direction, threshold = params
        series = np.asarray(value, dtype=float)
        with np.errstate(invalid="ignore"):
            active = series > threshold if direction == "above" else series < threshold
        return {"action": "final_answer",
                "seizure_events": _events(active & np.isfinite(series), instance.window_starts, instance.window_sec)}

    def describe(self, params, feature):
        direction, threshold = params
        return f"{self.name} on {feature}: seizure where {'>' if direction == 'above' else '<'} {_number(threshold)}"


class EpochNearestMean(Rule):
    """T6: each stage is its training epochs' mean of the feature; an epoch takes the nearest stage."""

    name = "per-epoch nearest class mean"

    def fit(self, values, instances, classes):
        sums = dict.fromkeys(STAGES, 0.0)
        counts = dict.fromkeys(STAGES, 0)
        for series, instance in zip(values, instances):
            for value, stage in zip(series, _stages(instance)):
                if stage in sums and np.isfinite(value):
                    sums[stage] += float(value)
                    counts[stage] += 1
        return {stage: sums[stage] / counts[stage] for stage in STAGES if counts[stage]}

    def predict(self, params, value, instance):
        n_epochs = instance.item.n_epochs or len(value)
        series = np.asarray(value, dtype=float)[:n_epochs]
        means = np.array(list(params.values()))
        names = list(params)
        fill = float(np.nanmedian(series)) if np.any(np.isfinite(series)) else 0.0
        series = np.where(np.isfinite(series), series, fill)
        labels = [names[int(np.argmin(np.abs(means - v)))] for v in series]
        labels += [labels[-1] if labels else names[0]] * (n_epochs - len(labels))
        return _hypnogram(labels)

    def describe(self, params, feature):
        means = ", ".join(f"{stage} {_number(mean)}" for stage, mean in params.items())
        return f"{self.name} on {feature}: {means}"


def _stages(instance: AuditInstance) -> list[str | None]:
    return [canonical_stage(label) for label in instance.item.gold.get("epoch_labels_aasm") or []]


def _hypnogram(labels: list[str]) -> dict:
    """A T6 final answer from per-epoch stages: the run-length encoding and the architecture."""
    runs = []
    for position, stage in enumerate(labels):
        if runs and runs[-1]["stage"] == stage:
            runs[-1]["end_epoch"] = position
        else:
            runs.append({"start_epoch": position, "end_epoch": position, "stage": stage})
    n = max(len(labels), 1)
    return {"action": "final_answer", "hypnogram_rle": runs, "architecture": {
        "REM_pct": labels.count("REM") / n, "N3_pct": labels.count("N3") / n,
        "sleep_efficiency": sum(stage != "W" for stage in labels) / n}}


def rules_for(task: str) -> tuple[Rule, ...]:
    """The rules the audit fits for ``task``."""
    if task == "T5":
        return (WindowThreshold(),)
    if task == "T6":
        return (EpochNearestMean(),)
    if len(REFERENCE_CLASSES[task]) > 2:
        return (OrderedThresholds(), NearestClassMean())
    return (OrderedThresholds(),)


# ── cross-validation ─────────────────────────────────────────────────────────────────────────


@dataclass
class CandidateResult:
    """One (feature, rule) candidate cross-validated: its score, the fold fits and the predictions."""

    feature: str
    rule: Rule
    score: float
    predictions: list[dict]
    fits: list[Fit]
    predicted_by: np.ndarray
    per_item: list[dict]
    description: str = ""
    ci: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "rule": self.description, "score": self.score,
                "ci": list(self.ci) if self.ci else None}


@dataclass
class TaskAudit:
    """A task's audit: the candidates best first (the best one and ``N_RUNNERS_UP`` more) and the folds."""

    task: str
    primary_metric: str
    folds: np.ndarray
    ranked: list[CandidateResult]
    n_candidates: int

    @property
    def n_folds(self) -> int:
        return int(self.folds.max()) + 1

    @property
    def best(self) -> CandidateResult:
        return self.ranked[0]

    def to_json(self) -> dict[str, Any]:
        return {"primary_metric": self.primary_metric, "best": self.best.to_json(),
                "candidates": [candidate.to_json() for candidate in self.ranked[1:]], "folds": self.n_folds}


def _feature_values(task: str, instances: Sequence[AuditInstance]) -> dict[str, list[Any]]:
    """Each candidate feature's value per instance (T5/T6: a series per instance), each distinct feature once.

    T5/T6 keep the series every instance has. For T2-T4 a feature stays when at least one instance
    has it (the others count as missing) and it varies, so that a transient summary absent where
    nothing was detected still competes.
    """
    values: dict[str, list[Any]] = {}
    seen: set[bytes] = set()

    def add(name: str, column: list[np.ndarray] | np.ndarray) -> None:
        # One name per distinct feature: a one-channel recording's [mean] and [max] are its channel.
        key = b"|".join(np.asarray(part, dtype=float).tobytes() for part in column)
        if key not in seen:
            seen.add(key)
            values[name] = list(column)

    if task in ("T5", "T6"):
        for name in sorted(set.intersection(*(set(instance.windows) for instance in instances))):
            add(name, [np.asarray(instance.windows[name], dtype=float) for instance in instances])
        return values
    for name in sorted(set().union(*(instance.features for instance in instances))):
        column = np.array([instance.features.get(name, np.nan) for instance in instances], dtype=float)
        finite = column[np.isfinite(column)]
        if len(finite) and (np.ptp(finite) > 0 or len(finite) < len(column)):
            add(name, column)
    return values


def audit_task(
    task: str,
    instances: Sequence[AuditInstance],
    *,
    n_folds: int = 5,
    seed: int = 0,
    sample_of: SampleOf,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    progress: Callable[[str], None] = lambda message: None,
) -> TaskAudit:
    """Cross-validate every one-feature rule of ``task`` on ``instances`` and rank them by the official score.

    Parameters
    ----------
    task : str
        ``"T2"`` ... ``"T6"``.
    instances : sequence of AuditInstance
        The suite's instances of the task, with their features.
    n_folds : int
        Number of cross-validation folds (at least 2); fewer when the task's subjects, nights or
        smallest class cannot fill them (``feasible_folds``).
    seed : int
        Seed of the fold assignment and of the bootstrap.
    sample_of : callable
        The scorer's per-item rows of a task -> the ``leaderboard.stats`` sample the bootstrap resamples.
    n_resamples : int
        Bootstrap resamples of each reported interval.
    progress : callable
        Called with a line of progress now and then.

    Returns
    -------
    TaskAudit
        The best candidate and the next ``N_RUNNERS_UP``, each with its cross-validated primary
        score (``score``, higher is better, best 1.0), the 95 % percentile bootstrap interval over
        instances of that score, and its rule refitted on all instances (``description``).

    Raises
    ------
    AuditError
        For a task without signal, too few instances for the folds, or no usable feature.
    """
    if task not in SIGNAL_TASKS:
        raise AuditError(f"the audit covers the signal tasks {', '.join(SIGNAL_TASKS)}, not {task!r}")
    instances = list(instances)
    if not instances:
        raise AuditError(f"{task} has no instances")
    if task in REFERENCE_CLASSES:
        instances = [replace(instance, label=normalise_class_label(task, instance.item.gold.get("label")))
                     for instance in instances]
    n_folds = feasible_folds(task, instances, n_folds)
    if task in ("T5", "T6"):
        folds = group_folds([instance.group for instance in instances], n_folds, seed=seed)
    else:
        folds = stratified_folds([instance.label for instance in instances], n_folds, seed=seed)
    features = _feature_values(task, instances)
    if not features:
        raise AuditError(f"no tool gave {task} a feature that varies across its instances")
    classes = REFERENCE_CLASSES.get(task) or (STAGES if task == "T6" else ())
    rules = rules_for(task)
    results = []
    for number, (feature, values) in enumerate(features.items(), start=1):
        if number % 50 == 0:
            progress(f"{task}: {number}/{len(features)} features")
        for rule in rules:
            if rule.applies(values):
                results.append(_cross_validate(task, feature, values, rule, instances, folds, classes))
    if not results:
        raise AuditError(f"no rule applies to any feature of {task}")
    results.sort(key=lambda result: -result.score)  # stable: ties keep the feature order
    ranked = results[: N_RUNNERS_UP + 1]
    for candidate in ranked:
        params = candidate.rule.fit(features[candidate.feature], instances, classes)
        candidate.description = candidate.rule.describe(params, candidate.feature)
        candidate.ci = stats.bootstrap_overall([sample_of(candidate.per_item)], n_resamples=n_resamples, seed=seed)
    return TaskAudit(task=task, primary_metric=PRIMARY_METRIC[task], folds=folds, ranked=ranked,
                     n_candidates=len(results))


def _cross_validate(task, feature, values, rule, instances, folds, classes) -> CandidateResult:
    predictions: list[dict | None] = [None] * len(instances)
    predicted_by = np.full(len(instances), -1)
    fits = []
    for fold in range(int(folds.max()) + 1):
        train = np.flatnonzero(folds != fold)
        params = rule.fit([values[i] for i in train], [instances[i] for i in train], classes)
        fits.append(Fit(fold=fold, train=train, params=params))
        for i in np.flatnonzero(folds == fold):
            predictions[i] = rule.predict(params, values[i], instances[i])
            predicted_by[i] = fold
    summary = score_task(task, [replace(instance.item, prediction=prediction)
                                for instance, prediction in zip(instances, predictions)])
    return CandidateResult(feature=feature, rule=rule, score=float(summary["primary_score"]),
                           predictions=predictions, fits=fits, predicted_by=predicted_by,
                           per_item=summary["per_item"])
