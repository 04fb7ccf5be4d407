"""The REST API's detail reads: a run with its episodes, an episode with its steps, tasks, instances."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from benchmark.models import Instance, Release, Task
from leaderboard.board.ranking import LeaderboardRow, run_row
from leaderboard.run_pages.selectors import episode_order, task_rows
from leaderboard.summaries.scoring import current_summary, item_score, stored_summary
from runs.models import Episode, Run, Step, status_counts


@dataclass(frozen=True)
class EpisodeRow:
    """One episode of a run page: where it stands and how it scored."""

    id: int
    record_id: str
    task: str
    status: str
    ended_by: str
    attempt: int
    n_turns: int
    n_tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: Decimal | None
    wall_time_sec: float | None
    score: float | None
    epoch: int = 0
    failure_modes: list[dict] | None = None

    @property
    def outcome(self) -> str:
        """How the episode ended, or where it stands while it has not."""
        return self.ended_by or self.status


@dataclass
class RunDetail:
    """A run's data: the run, its leaderboard row, its task rows (``run_task_rows``), progress, episodes."""

    run: Run
    row: LeaderboardRow
    tasks: list[dict[str, Any]]
    progress: dict[str, int]
    episodes: list[EpisodeRow]


def run_detail(*, run_id: int, staff: bool = False) -> RunDetail:
    """One run with its up-to-date summary and all its episodes, in three queries when the summary is fresh.

    Raises ``Run.DoesNotExist``.
    """
    run = (
        Run.objects.select_related("model", "suite__release", "leaderboard_summary")
        .defer(*Release.unread("suite__release"))
        .get(pk=run_id)
    )
    summary = current_summary(run, stored=stored_summary(run))
    episodes = [
        EpisodeRow(
            id=values[0], record_id=values[1], task=values[2], status=values[3], ended_by=values[4],
            attempt=values[5], n_turns=values[6], n_tool_calls=values[7], prompt_tokens=values[8],
            completion_tokens=values[9], cost_usd=values[10], wall_time_sec=values[11],
            score=item_score(values[2], values[12] or {}), epoch=values[13], failure_modes=values[14],
        )
        for values in Episode.objects.filter(run=run)
        .order_by(*episode_order(staff=staff))
        .values_list(
            "id", "record_id", "instance__task__code", "status", "ended_by", "attempt", "n_turns",
            "n_tool_calls", "prompt_tokens", "completion_tokens", "cost_usd", "wall_time_sec", "scores", "epoch",
            "failure_modes",
        )
    ]
    return RunDetail(
        run=run,
        row=run_row(run, summary, suite=run.suite),
        tasks=task_rows(summary),
        progress=status_counts(Counter(episode.status for episode in episodes)),
        episodes=episodes,
    )


@dataclass
class EpisodeDetail:
    """An episode page: the episode (with run, model, suite and instance loaded), its steps, its score."""

    episode: Episode
    steps: list[Step]
    score: float | None


def episode_detail(*, episode_id: int) -> EpisodeDetail:
    """One episode and all its steps in order, in two queries. Raises ``Episode.DoesNotExist``."""
    episode = (
        Episode.objects.select_related("run__model", "run__suite__release", "instance__task")
        .defer(*Release.unread("run__suite__release"))
        .get(pk=episode_id)
    )
    steps = list(Step.objects.filter(episode=episode).order_by("index"))
    score = item_score(episode.instance.task.code, episode.scores or {})
    return EpisodeDetail(episode=episode, steps=steps, score=score)


def task_list() -> QuerySet[Task]:
    return Task.objects.order_by("code")


def instance_list(*, suite: str, task: str | None = None, release_order: bool = True) -> QuerySet[Instance]:
    """The instances of a suite by task, with their task loaded: in the release's order, else by record id."""
    queryset = Instance.objects.filter(suite__name=suite).select_related("task")
    if task:
        queryset = queryset.filter(task__code=task)
    return queryset.order_by("task__code", "position" if release_order else "record_id", "id")
