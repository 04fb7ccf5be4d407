"""A run's life cycle once it exists: cancel, resume, rescore, ending one whose process was lost, and waiting for its end.

A run moves pending → running when its first episode is claimed (the episode engine), and ends
(``runs.services.finish_run``) once no episode is pending or running. Each change here is followed
by ``runs.signals.episodes_ended``, on which the leaderboard refreshes the run's summary.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from runs import db
from runs.episode.scoring import score_prediction
from runs.models import FINISHED, Episode, Run, Status
from runs.queue import dispatch
from runs.queue.leases import lost_runs, stale_episodes
from runs.services import create_run, finish_run, reset_episode_for_retry
from runs.signals import episodes_ended


@transaction.atomic
def cancel_run(*, run_id: int) -> Run:
    """Cancel a run: its pending (and stale) episodes at once, its running ones at their next turn."""
    run = Run.objects.select_for_update().get(pk=run_id)
    if not run.can_cancel():
        raise ValueError(f"Run {run_id} has already ended ({run.status}); there is nothing to cancel.")
    run.status = Status.CANCELLED
    run.save(update_fields=["status"])
    stale = list(stale_episodes(run.episodes.all()).values_list("id", flat=True))
    run.episodes.filter(Q(status=Status.PENDING) | Q(pk__in=stale)).update(
        status=Status.CANCELLED, ended_by=Episode.EndedBy.CANCELLED, finished_at=timezone.now()
    )
    transaction.on_commit(lambda: episodes_ended.send(sender=Run, run_id=run_id))
    return finish_run(run_id=run_id)


@dataclass(frozen=True)
class Resumed:
    """What ``resume_run`` did: the run, how many episodes it reset, and how many are left to play."""

    run: Run
    reset: int
    pending: int
    running: int


def start_run(**create) -> Run:
    """Create a run (``runs.services.create_run``'s arguments) and queue its episodes, in one transaction."""
    with transaction.atomic():
        run = create_run(**create)
        dispatch.queue_run(run_id=run.pk)
    return run


def resume_and_queue(*, run_id: int) -> Resumed:
    """Resume a run (``resume_run``) and queue the episodes it made playable, in one transaction."""
    with transaction.atomic():
        resumed = resume_run(run_id=run_id)
        dispatch.queue_run(run_id=run_id)
    return resumed


@transaction.atomic
def resume_run(*, run_id: int) -> Resumed:
    """Make every unfinished episode of a run playable again: failed, cancelled and stale ones.

    Each is reset as its next attempt (its earlier steps are discarded); completed episodes
    are kept as they are. Pending episodes lose their queue mark, so that ``queue_run`` sends
    them again (a task that was lost with a worker is replaced; a duplicate does nothing).
    Runs imported from elsewhere cannot be resumed.
    """
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.source != Run.Source.RUN:
        raise ValueError(f"Run {run_id} was {run.get_source_display()}; only runs played here can be resumed.")
    if not run.can_resume():
        raise ValueError(f"Run {run_id} has completed; there is nothing to resume.")
    stale = list(stale_episodes(run.episodes.all()).values_list("id", flat=True))
    retry = run.episodes.filter(Q(status__in=[Status.FAILED, Status.CANCELLED]) | Q(pk__in=stale))
    reset = 0
    for episode in retry:
        reset_episode_for_retry(episode=episode)
        reset += 1
    run.episodes.filter(status=Status.PENDING).update(queued_at=None)
    transaction.on_commit(lambda: episodes_ended.send(sender=Run, run_id=run_id))
    progress = run.progress()
    if progress[Status.PENDING] or progress[Status.RUNNING]:
        run.status = Status.RUNNING if run.started_at else Status.PENDING
        run.finished_at = None
        run.save(update_fields=["status", "finished_at"])
    else:
        run = finish_run(run_id=run_id)
    return Resumed(run=run, reset=reset, pending=progress[Status.PENDING], running=progress[Status.RUNNING])


PROCESS_LOST = (
    "the process playing its run stopped (killed, or lost with its machine) during attempt {attempt}; "
    "resume the run to play it again"
)
NOT_PLAYED = "not played: the process playing its run stopped (killed, or lost with its machine)"


@transaction.atomic
def end_lost_run(*, run_id: int) -> bool:
    """End a run whose process was lost (``runs.queue.leases.lost_runs``); True when it was.

    Its running episode fails (an infrastructure failure, not scored), its pending ones are
    cancelled, both as ended by ``process_lost``; the run fails, so that the runs list says how
    it ended and ``resume_run`` plays them again. The run's row is locked and the loss checked
    again first, so that of two callers at once only one ends it.
    """
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or not lost_runs().filter(pk=run_id).exists():
        return False
    now = timezone.now()
    lost = Episode.EndedBy.PROCESS_LOST
    for episode in run.episodes.filter(status=Status.RUNNING):
        Episode.objects.filter(pk=episode.pk, status=Status.RUNNING).update(
            status=Status.FAILED, ended_by=lost, error_kind=Episode.ErrorKind.INFRASTRUCTURE,
            error_message=PROCESS_LOST.format(attempt=episode.attempt), finished_at=now,
        )  # fmt: skip
    run.episodes.filter(status=Status.PENDING).update(
        status=Status.CANCELLED, ended_by=lost, error_message=NOT_PLAYED, finished_at=now
    )
    run.status, run.finished_at = Status.FAILED, now
    run.save(update_fields=["status", "finished_at"])
    db.refresh_totals(run)  # what the lost attempt spent, stored turn by turn, counts in the run's totals
    transaction.on_commit(lambda: episodes_ended.send(sender=Run, run_id=run_id))
    return True


def end_lost_runs() -> list[int]:
    """End every run whose process was lost; return their ids."""
    return [run_id for run_id in lost_runs().order_by("pk").values_list("pk", flat=True) if end_lost_run(run_id=run_id)]


@transaction.atomic
def rescore_run(*, run_id: int) -> int:
    """Score every completed episode's stored prediction again (no model is called); return how many.

    The run's leaderboard summary is re-scored in full once the transaction commits.
    """
    episodes = list(
        Episode.objects.filter(run_id=run_id, status=Status.COMPLETED).select_related("instance__task")
    )
    for episode in episodes:
        episode.scores = score_prediction(episode.instance, episode.prediction)
    Episode.objects.bulk_update(episodes, ["scores"], batch_size=500)
    transaction.on_commit(lambda: episodes_ended.send(sender=Run, run_id=run_id, rescored=True))
    return len(episodes)


def wait_for_run(
    *, run_id: int, on_progress: Callable[[Run], None] = lambda run: None, poll_sec: float = 1.0
) -> Run:
    """Wait until the run has ended, calling ``on_progress(run)`` at every poll."""
    while True:
        run = Run.objects.get(pk=run_id)
        on_progress(run)
        if run.status in FINISHED:
            return run
        time.sleep(poll_sec)
