"""Sending a run's episodes to the queue: one django-q2 task per episode, within the run's concurrency.

This is the only module of ``runs`` that imports django-q2. ``release_episodes`` sends tasks for
a run's pending episodes, at most ``Run.limits["concurrency"]`` of them in flight at a time, when
its transaction commits; each task, when it ends, releases the next ones
(``runs.queue.worker.look_after_run``). ``Episode.queued_at`` marks an attempt whose task was sent.
The task's import path, ``runs.tasks.run_episode_task``, is named by every queued task and stays.

Whether a worker is up to take the tasks: each cluster of ``python manage.py qcluster`` saves its
state (``django_q.status.Stat``) every half second, kept for 3 seconds: in Redis with the Redis
broker, in the ``Q_CLUSTER["cache"]`` cache with the ORM broker, which the settings point at files
every process shares. A cluster that stopped or died drops out of the list within those seconds.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django_q.conf import Conf
from django_q.status import Stat

from runs.models import Episode, Run, Status

TASK_FUNCTION = "runs.tasks.run_episode_task"

#: The order a run's episodes are handed out in: the longest recordings first (the episodes that
#: take longest: a night's sleep staging before an hour's seizures, a 23-s segment's questions
#: last), so that the run's last episodes to end are short ones and it ends sooner.
PLAY_ORDER = (F("instance__duration_sec").desc(nulls_last=True), "id")

# A cluster in these states takes tasks from the broker; Stopping and Stopped ones take no more.
_TAKING_WORK = frozenset(str(state) for state in (Conf.STARTING, Conf.IDLE, Conf.WORKING))


def _send_tasks(run_id: int, episode_ids: list[int]) -> None:
    from django_q.brokers import get_broker
    from django_q.tasks import async_task

    broker = get_broker()  # one connection for the whole batch (async_task opens one per task by default)
    for episode_id in episode_ids:
        async_task(TASK_FUNCTION, episode_id, group=f"run-{run_id}", broker=broker)


@transaction.atomic
def release_episodes(*, run_id: int) -> list[int]:
    """Send queue tasks for the run's pending episodes that have none, within its concurrency.

    They go out in ``PLAY_ORDER``, when the transaction commits. Returns the ids of the episodes released.
    """
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status not in (Status.PENDING, Status.RUNNING):
        return []
    waiting = run.episodes.filter(status=Status.PENDING, queued_at__isnull=True).order_by(*PLAY_ORDER)
    concurrency = (run.limits or {}).get("concurrency")
    if concurrency:
        in_flight = run.episodes.filter(
            Q(status=Status.RUNNING) | Q(status=Status.PENDING, queued_at__isnull=False)
        ).count()
        waiting = waiting[: max(int(concurrency) - in_flight, 0)]
    ids = list(waiting.values_list("id", flat=True))
    if ids:
        Episode.objects.filter(pk__in=ids).update(queued_at=timezone.now())
        transaction.on_commit(lambda: _send_tasks(run_id, ids))
    return ids


def queue_run(*, run_id: int) -> list[int]:
    """Hand a run's pending episodes to the queue workers (``manage.py qcluster``)."""
    return release_episodes(run_id=run_id)


def live_clusters() -> list[Stat]:
    """The clusters of this project (``Q_CLUSTER["name"]``) that are up and taking tasks."""
    return [stat for stat in Stat.get_all() if str(stat.status) in _TAKING_WORK]


def workers_alive() -> bool:
    """Whether at least one cluster is up to play queued episodes."""
    return bool(live_clusters())
