"""Scoring a run into its summary, the leaderboard's one write.

Summaries are written by the runs side only, never by a page: ``episodes_ended(run_id=...)`` is
called wherever episodes end or change (the queue task, ``run_sync``, the environment API, cancel,
resume, rescore, import). It coalesces: while a run plays, at most one refresh per
``SUMMARY_REFRESH_SEC``, and always one once the run has finished, so a finished run's summary is
never left stale. ``refresh_run_summary(run)`` re-scores only the tasks whose episodes changed
since the last summary, each from compact rows fetched once (two queries per task set, one more
for tool calls), with the official scorer, and recomputes Overall and its bootstrap interval.
Pages read summaries through ``current_summary``, which re-scores a stale one in memory and
saves nothing. A run of several epochs (``Run.epochs``) is scored one epoch at a time; its summary
holds their means, and per task an ``epochs`` entry with the spread and agreement over epochs.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, Max, Q, Sum
from django.utils import timezone

from benchmark.models import Instance
from benchmark.scoring import TASK_IDS, ScoringItem, overall, score_task
from benchmark.scoring.classification import REFERENCE_CLASSES
from benchmark.scoring.epochs import answered_correctly, combine_epochs, epochs_entry
from benchmark.scoring.files import epoch_count
from leaderboard import stats
from leaderboard.models import RunSummary
from leaderboard.summaries.kept import Kept, stored_key
from runs.models import Episode, Run, Status, Step

# What each task keeps of the scorer's per-item result, beside the instance and episode ids.
ITEM_KEYS: dict[str, tuple[str, ...]] = {
    "T1": ("gold", "predicted", "correct"),
    "T2": ("gold", "predicted", "correct"),
    "T3": ("gold", "predicted", "correct"),
    "T4": ("gold", "predicted", "correct"),
    "T5": ("subject", "tp", "fp", "fn", "duration_sec", "event_f1", "dice", "missed", "over_alarm"),
    "T6": ("macro_f1", "cohen_kappa"),
}
SUMMARY_KEYS = ("official", "reasons", "primary_metric", "primary_score", "completeness", "metrics")
EMPTY_SIGNATURE = {"episodes": 0, "completed": 0, "failed": 0, "attempts": 0, "last_finished": None}
EPOCH_SEC = 30
# While a run plays, its summary is re-scored at most once per this many seconds (``episodes_ended``).
SUMMARY_REFRESH_SEC = 10.0
# Summaries re-scored in memory for pages, kept per process (``current_summary``).
_rescored = Kept(32)
# Bootstrap distributions of stored summaries' Overall, kept per process (``overall_resamples``).
_resamples = Kept(256)


# ── run summaries ───────────────────────────────────────────────────────────────────────────

def task_signatures(*, run_ids: Iterable[int]) -> dict[int, dict[str, dict[str, Any]]]:
    """The state of each run's episodes per task, in one query: what a summary is valid for.

    Returns ``{run_id: {task_code: {"episodes", "completed", "failed", "attempts",
    "last_finished"}}}``; a finished, retried or reset episode changes its task's signature.
    """
    rows = (
        Episode.objects.filter(run_id__in=list(run_ids))
        .values("run_id", "instance__task__code")
        .annotate(
            episodes=Count("id"),
            completed=Count("id", filter=Q(status=Status.COMPLETED)),
            failed=Count("id", filter=Q(status=Status.FAILED)),
            attempts=Sum("attempt"),
            last_finished=Max("finished_at"),
        )
        .order_by()
    )
    signatures: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        last = row["last_finished"]
        signatures[row["run_id"]][row["instance__task__code"]] = {
            "episodes": row["episodes"],
            "completed": row["completed"],
            "failed": row["failed"],
            "attempts": row["attempts"] or 0,
            "last_finished": last.isoformat() if last else None,
        }
    return signatures


def run_task_codes(run: Run) -> list[str]:
    """The official tasks a run was asked to do, in task order."""
    return [code for code in TASK_IDS if code in set(run.tasks or [])]


def stale_tasks(summary: RunSummary | None, run: Run, signatures: Mapping[str, Mapping]) -> list[str]:
    """The tasks of ``run`` whose stored summary is missing or no longer matches its episodes."""
    stored = summary.tasks if summary is not None else {}
    return [
        code for code in run_task_codes(run)
        if code not in stored or stored[code].get("signature") != signatures.get(code, EMPTY_SIGNATURE)
    ]


def item_score(task: str, item: Mapping[str, Any]) -> float | None:
    """One instance's score from the scorer's per-item result (``Episode.scores`` or a summary row).

    T1-T4: 1.0 when correct, else 0.0. T5: the record's Event-F1, None when it is undefined (a
    seizure-free record on which nothing was predicted). T6: the night's macro-F1. None when the
    item has not been scored.
    """
    if task == "T5":
        return item.get("event_f1")
    if task == "T6":
        value = item.get("macro_f1")
        return None if value is None else float(value)
    if "correct" not in item:
        return None
    return 1.0 if item["correct"] else 0.0


def item_value(task: str, row: Mapping[str, Any]) -> float | None:
    """An instance's item score as comparisons and item analysis read it: ``item_score``, where a T5 record
    whose Event-F1 is undefined (a seizure-free record answered with silence) counts 1.0, a perfect answer,
    when its episode completed (0.0 when it did not); None for a row never scored."""
    value = item_score(task, row)
    if value is None and task == "T5" and "tp" in row:  # undefined: no seizure and none predicted
        return 1.0 if row.get("episode") is not None else 0.0
    return value


def task_sample(task: str, rows: list[Mapping[str, Any]]) -> stats.TaskSample | stats.EpochSample:
    """The compact arrays the bootstrap resamples, from a task's summary rows.

    Rows of a run with several epochs carry their ``epoch``: the sample is then one per epoch, over
    the same instances in the same order, and the bootstrap resamples epochs as well.
    """
    if rows and "epoch" in rows[0]:
        by_epoch: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        for row in rows:
            by_epoch[row["epoch"]].append({key: value for key, value in row.items() if key != "epoch"})
        return stats.EpochSample(tuple(task_sample(task, by_epoch[epoch]) for epoch in sorted(by_epoch)))
    if task == "T1":
        return stats.MeanSample([1.0 if row["correct"] else 0.0 for row in rows])
    if task == "T5":
        subjects = {subject: index for index, subject in enumerate(sorted({row["subject"] for row in rows}))}
        return stats.EventSample(
            subject=[subjects[row["subject"]] for row in rows],
            tp=[row["tp"] for row in rows],
            fp=[row["fp"] for row in rows],
            fn=[row["fn"] for row in rows],
        )
    if task == "T6":
        return stats.MeanSample([row["macro_f1"] for row in rows])
    classes = {label: index for index, label in enumerate(REFERENCE_CLASSES[task])}
    return stats.ClassificationSample(
        gold=[classes[row["gold"]] for row in rows],
        predicted=[classes.get(row["predicted"], -1) for row in rows],
        n_classes=len(classes),
    )


def _instance_rows(run: Run, codes: list[str]) -> list[tuple]:
    """The instances of ``codes`` the run selected (its tasks, at most ``--limit`` each): those it has episodes of.

    A run is scored and judged complete against its own selection, as the official scorer scores
    the results it is given; ``official`` still asks for the task's whole official set (a smaller
    selection says so in its reasons: "T3 requires 188 scenarios, found 2").
    """
    return list(
        Instance.objects.filter(suite_id=run.suite_id, task__code__in=codes, episodes__run=run)
        .distinct()
        .order_by("task__code", "position", "id")
        .values_list(
            "id", "task__code", "scenario_id", "subject", "reference", "prompt_input__options",
            "duration_sec", "metadata__duration_sec", "n_epochs", "metadata__n_epochs_total",
        )
    )


def _tool_calls(run: Run, codes: list[str]) -> dict[int, dict[str, int]]:
    """Tool calls of the run's completed episodes in ``codes``: episode id → tool name → count.

    Native calls answered with a stub (status ``not_executed``) were never run and do not count.
    """
    rows = (
        Step.objects.filter(
            episode__run=run,
            episode__status=Status.COMPLETED,
            episode__instance__task__code__in=codes,
            kind=Step.Kind.TOOL_CALL,
        )
        .exclude(result__status="not_executed")
        .values_list("episode_id", "tool_name")
        .annotate(n=Count("id"))
        .order_by()
    )
    calls: dict[int, dict[str, int]] = defaultdict(dict)
    for episode_id, tool_name, n in rows:
        calls[episode_id][tool_name] = n
    return calls


def _score_epoch(
    code: str, instances: list[tuple], played: Mapping[int, tuple]
) -> tuple[dict, list[dict], list[int]]:
    """Score one epoch of a task: its official summary, its per-instance rows, its completed episodes' ids.

    ``played`` maps an instance id to its episode in this epoch, ``(id, status, prediction, answered)``.
    """
    items, rows, completed_ids = [], [], []
    for (instance_id, _, scenario_id, subject, reference, options, duration, metadata_duration,
         n_epochs, metadata_epochs) in instances:
        episode_id, status, prediction, _ = played.get(instance_id, (None, None, None, False))
        completed = status == Status.COMPLETED
        duration_sec = duration if duration is not None else metadata_duration
        epochs = n_epochs or metadata_epochs
        items.append(
            ScoringItem(
                scenario_id=scenario_id,
                gold=reference or {},
                prediction=prediction if completed else None,
                submitted=status in (Status.COMPLETED, Status.FAILED),
                completed=completed,
                options=options,
                duration_sec=duration_sec,
                # a night is scored over the answer key's epoch count, as the official scorer (and
                # the episode's own score, runs.episode.scoring) takes it
                n_epochs=epoch_count(reference or {}, {"n_epochs_total": epochs}) if code == "T6" else None,
            )
        )
        row = {"instance": instance_id, "episode": episode_id if completed else None}
        if code == "T2":
            row["snr_db"] = (reference or {}).get("snr_db")
        if code == "T6":
            row["subject"] = subject
            row["duration_sec"] = duration_sec if duration_sec is not None else (
                epochs * EPOCH_SEC if epochs else None
            )
        rows.append(row)
        if completed:
            completed_ids.append(episode_id)
    summary = score_task(code, items)
    for row, per_item in zip(rows, summary["per_item"]):
        row.update({key: per_item.get(key) for key in ITEM_KEYS[code]})
    return summary, rows, completed_ids


def _answered_correctly(code: str, episode: tuple | None, row: Mapping[str, Any]) -> bool:
    """Whether ``episode`` (``(id, status, prediction, answered)``, None: not played) is correct by ``row``."""
    if episode is None:
        return False
    _, status, _, answered = episode
    return answered_correctly(code, row, completed=status == Status.COMPLETED, answered=answered)


def _epochs_entry(
    code: str, instances: list[tuple], played: Mapping[int, Mapping[int, tuple]], epochs: list[tuple]
) -> dict[str, Any]:
    """A task's ``epochs`` entry (``epochs_entry``), from each epoch's episodes and summary rows."""
    correct = [
        [_answered_correctly(code, played[epoch].get(instance[0]), epochs[epoch][1][position])
         for epoch in range(len(epochs))]
        for position, instance in enumerate(instances)
    ]  # fmt: skip
    return epochs_entry(code, [summary["primary_score"] for summary, _, _ in epochs], correct)


def _score_tasks(run: Run, codes: list[str]) -> dict[str, tuple[dict, list[dict], dict]]:
    """Score ``codes`` of ``run``: per task, its summary, its per-instance rows and its tool use.

    A run of several epochs scores each epoch on its own; its summary is their mean (see
    ``benchmark.scoring.epochs.combine_epochs``) with an ``epochs`` entry (per-epoch primary
    scores, their standard deviation, and the agreement of the run page's correctness over
    epochs), and its rows, one per instance and epoch, carry their ``epoch``.
    """
    by_task: dict[str, list[tuple]] = defaultdict(list)
    for row in _instance_rows(run, codes):
        by_task[row[1]].append(row)
    played: dict[int, dict[int, tuple]] = defaultdict(dict)
    for instance_id, epoch, episode_id, status, prediction, answered in (
        Episode.objects.filter(run=run, instance__task__code__in=codes)
        .annotate(answered=ExpressionWrapper(Q(final_answer__isnull=False), output_field=BooleanField()))
        .values_list("instance_id", "epoch", "id", "status", "prediction", "answered")
    ):
        played[epoch][instance_id] = (episode_id, status, prediction, answered)
    calls = _tool_calls(run, codes)
    n_epochs = run.epochs
    scored = {}
    for code in codes:
        instances = by_task.get(code, [])
        if not instances:
            continue  # the suite has no instance of this task: nothing to score
        epochs = [_score_epoch(code, instances, played[epoch]) for epoch in range(n_epochs)]
        tool_counts, per_episode = defaultdict(int), []
        for _, _, completed_ids in epochs:
            for episode_id in completed_ids:
                episode_calls = calls.get(episode_id, {})
                for tool, n in episode_calls.items():
                    tool_counts[tool] += n
                per_episode.append(sum(episode_calls.values()))
        tools = {"calls": dict(tool_counts), "per_episode": per_episode}
        if n_epochs == 1:
            summary, rows, _ = epochs[0]
            light = {key: summary[key] for key in SUMMARY_KEYS}
            light["completeness"] = {**summary["completeness"], "expected": len(instances)}
            scored[code] = (light, rows, tools)
            continue
        light = combine_epochs([summary for summary, _, _ in epochs], len(instances))
        light["epochs"] = _epochs_entry(code, instances, played, epochs)
        rows = [{**row, "epoch": epoch} for epoch, (_, epoch_rows, _) in enumerate(epochs) for row in epoch_rows]
        scored[code] = (light, rows, tools)
    return scored


def current_summary(
    run: Run, *, stored: RunSummary | None, signatures: Mapping[str, Mapping] | None = None
) -> RunSummary:
    """The summary of ``run`` as its episodes stand now, without writing anything: what pages show.

    Parameters
    ----------
    run : Run
        The run to summarise.
    stored : RunSummary or None
        The run's stored summary, None when it has none.
    signatures : mapping, optional
        The run's entry of ``task_signatures``, when the caller already has it.

    Returns
    -------
    RunSummary
        ``stored`` itself when it is up to date; otherwise a new, unsaved summary in which the
        tasks whose episodes changed are re-scored and the others kept from ``stored``. Overall
        (the mean of the six primary scores) and its 95% bootstrap interval over instances are
        set only when all six tasks are scored; ``overall_official`` only when all six summaries
        are official. A summary re-scored here is kept in this process, and served again, for as
        long as the run's episodes and its stored summary stay as they were (while a run plays,
        its stored summary is refreshed only every ``SUMMARY_REFRESH_SEC``, and the pages read
        in between re-score once per change, not once each).
    """
    if signatures is None:
        signatures = task_signatures(run_ids=[run.pk]).get(run.pk, {})
    codes = run_task_codes(run)
    changed = _changed_tasks(run, stored=stored, signatures=signatures, codes=codes)
    if changed is None:
        return stored
    key = (
        run.pk, run.created_at, tuple(codes), json.dumps(signatures, sort_keys=True, default=str),
        None if stored is None else (stored.pk, stored.computed_at),
    )  # fmt: skip
    return _rescored.remember(
        key, lambda: _summary_now(run, stored=stored, signatures=signatures, codes=codes, changed=changed)
    )


def stored_summary(run: Run) -> RunSummary | None:
    """The summary stored for ``run`` as its query loaded it (``select_related("leaderboard_summary")``), or None."""
    return getattr(run, "leaderboard_summary", None)


def fresh_summaries(runs: Sequence[Run], *, answered_only: bool = False) -> dict[int, RunSummary]:
    """Each run's summary as its episodes stand, by run id, in one query for all of them (``current_summary``).

    With ``answered_only``, a run none of whose episodes has completed is left out (a board shows none).
    """
    signatures = task_signatures(run_ids=[run.pk for run in runs])
    fresh = {}
    for run in runs:
        signature = signatures.get(run.pk, {})
        if answered_only and not any(task["completed"] for task in signature.values()):
            continue
        fresh[run.pk] = current_summary(run, stored=stored_summary(run), signatures=signature)
    return fresh


def _changed_tasks(
    run: Run, *, stored: RunSummary | None, signatures: Mapping[str, Mapping], codes: list[str], force: bool = False
) -> list[str] | None:
    """The tasks of ``run`` to re-score (all with ``force`` or no ``stored``); None when ``stored`` is up to date."""
    changed = codes if force or stored is None else stale_tasks(stored, run, signatures)
    if stored is not None and not changed and set(stored.tasks) <= set(codes):
        return None
    return changed


def _summary_now(
    run: Run, *, stored: RunSummary | None, signatures: Mapping[str, Mapping], codes: list[str], changed: list[str]
) -> RunSummary:
    """``run``'s summary with the ``changed`` tasks re-scored and the others kept from ``stored``; unsaved."""
    kept = [code for code in codes if code not in changed and stored is not None and code in stored.tasks]
    tasks = {code: stored.tasks[code] for code in kept}
    items = {code: stored.items[code] for code in kept if code in stored.items}
    tool_use = {code: stored.tool_use[code] for code in kept if code in stored.tool_use}
    for code, (light, rows, tools) in _score_tasks(run, changed).items():
        tasks[code] = {**light, "signature": dict(signatures.get(code, EMPTY_SIGNATURE))}
        items[code] = rows
        tool_use[code] = tools

    summary = RunSummary(run=run, tasks=tasks, items=items, tool_use=tool_use)
    if sorted(tasks) == list(TASK_IDS):
        summary.overall = sum(float(tasks[code]["primary_score"]) for code in TASK_IDS) / len(TASK_IDS)
        summary.overall_official = overall(tasks) is not None
        summary.overall_ci_low, summary.overall_ci_high = stats.bootstrap_overall(
            [task_sample(code, items[code]) for code in TASK_IDS]
        )
    return summary


