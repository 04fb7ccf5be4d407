"""What the runs list and a run page read.

Runs with their episode counts, a run's progress, scores and epochs, and its episodes filtered.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.http import HttpRequest

from benchmark.models import Release
from benchmark.scoring import PRIMARY_METRIC, SECONDARY_METRICS, TASK_IDS
from benchmark.scoring.epochs import overall_over_epochs
from leaderboard.access import has_ended, is_staff, shown_failure_modes, visible_episodes
from leaderboard.board import ranking
from leaderboard.board.ranking import TASK_NAMES
from leaderboard.formats import seizure_counts_text
from leaderboard.models import RunSummary
from leaderboard.outcomes import shown_outcome, with_outcome
from leaderboard.run_pages.forms import EpisodeFilterForm
from leaderboard.search.selectors import narrowed
from leaderboard.summaries.scoring import current_summary, item_score
from runs.models import FINISHED, TOKEN_FIELDS, Episode, Run, Status
from runs.queue.dispatch import workers_alive


def run_list(*, suite: str | None = None, status: str | None = None, model: str | None = None) -> QuerySet[Run]:
    """Runs, newest first, each with its model and suite and its episode counts by status.

    Annotations: ``n_episodes``, ``n_<status>`` for every status, and ``n_process_lost``, the
    episodes ended because the process playing the run stopped (one query per page).
    """
    queryset = Run.objects.select_related("model", "suite__release").defer(*Release.unread("suite__release")).annotate(
        n_episodes=Count("episodes"),
        **{f"n_{value}": Count("episodes", filter=Q(episodes__status=value)) for value in Status.values},
        n_process_lost=Count("episodes", filter=Q(episodes__ended_by=Episode.EndedBy.PROCESS_LOST)),
    )
    if suite:
        queryset = queryset.filter(suite__name=suite)
    if status:
        queryset = queryset.filter(status=status)
    if model:
        queryset = queryset.filter(model__name=model)
    return queryset.order_by("-created_at", "-id")


def task_rows(summary: RunSummary) -> list[dict[str, Any]]:
    rows = []
    for task in TASK_IDS:
        scored = summary.tasks.get(task)
        if scored is None:
            continue
        names = (PRIMARY_METRIC[task], *SECONDARY_METRICS[task])
        rows.append({
            "task": task,
            "name": TASK_NAMES[task],
            "primary_metric": PRIMARY_METRIC[task],
            "primary_score": scored["primary_score"],
            "metrics": {name: scored["metrics"].get(name) for name in names},
            "official": scored["official"],
            "reasons": scored["reasons"],
            "completeness": scored["completeness"],
            **({"epochs": scored["epochs"]} if "epochs" in scored else {}),
        })
    return rows


def run_task_rows(run: Run) -> list[dict[str, Any]]:
    """A run's scored tasks in task order, from its up-to-date summary (two queries when fresh).

    Each row: ``task``, ``name``, ``primary_metric``, ``primary_score``, ``metrics`` (the primary
    and secondary metrics by name), ``official``, ``reasons`` (why not official) and
    ``completeness`` (``expected``, ``completed``, ``missing``, ``extra``, ``noncompleted``), and
    for a run of several epochs ``epochs`` (the summary's entry; ``primary_score`` and ``metrics``
    are then means over epochs). A task of the run with no episode finished yet is scored as all
    answers missing.
    """
    return task_rows(run_summary(run))


def run_summary(run: Run) -> RunSummary:
    """``run``'s summary as its episodes stand now (the stored one, or re-scored in memory when stale)."""
    return current_summary(run, stored=RunSummary.objects.filter(run=run).first())


def episode_order(*, staff: bool) -> tuple[str, ...]:
    """How a run's episodes are listed: by task, then, for staff, by the instance's position in the suite.

    Anyone else gets them by task and record id (random, of the episode's own): an order by
    position (or by episode id) would tell which instance a still-running episode plays, from its
    place beside the same task's ended episodes of another run.
    """
    return ("instance__task__code", "instance__position", "epoch", "id") if staff else ("instance__task__code", "record_id", "id")


def run_progress_data(run: Run) -> dict:
    """Episodes by status, tokens and cost of a run, summed over its episodes as they stand (one query)."""
    sums = run.episodes.aggregate(
        **{f"n_{status}": Count("id", filter=Q(status=status)) for status in Status.values},
        **{f"total_{name}": Sum(name) for name in TOKEN_FIELDS},
        total_cost=Sum("cost_usd"),
        n_unpriced=Count("id", filter=Q(cost_usd__isnull=True, prompt_tokens__gt=0)),
    )
    counts = {status: sums[f"n_{status}"] for status in Status.values}
    usage = {name: sums[f"total_{name}"] or 0 for name in TOKEN_FIELDS}
    cost = None if sums["n_unpriced"] else float(sums["total_cost"] or 0)
    paper_cost = ranking.paper_cost(run.model, usage["prompt_tokens"], usage["completion_tokens"])
    total = sum(counts.values())
    return {
        "id": run.pk,
        "status": run.status,
        "finished": run.status in FINISHED,
        "episodes": counts,
        "total": total,
        "done": counts[Status.COMPLETED],
        "failed": counts[Status.FAILED],
        "tokens": {**usage, "total": usage["prompt_tokens"] + usage["completion_tokens"]},
        "cost_usd": cost,
        "paper_cost_usd": None if paper_cost is None else float(paper_cost),
    }


