"""The queue's sweep: episodes whose worker was lost are taken up, and their runs finished, without ``resume_run``;
runs whose own process was lost are ended.

A worker killed in the middle of an episode (by the queue's timeout, in a model call that
outlasted the episode's wall-clock cap, or with its machine) leaves the episode running under
a lease nobody renews. The other tasks of its run take it up when they end
(``runs.queue.worker.execute_episode``), but when it was the run's last task nothing else would.
A run played by a process of its own (``run_benchmark --sync``) that was killed would stay
running for ever: the sweep ends it, failed, and ``resume_run`` plays the rest.
``sweep_runs`` runs every minute as a django-q2 schedule (``runs`` migration 0007) on any
running ``qcluster``.
"""
from __future__ import annotations

import logging

from django.db.models import Exists, OuterRef

from runs.models import Episode, Run, Status
from runs.queue.leases import stale_episodes
from runs.queue.lifecycle import end_lost_runs
from runs.queue.worker import look_after_run

logger = logging.getLogger(__name__)

SWEEP_FUNCTION = "runs.sweep.sweep_runs"
UNFINISHED = (Status.PENDING, Status.RUNNING)


def sweep_runs() -> dict[str, int]:
    """Recover the queue's stale episodes, send their runs' next tasks, finish runs with nothing left, end lost ones.

    - Every stale episode whose queue task was sent (``queued_at``), in every run played here,
      is recovered (``runs.queue.leases.recover_stale_episode``): played again as its next
      attempt, ended at its cap when it had lived until it, or failed after the last attempt.
      An episode played in a process of its own (``run_sync``, no task) is not played again here.
    - Those runs' pending episodes are sent to the queue, within each run's concurrency.
    - A run played here that is still pending or running with no episode pending or running
      is finished (``runs.services.finish_run``).
    - A run played by a process of its own that was lost (``runs.queue.leases.lost_runs``) is
      ended (``runs.queue.lifecycle.end_lost_run``): its running episode failed, its pending ones
      cancelled, as ended by ``process_lost``; ``resume_run`` plays them again.
    - The leaderboard summary of every run changed is refreshed (``leaderboard.summaries.scoring.episodes_ended``).

    Each step claims its work atomically (the episode's or the run's row is locked and checked
    again), so two sweeps at once, or a sweep and a task, never recover an episode twice or
    send a second task for it, and a second sweep finds nothing left to do. Returns how many
    episodes were recovered, released, runs finished and lost runs ended: the queue keeps it as
    the task's result.
    """
    ended = len(end_lost_runs())
    sent = Episode.objects.filter(run__source=Run.Source.RUN, queued_at__isnull=False)
    unfinished = Episode.objects.filter(run=OuterRef("pk"), status__in=UNFINISHED)
    idle = (
        Run.objects.filter(source=Run.Source.RUN, status__in=UNFINISHED, episodes__isnull=False)
        .exclude(Exists(unfinished))
        .values_list("id", flat=True)
    )
    runs = set(stale_episodes(sent).values_list("run_id", flat=True)) | set(idle)
    looked_after = [look_after_run(run_id=run_id, stale=sent) for run_id in sorted(runs)]
    recovered = sum(result.recovered for result in looked_after)
    released = sum(result.released for result in looked_after)
    finished = sum(result.finished for result in looked_after)
    if recovered or finished or ended:
        logger.info("sweep: %d stale episode(s) recovered, %d released, %d run(s) finished, %d lost run(s) ended",
                    recovered, released, finished, ended)  # fmt: skip
    return {"recovered": recovered, "released": released, "finished": finished, "ended": ended}
