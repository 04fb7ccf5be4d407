"""Leases on running episodes: the heartbeat of the process playing them, and finding and recovering a lost one.

While a process plays episodes, one daemon thread renews their lease (``Episode.heartbeat_at``)
every ``EEGAB_HEARTBEAT_SEC`` seconds, through long model calls too. A running episode whose
worker has been silent for longer than ``EEGAB_EPISODE_LEASE_SEC`` is *stale*: its worker was
killed. A stale episode is recovered (``recover_stale_episode``): played again as its next
attempt, up to ``EEGAB_MAX_EPISODE_ATTEMPTS`` attempts, or ended as its cap ends it when it had
lived until one. A worker that was only stalled, not killed, writes nothing once it wakes: every
step and counter it stores is conditional on the episode still running as its attempt
(``runs.db``), and the first refused write ends its loop.

A run none of whose unfinished episodes was sent to the queue is played by a process of its
own (``run_benchmark --sync``, ``resume_run --sync``): when nothing of it has shown a sign of
life for longer than the lease, that process is gone (``lost_runs``).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from runs.episode.engine import end_at_cap, load_episode
from runs.models import Episode, Run, Status
from runs.services import reset_episode_for_retry

logger = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a running episode's worker may stay silent before it is presumed dead."""
    return float(settings.EEGAB_EPISODE_LEASE_SEC)


def heartbeat_seconds() -> float:
    """How often a worker renews the lease of the episodes it plays."""
    return float(settings.EEGAB_HEARTBEAT_SEC)


def max_attempts() -> int:
    """How many attempts an episode gets before a lost worker fails it instead of retrying it."""
    return int(settings.EEGAB_MAX_EPISODE_ATTEMPTS)


class Heartbeat:
    """Renews the lease of every episode this process is playing, from one daemon thread.

    The thread belongs to the process that started it; a forked worker starts its own.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._held: Counter[int] = Counter()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None

    @contextmanager
    def hold(self, episode_id: int):
        """Keep ``episode_id``'s lease while the block runs."""
        with self._lock:
            self._held[episode_id] += 1
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._beat_forever, name="episode-heartbeat", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held[episode_id] -= 1
                if self._held[episode_id] <= 0:
                    del self._held[episode_id]

    def beat(self) -> int:
        """Renew the lease of the held episodes that are still running; return how many were renewed."""
        with self._lock:
            held = list(self._held)
        if not held:
            return 0
        return Episode.objects.filter(pk__in=held, status=Status.RUNNING).update(heartbeat_at=timezone.now())

    def _beat_forever(self) -> None:
        while True:
            time.sleep(heartbeat_seconds())
            try:
                self.beat()
            except Exception:  # a missed beat is not fatal: the lease outlasts several of them
                logger.exception("could not renew the lease of the running episodes")
            finally:
                connections.close_all()


heartbeat = Heartbeat()


def stale_episodes(episodes=None):
    """The running episodes whose worker has been silent for longer than the lease."""
    episodes = Episode.objects.all() if episodes is None else episodes
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    return (
        episodes.filter(status=Status.RUNNING)
        .annotate(last_sign_of_life=Coalesce("heartbeat_at", "started_at"))
        .filter(Q(last_sign_of_life__lt=cutoff) | Q(last_sign_of_life__isnull=True))
    )


def lost_runs():
    """The runs played here by a process of their own that has been silent for longer than the lease.

    Such a run is pending or running, started, has unfinished episodes and none of them was
    sent to the queue; and none of its episodes started, renewed its lease or ended within the
    lease. Its process plays episode after episode and renews the lease of the one it plays,
    so this silence means it was killed, or lost with its machine.
    """
    cutoff = timezone.now() - timedelta(seconds=lease_seconds())
    episodes = Episode.objects.filter(run=OuterRef("pk"))
    unfinished = episodes.filter(status__in=(Status.PENDING, Status.RUNNING))
    recent = episodes.filter(Q(started_at__gte=cutoff) | Q(heartbeat_at__gte=cutoff) | Q(finished_at__gte=cutoff))
    return (
        Run.objects.filter(source=Run.Source.RUN, status__in=(Status.PENDING, Status.RUNNING), started_at__lt=cutoff)
        .filter(Exists(unfinished))
        .exclude(Exists(unfinished.filter(queued_at__isnull=False)))
        .exclude(Exists(recent))
    )


@transaction.atomic
def recover_stale_episode(*, episode_id: int) -> bool:
    """Make a stale episode pending again as its next attempt; True when it was stale.

    An attempt that lived until one of its caps (its worker was killed by the queue's timeout
    in a model call that outlasted the wall-clock cap) ends as that cap ends it instead,
    scored unanswered (``runs.episode.engine.end_at_cap``). After ``max_attempts()`` attempts the
    episode fails (an infrastructure failure that ``resume_run`` can still retry), so a
    recording that kills its worker every time cannot keep a run alive forever. The episode's
    row is locked first, so that of two callers at once only one recovers it.
    """
    episode = Episode.objects.select_for_update().filter(pk=episode_id).first()
    if episode is None or not stale_episodes().filter(pk=episode_id).exists():
        return False
    if episode.started_at is not None:
        lived = ((episode.heartbeat_at or episode.started_at) - episode.started_at).total_seconds()
        if end_at_cap(load_episode(episode_id), lived_sec=lived):
            return True
    if episode.attempt >= max_attempts():
        Episode.objects.filter(pk=episode_id).update(
            status=Status.FAILED,
            ended_by=Episode.EndedBy.PROVIDER_ERROR,
            error_kind=Episode.ErrorKind.INFRASTRUCTURE,
            error_message=f"the worker playing attempt {episode.attempt} stopped responding "
            f"(no heartbeat for {lease_seconds():g} s); no automatic attempt is left",
            finished_at=timezone.now(),
        )
        return True
    reset_episode_for_retry(episode=episode)
    return True