def episode_rows(episodes, *, references: bool, staff: bool) -> list[dict]:
    """A page of a run's episodes as its table shows them: outcome, and score only with ``references``."""
    return [
        {
            "episode": episode,
            "outcome": shown_outcome(episode.outcome, references=references),
            "score": item_score(episode.instance.task.code, episode.scores) if references and episode.scores else None,
            "score_note": (
                seizure_counts_text(episode.scores)
                if references and episode.scores and episode.instance.task.code == "T5" else ""
            ),  # fmt: skip
            "modes": [mode["code"] for mode in shown_failure_modes(episode.failure_modes, references=references)],
            "visible": staff or has_ended(episode),  # a visitor follows no link into a running episode
        }
        for episode in episodes
    ]


def filtered_episodes(request: HttpRequest, run: Run, form: EpisodeFilterForm):
    episodes = (
        with_outcome(run.episodes.select_related("instance__task"))
        .defer("final_answer", "prediction", "error_message")
        .order_by(*episode_order(staff=is_staff(request)))
    )
    if not form.is_valid():
        return episodes
    if form.cleaned_data["q"]:
        # A search looks only into episodes this visitor may see: never into one that has not ended.
        episodes = visible_episodes(request, episodes)
    return narrowed(episodes, staff=is_staff(request), **form.cleaned_data)


def has_scores(completeness: dict) -> bool:
    """Whether a task summary scores anything yet: an episode of the task has ended (answered or failed)."""
    return completeness["completed"] + completeness["noncompleted"] > 0


def run_scores(summary: RunSummary) -> dict:
    """A run page's scores: its task rows and its Overall, neither shown as scored before anything has ended.

    Returns ``tasks`` (``run_task_rows`` with ``scored``: an episode of the task has
    ended), ``unscored`` (the codes of the others) and ``overall``: None, or its ``score``, 95%
    ``ci`` (None without one), ``official`` and ``so_far`` (episodes still to end), given only
    once every one of the six tasks has an ended episode.
    """
    tasks = [{**row, "scored": has_scores(row["completeness"])} for row in task_rows(summary)]
    unscored = [row["task"] for row in tasks if not row["scored"]]
    overall = None
    if summary.overall is not None and not unscored:
        overall = {
            "score": summary.overall,
            "ci": summary.overall_ci,
            "official": summary.overall_official,
            "so_far": any(row["completeness"]["missing"] for row in tasks),
        }
    return {"tasks": tasks, "unscored": unscored, "overall": overall}


def waiting_for_a_worker(run: Run) -> bool:
    """Episodes of the run are queued (not played by a ``--sync`` command) and no queue worker is up."""
    queued = run.episodes.filter(status=Status.PENDING, queued_at__isnull=False)
    return run.source == Run.Source.RUN and queued.exists() and not workers_alive()


def run_epochs(run: Run, summary: RunSummary) -> dict | None:
    """A run page's repeated-run figures: None for a run of one epoch.

    Otherwise ``k``, ``overall`` (``overall_over_epochs``: per-epoch Overall and its sd, None
    without all six tasks) and ``tasks``: per scored task, its summary's ``epochs``
    entry (per-epoch scores, sd, flip rate, and pass^k and pass@k for T1-T4) with its code,
    name and primary metric.
    """
    if run.epochs == 1:
        return None
    tasks = [
        {**row["epochs"], "task": row["task"], "name": row["name"], "primary_metric": row["primary_metric"],
         "mean": row["primary_score"]}
        for row in task_rows(summary) if "epochs" in row
    ]  # fmt: skip
    return {"k": run.epochs, "overall": overall_over_epochs(summary.tasks), "tasks": tasks}


def listed_score(summary: RunSummary | None) -> dict:
    """A run's score in the runs list, from its summary.

    ``overall`` and its ``ci`` once all six tasks score something (else None); otherwise ``tasks``,
    the primary metric of each task that does, as (code, metric, score); empty when none does.
    """
    tasks = summary.tasks if summary is not None else {}
    scored = [code for code in TASK_IDS if code in tasks and has_scores(tasks[code]["completeness"])]
    if summary is not None and summary.overall is not None and len(scored) == len(TASK_IDS):
        return {"overall": summary.overall, "ci": summary.overall_ci, "tasks": []}
    return {"overall": None, "ci": None,
            "tasks": [(code, tasks[code]["primary_metric"], tasks[code]["primary_score"]) for code in scored]}