def overall_resamples(
    summary: RunSummary, *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = stats.DEFAULT_SEED
) -> np.ndarray | None:
    """The bootstrap distribution of a run's Overall (``stats.overall_resamples``); None without all six tasks.

    A stored summary's distribution is kept in this process until the summary is saved again, so
    that the analysis page, which compares every run's, draws each run's once per change.
    """
    if sorted(summary.tasks) != list(TASK_IDS) or any(not summary.items.get(code) for code in TASK_IDS):
        return None
    # An unsaved summary (re-scored in memory) has its run's pk too: only a stored one is kept.
    key = stored_key(summary)

    def draw() -> np.ndarray:
        samples = [task_sample(code, summary.items[code]) for code in TASK_IDS]
        drawn = stats.overall_resamples(samples, n_resamples=n_resamples, seed=seed)
        drawn.setflags(write=False)
        return drawn

    return _resamples.remember(key and (*key, n_resamples, seed), draw)


def refresh_run_summary(run: Run, *, force: bool = False) -> RunSummary:
    """Bring the stored summary of ``run`` up to date, re-scoring only the tasks that changed.

    The scoring happens outside any transaction of this function, so the database's write lock
    is held only to save. The run's row is locked for the save, and the summary is saved only if
    the episodes it was scored from are still as they are: of two workers refreshing one run at
    once, an older result never replaces a newer one. When episodes changed during the scoring,
    nothing is saved (the call that follows their end refreshes again) and the unsaved summary
    is returned. ``force`` re-scores every task (after a change of the scorer).
    """
    stored = RunSummary.objects.filter(run=run).first()
    signatures = task_signatures(run_ids=[run.pk]).get(run.pk, {})
    codes = run_task_codes(run)
    changed = _changed_tasks(run, stored=stored, signatures=signatures, codes=codes, force=force)
    if changed is None:
        return stored
    summary = _summary_now(run, stored=stored, signatures=signatures, codes=codes, changed=changed)
    with transaction.atomic():
        if not Run.objects.select_for_update().filter(pk=run.pk).values_list("pk", flat=True):
            return summary  # the run was deleted meanwhile
        now = task_signatures(run_ids=[run.pk]).get(run.pk, {})
        if all(task["signature"] == now.get(code, EMPTY_SIGNATURE) for code, task in summary.tasks.items()):
            summary.save()
    return summary


def episodes_ended(*, run_id: int) -> RunSummary | None:
    """Refresh the summary of a run some of whose episodes ended or changed: what the runs side calls.

    Coalesced. While the run plays (no ``finished_at``), the refresh is claimed atomically, and
    only by the first call since the summary was computed more than ``SUMMARY_REFRESH_SEC`` ago:
    many episodes ending at once cost one re-score, not one each. Once the run has finished,
    every call refreshes (a cheap no-op when the summary is up to date), so the call that follows
    the last episode's end always leaves the summary matching the episodes. Between refreshes,
    pages compute a stale summary in memory (``current_summary``).

    Returns the summary, or None when the run is gone or the refresh was left to a later call.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    if run.finished_at is None:
        now = timezone.now()
        claimed = RunSummary.objects.filter(
            run_id=run_id, computed_at__lt=now - timedelta(seconds=SUMMARY_REFRESH_SEC)
        ).update(computed_at=now)
        if not claimed and RunSummary.objects.filter(run_id=run_id).exists():
            return None
    return refresh_run_summary(run)


