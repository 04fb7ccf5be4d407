"""The trajectory explorer's queries: an episode, the other episodes of its instance, a step that read the signal."""
from __future__ import annotations

from django.db.models import Case, Value, When
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from benchmark.models import Release
from leaderboard.access import (
    visible_episodes,
)
from leaderboard.outcomes import with_outcome
from runs.models import Episode, Status, Step

EPISODE_RELATED = ("run__model", "run__suite__release", "instance__task", "instance__suite__release")


def get_episode(pk: int) -> Episode:
    episodes = Episode.objects.select_related(*EPISODE_RELATED).defer(
        *Release.unread("run__suite__release"), *Release.unread("instance__suite__release")
    )
    return get_object_or_404(with_outcome(episodes), pk=pk)


def other_episodes(request: HttpRequest, episode: Episode, *, limit: int) -> list[Episode]:
    """The other episodes of ``episode``'s instance this visitor may see, the closest comparison first.

    Another model's episodes come first, then another run's of the same model, then the same
    run's other epochs; within each, completed before failed or cancelled, then by model, newest
    run first, by epoch. The first is the one a comparison opens with.
    """
    same_instance = Episode.objects.filter(instance_id=episode.instance_id).exclude(pk=episode.pk)
    closeness = Case(
        When(run_id=episode.run_id, then=Value(2)),
        When(run__model_id=episode.run.model_id, then=Value(1)),
        default=Value(0),
    )
    unanswered = Case(When(status=Status.COMPLETED, then=Value(0)), default=Value(1))
    return list(
        with_outcome(visible_episodes(request, same_instance))
        .select_related("run__model", "instance__task")
        .annotate(closeness=closeness, unanswered=unanswered)
        .order_by("closeness", "unanswered", "run__model__name", "-run_id", "epoch")[:limit]
    )


def signal_step(pk: int, index: int) -> Step:
    """Step ``index`` of episode ``pk``, with the release its recording is read from; a 404 when there is none."""
    return get_object_or_404(
        Step.objects.select_related("episode__instance__suite__release").defer(
            *Release.unread("episode__instance__suite__release")
        ),
        episode_id=pk,
        index=index,
    )
