"""The one-feature shortcut audit of a suite: gather each instance's tool outputs, audit, store.

The features are what an agent could see: every tool is run through the episode loop's own tool
runner (``runs.episode.opening.record_tools``) on the instance's recording, with default arguments, and each
tool once per instance (T5/T6: the windowed features, split into calls that fit the output budget).
The cross-validation itself is pure (``leaderboard.audit.rules``); the result of each task is stored
as a ``ShortcutAudit`` row, which the task pages and the leaderboard show as a reference.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from benchmark.models import Instance, Suite
from benchmark.scoring.seizure import subject_of
from leaderboard.audit import features as audit_features
from leaderboard.audit import rules
from leaderboard.models import ShortcutAudit
from leaderboard.summaries.scoring import task_sample
from runs.episode.opening import allowed_tool_names, record_tools
from runs.episode.scoring import scoring_item

WINDOWED = "compute_windowed_features"
#: The windowed tool's output budget (``tools_app.budget``) is met with this margin when calls are split.
BUDGET_MARGIN = 0.9

Progress = Callable[[str], None]


def _tool_runner(instance: Instance) -> Callable[[str, dict], dict]:
    """Run a tool on ``instance``'s recording as an episode would, under the instance's record id."""
    run = record_tools(instance.record_id)
    return lambda tool_name, arguments: run(instance, tool_name, {"record_id": instance.record_id, **arguments})


def _scalar_features(instance: Instance) -> dict[str, float]:
    """T2-T4: the scalars of one default call of every tool the instance allows but the windowed one (a series)."""
    call = _tool_runner(instance)
    features: dict[str, float] = {}
    for tool_name in allowed_tool_names(instance):
        if tool_name != WINDOWED:
            features |= audit_features.scalar_features(tool_name, call(tool_name, {}))
    return features


def _windowed_results(instance: Instance, *, window_sec: float) -> list[dict]:
    """Every channel's windowed features (default features, ``window_sec`` windows) over the whole recording.

    Each channel is asked for in one call; when that is over the output budget, in time chunks of
    whole windows sized from the estimate the refusal gives.
    """
    call = _tool_runner(instance)
    info = call("get_recording_info", {})
    duration = float(info.get("duration_sec") or instance.duration_sec or 0.0)
    options = {"window_sec": window_sec}
    results = []
    for channel in info.get("channel_names") or ():
        whole = call(WINDOWED, {"channels": [channel], **options})
        if "budget_tokens" not in whole:
            results.append(whole)
            continue
        per_call = max(1, math.floor(whole["n_windows"] * whole["budget_tokens"] * BUDGET_MARGIN
                                     / whole["estimated_tokens"]))
        span = per_call * window_sec
        start = 0.0
        while start < duration:
            results.append(call(WINDOWED, {"channels": [channel], **options, "tmin": start,
                                           "tmax": min(start + span, duration)}))
            start += span
    return results


def _group(instance: Instance) -> str:
    """The unit a fold keeps whole: T5 the subject, T6 the night, else the instance."""
    if instance.task.code != "T5":
        return instance.scenario_id
    try:
        return subject_of(instance.scenario_id)  # the subject the official scorer aggregates by
    except ValueError as exc:
        raise audit_features.AuditError(str(exc)) from None


def audit_instance(instance: Instance) -> audit_features.AuditInstance:
    """One instance with the features its task's rules read."""
    item = scoring_item(instance, None)
    group = _group(instance)
    task = instance.task.code
    if task in ("T5", "T6"):
        window_sec = audit_features.EPOCH_SEC if task == "T6" else rules.T5_WINDOW_SEC
        starts, series = audit_features.windowed_features(_windowed_results(instance, window_sec=window_sec))
        return audit_features.AuditInstance(item=item, group=group, window_starts=starts, window_sec=window_sec,
                                       windows=series)
    return audit_features.AuditInstance(item=item, group=group, features=_scalar_features(instance))


def audit_suite(
    *, suite: Suite, tasks: Sequence[str], folds: int = 5, seed: int = 0, progress: Progress = lambda line: None
) -> dict[str, Any]:
    """Audit ``tasks`` of ``suite``, store each task's result (replacing an earlier one) and return the JSON.

    Returns ``{"tasks": {"T3": {"primary_metric", "best": {"feature", "rule", "score", "ci"},
    "candidates": [...], "folds"}}}``; ``folds`` is at most ``folds``, fewer for a task whose
    subjects, nights or smallest class cannot fill them. Raises ``audit_features.AuditError``
    (nothing stored) when a task cannot be audited.
    """
    audits: dict[str, dict[str, Any]] = {}
    for task in tasks:
        instances = list(
            Instance.objects.filter(suite=suite, task__code=task)
            .select_related("task", "suite__release").order_by("position", "id")
        )
        if not instances:
            raise audit_features.AuditError(f"suite {suite.name!r} has no {task} instances")
        progress(f"{task}: reading the tools' outputs on {len(instances)} instances")
        audited = []
        for number, instance in enumerate(instances, start=1):
            audited.append(audit_instance(instance))
            if number % 25 == 0 or number == len(instances):
                progress(f"{task}: {number}/{len(instances)} instances")
        result = rules.audit_task(task, audited, n_folds=folds, seed=seed,
                                      sample_of=functools.partial(task_sample, task), progress=progress)
        if result.n_folds < folds:
            progress(f"{task}: {result.n_folds} folds, as many as its subjects, nights or smallest class allow")
        progress(f"{task}: best of {result.n_candidates} candidates: {result.best.feature} "
                 f"({result.primary_metric} {result.best.score:.3f})")
        audits[task] = result.to_json()
    store_audits(suite=suite, audits=audits, seed=seed)
    return {"tasks": audits}


@transaction.atomic
def store_audits(*, suite: Suite, audits: dict[str, dict[str, Any]], seed: int) -> list[ShortcutAudit]:
    """Replace the stored audit of each task in ``audits`` on ``suite`` (each with the folds it used), all or none."""
    ShortcutAudit.objects.filter(suite=suite, task__in=list(audits)).delete()
    return [ShortcutAudit.objects.create(suite=suite, task=task, result=result, folds=result["folds"], seed=seed)
            for task, result in audits.items()]
