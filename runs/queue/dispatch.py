"""Sending a run's episodes to the queue: one django-q2 task per episode, within the run's concurrency.

This is the only module of ``runs`` that imports django-q2. ``release_episodes`` sends tasks for
a run's pending episodes, at most ``Run.limits["concurrency"]`` of them in flight at a time, when
its transaction commits; each task, when it ends, releases the next ones
(``runs.queue.worker.look_after_run``). ``Episode.queued_at`` marks an attempt whose task was sent.
The task's import path, ``runs.tasks.run_episode_task``, is named by every queued task and stays.

A cluster pulls a task off the broker only for one of its workers that is free
(``cluster_broker``, with the count ``manage.py qcluster`` keeps: ``count_free_workers``,
``worker_free``), so no cluster holds an episode while another's workers stand idle. The count
is a semaphore inherited by the processes django-q2 forks (it forks wherever the platform can).

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


def send_task(function: str, *args, group: str) -> None:
    """Send one task of another kind (``function``'s import path, e.g. a submission's check) to the workers."""
    from django_q.tasks import async_task

    async_task(function, *args, group=group)


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


# ── a cluster takes a task only for a free worker ────────────────────────────────────────────

#: How long a cluster's pusher waits for a free worker before it looks whether it should stop.
FREE_WORKER_WAIT_SEC = 1.0

# The count of a cluster's workers that are free and not yet promised a task: a semaphore shared
# by the cluster's processes (made by ``manage.py qcluster`` before it forks them), None elsewhere.
_free_workers = None


def count_free_workers(workers: int) -> None:
    """Start counting the free workers of the cluster this process is about to fork (none are, yet).

    ``manage.py qcluster`` calls it before django-q2 forks the cluster's processes, which share
    the count: a worker adds itself once it has warmed up and each time it ends a task
    (``worker_free``), and the cluster's broker takes one away for each task it pulls
    (``cluster_broker``). A worker killed in a task never adds itself back, and the worker that
    replaces it does; the count never exceeds ``workers``.
    """
    import multiprocessing

    global _free_workers
    count = multiprocessing.get_context("fork").BoundedSemaphore(workers)
    for _ in range(workers):
        count.acquire()
    _free_workers = count


def worker_free() -> None:
    """Count this worker of the cluster as free for a task (nothing outside a cluster)."""
    if _free_workers is None:
        return
    try:
        _free_workers.release()
    except ValueError:  # counted already (a recycled worker's replacement): the count stays at its bound
        pass


class _ForFreeWorkers:
    """A broker that pulls a task off the queue only when one of its cluster's workers is free for it."""

    def dequeue(self):
        if not _free_workers.acquire(timeout=FREE_WORKER_WAIT_SEC):
            return None  # the pusher comes back after seeing whether the cluster is stopping
        try:
            tasks = super().dequeue()
        except BaseException:
            _free_workers.release()
            raise
        if not tasks:
            _free_workers.release()
            return tasks
        for _ in tasks[1:]:  # a broker that pulls several at once (Q_CLUSTER["bulk"]): a worker for each
            _free_workers.acquire()
        return tasks


_gated_brokers: dict[type, type] = {}


def cluster_broker(list_key: str):
    """django-q2's broker for this project (``Q_CLUSTER["broker_class"]``): Redis's, or the database's.

    In a cluster (``manage.py qcluster``) it pulls a task only when one of the cluster's workers
    is free for it, so a cluster never holds an episode while another cluster's workers stand
    idle, and it hands a free worker its task at once (django-q2's own brokers pull as long as
    the cluster's queue has room: up to ``Q_CLUSTER["queue_limit"]`` tasks beyond its busy
    workers). Everywhere else (the site queueing a run) it is the plain broker.
    """
    if Conf.ORM:
        from django_q.brokers.orm import ORM as kind
    else:
        from django_q.brokers.redis_broker import Redis as kind
    if _free_workers is None:
        return kind(list_key=list_key)
    gated = _gated_brokers.get(kind)
    if gated is None:
        gated = _gated_brokers[kind] = type(f"{kind.__name__}ForFreeWorkers", (_ForFreeWorkers, kind), {})
    return gated(list_key=list_key)
