"""Running a run's episodes: the queue, leases on running episodes, and a run's life cycle.

Execution model
---------------
- One django-q2 task per episode (``runs.tasks.run_episode_task``), sent with
  ``transaction.on_commit``. ``release_episodes`` sends tasks for a run's pending episodes, at
  most ``Run.limits["concurrency"]`` of them in flight at a time; each task, when it ends,
  releases the next ones. ``Episode.queued_at`` marks an attempt whose task was sent.
- The episode loop (``runs.episode.engine.run_episode``) claims an episode atomically (pending →
  running), so a duplicate task, or one for a finished episode, does nothing.
- While a process plays episodes, one daemon thread renews their lease
  (``Episode.heartbeat_at``) every ``EEGAB_HEARTBEAT_SEC`` seconds, through long model
  calls too. A running episode whose worker has been silent for longer than
  ``EEGAB_EPISODE_LEASE_SEC`` is *stale*: its worker was killed. A task delivered again for
  a stale episode (the broker redelivers unacknowledged tasks after ``Q_CLUSTER["retry"]``)
  discards the dead attempt and plays the episode again, up to
  ``EEGAB_MAX_EPISODE_ATTEMPTS`` attempts; so does every task of the same run when it ends,
  and, every minute, the sweep of ``runs.sweep`` for every run the queue plays; an attempt
  that had lived until its wall-clock cap ends as the cap ends it instead
  (``recover_stale_episode``). ``resume_run`` resets every stale, failed or cancelled
  episode of a run. A retried attempt replaces the earlier one (its steps are deleted,
  ``runs.services.reset_episode_for_retry``); it is never appended. A worker that was only
  stalled, not killed, writes nothing once it wakes: every step and counter it stores is
  conditional on the episode still running as its attempt (``runs.db``), and the
  first refused write ends its loop.
- Provider errors are retried in one layer only (``runs.model.agent.ModelAgent``); what is left
  is an infrastructure failure: the episode fails, is not scored and can be resumed.
- A run moves pending → running when its first episode is claimed (the loop), and ends
  (``finish_run``) once no episode is pending or running: cancelled if it was cancelled,
  failed if an episode failed, otherwise completed.
- The run's leaderboard summary is refreshed here, never by a page: after each episode a task
  plays, after each episode of ``run_sync`` and once it ends, and after a cancel, a resume or a
  rescore (``runs.signals.episodes_ended``; the leaderboard coalesces them).

Rate limits are ``runs.model.rate_limit``'s; episodes played here get them through ``_agent_for``.
"""
from __future__ import annotations

import gc
import logging
import math
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from benchmark.models import ModelSpec
from benchmark.scoring import TASK_IDS, score_task
from benchmark.scoring import overall as official_overall
from leaderboard.services import overall_over_epochs, refresh_run_summary
from runs import db
from runs.agents import BASELINES, build_agent, is_baseline
from runs.episode.engine import end_at_cap, load_episode, run_episode
from runs.episode.opening import episode_tools
from runs.episode.scoring import score_prediction, scoring_item
from runs.model import openai_http
from runs.model.litellm_transport import preload_litellm
from runs.model.rate_limit import RateLimitedAgent, RateLimits
from runs.models import TOKEN_FIELDS, Episode, Run, Status
from runs.services import reset_episode_for_retry
from runs.signals import episodes_ended
from tools_app.processes import ToolProcesses, shared_tool_processes

logger = logging.getLogger(__name__)

TASK_FUNCTION = "runs.tasks.run_episode_task"
FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


def lease_seconds() -> float:
    """How long a running episode's worker may stay silent before it is presumed dead."""
    return float(settings.EEGAB_EPISODE_LEASE_SEC)


def heartbeat_seconds() -> float:
    """How often a worker renews the lease of the episodes it plays."""
    return float(settings.EEGAB_HEARTBEAT_SEC)


def max_attempts() -> int:
    """How many attempts an episode gets before a lost worker fails it instead of retrying it."""
    return int(settings.EEGAB_MAX_EPISODE_ATTEMPTS)


# ── leases ───────────────────────────────────────────────────────────────────────────────────


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


def _agent_for(episode: Episode):
    """The run's rate-limited agent for ``episode``, or None for the loop's default agent."""
    limits = RateLimits.of(episode.run)
    if not limits.active or is_baseline(episode.run.model.provider_model):
        return None
    return RateLimitedAgent(
        lambda: build_agent(episode.run, episode.instance, record_id=episode.record_id, epoch=episode.epoch),
        run_id=episode.run_id,
        limits=limits,
    )


# ── playing episodes ─────────────────────────────────────────────────────────────────────────

_settled_pid: int | None = None


# glibc's mallopt parameters, and the values set: arrays up to 32 MB (glibc's largest threshold)
# come from the heap rather than a mapping of their own, and up to 512 MB of freed heap is kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES, _TRIM_THRESHOLD_BYTES = 32 * 2**20, 512 * 2**20


def keep_freed_memory() -> bool:
    """Have the C allocator keep freed memory for reuse (glibc only); True when it was told.

    By default glibc gives each large block (a tool's temporary array of a long recording) a
    mapping of its own and returns it on free, so every call faults in and zeroes fresh pages
    (half the page faults of a T5 and a T6 session's tools in a fresh process). The memory kept
    is bounded by the largest set of temporaries a process holds at once.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): its allocator's defaults stay
        return False
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES))


def settle_process(*, model: str | None) -> None:
    """Get this process ready to play episodes of ``model`` (of any model when None), once per process.

    The modules episodes use are imported (litellm for a model, whose import alone makes
    about half a million objects and takes seconds), then everything allocated so far is
    moved out of the garbage collector's sight (``gc.freeze``): these objects live as long
    as the process, and a full collection walking them stops every episode thread of the
    process for a quarter of a second. A queue cluster calls it with None before it forks
    its workers (``manage.py qcluster``), so that they share these modules rather than each
    import them again.

    The C allocator is also told to keep freed memory for reuse (``keep_freed_memory``): the
    tools' large temporary arrays then reuse pages the process already has, instead of asking
    the kernel for fresh ones, zeroed page by page, on every call.
    """
    global _settled_pid
    if _settled_pid == os.getpid():
        return
    keep_freed_memory()
    import runs.tasks  # noqa: F401  (the queue task's module)
    from tools_app.registry import function_schemas

    function_schemas()
    if model is None:
        preload_litellm()
    elif not is_baseline(model):
        import litellm  # noqa: F401
    gc.freeze()
    _settled_pid = os.getpid()



def play_episode(
    *, episode_id: int, tool_caller: Callable[..., dict] | None = None, **loop_options
) -> Episode | None:
    """Play one episode in this process, under a lease; recover it first if its worker died.

    An episode that is finished, or running under a live lease elsewhere, is returned as it
    is. ``tool_caller`` makes the platform's tool calls on the episode's recording
    (``runs.episode.opening.record_tools``; ``ToolProcesses.call`` makes them in tool processes).
    ``loop_options`` go to ``runs.episode.engine.run_episode`` (tests and benchmarks pass an agent or a
    tool runner). Returns None when the episode does not exist.
    """
    episode = load_episode(episode_id)
    if episode is None:
        return None
    if episode.status == Status.RUNNING and recover_stale_episode(episode_id=episode_id):
        episode.refresh_from_db()
    if episode.status != Status.PENDING:
        return episode
    loop_options.setdefault("agent", _agent_for(episode))
    if tool_caller is not None:
        loop_options.setdefault("tool_runner", episode_tools(episode, call=tool_caller))
    with heartbeat.hold(episode_id):
        return run_episode(episode_id=episode_id, loaded=episode, **loop_options)


def execute_episode(*, episode_id: int) -> str:
    """The body of an episode's queue task: play it, then look after its run.

    Afterwards the run's stale episodes (their workers died) are made pending again, as many
    pending episodes as the run's concurrency allows are sent to the queue, the run is
    finished if nothing is left, and its leaderboard summary is refreshed. Returns the
    episode's status ("missing" when it no longer exists). An unexpected error of the loop (a
    platform bug) propagates, so that the queue records it.
    """
    found = Episode.objects.filter(pk=episode_id).values_list("run_id", "run__model__provider_model").first()
    if found is None:
        return "missing"
    run_id, model = found
    settle_process(model=model)
    try:
        episode = play_episode(episode_id=episode_id)
    finally:
        look_after_run(run_id=run_id)
    return episode.status if episode is not None else "missing"


@dataclass(frozen=True)
class LookedAfter:
    """What ``look_after_run`` did: episodes recovered and sent to the queue, and whether it finished the run."""

    recovered: int
    released: int
    finished: bool


def look_after_run(*, run_id: int, stale=None) -> LookedAfter:
    """Keep a queued run going: what follows an episode's end, and what the sweep does for a lost worker.

    The run's stale episodes (``stale``, a queryset of them; by default all of the run's) are
    recovered (``recover_stale_episode``), as many pending episodes as its concurrency allows
    are sent to the queue, the run is finished if nothing is left, and its leaderboard summary
    is refreshed. Each step claims its work atomically, so two callers at once do it once.
    """
    stale = stale_episodes(Episode.objects.filter(run_id=run_id) if stale is None else stale.filter(run_id=run_id))
    recovered = sum(recover_stale_episode(episode_id=stale_id) for stale_id in stale.values_list("id", flat=True))
    released = len(release_episodes(run_id=run_id))
    finished = finish_run(run_id=run_id).status in FINISHED
    episodes_ended.send(sender=Run, run_id=run_id)
    return LookedAfter(recovered=recovered, released=released, finished=finished)


def _send_tasks(run_id: int, episode_ids: list[int]) -> None:
    from django_q.brokers import get_broker
    from django_q.tasks import async_task

    broker = get_broker()  # one connection for the whole batch (async_task opens one per task by default)
    for episode_id in episode_ids:
        async_task(TASK_FUNCTION, episode_id, group=f"run-{run_id}", broker=broker)


@transaction.atomic
def release_episodes(*, run_id: int) -> list[int]:
    """Send queue tasks for the run's pending episodes that have none, within its concurrency.

    The tasks go out when the transaction commits. Returns the ids of the episodes released.
    """
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status not in (Status.PENDING, Status.RUNNING):
        return []
    waiting = run.episodes.filter(status=Status.PENDING, queued_at__isnull=True).order_by("id")
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


def _play_in_thread(episode_id: int, tools: ToolProcesses) -> Episode | None:
    try:
        return play_episode(episode_id=episode_id, tool_caller=tools.call)
    finally:  # the pool's threads end with the run: nothing they opened is left to the garbage collector
        connections.close_all()
        openai_http.close_connections()


def run_sync(
    *,
    run_id: int,
    concurrency: int = 1,
    on_episode: Callable[[Episode | None, BaseException | None], None] = lambda episode, error: None,
) -> Run:
    """Play a run's pending episodes in this process and finish the run.

    Model episodes run on a pool of ``concurrency`` threads (at most the run's own
    concurrency limit), which make their tool calls in a process per processor
    (``tools_app.processes``, kept for later runs of this process), outside this process's
    interpreter lock; the built-in
    baselines, which compute rather than wait, one after another. ``on_episode(episode, error)`` is called as each episode ends; an error of the
    loop (a platform bug) is passed to it rather than raised, and the other episodes go on.
    The run's leaderboard summary is refreshed as episodes end and once the run is finished.
    """
    run = Run.objects.select_related("model").get(pk=run_id)
    settle_process(model=run.model.provider_model)
    ids = list(run.episodes.filter(status=Status.PENDING).order_by("id").values_list("id", flat=True))
    if ids:  # started here once, rather than by each of the first episodes at once
        Run.objects.filter(pk=run_id, status=Status.PENDING).update(status=Status.RUNNING, started_at=timezone.now())
    limit = (run.limits or {}).get("concurrency")
    workers = max(1, min(concurrency, int(limit) if limit else concurrency))
    if is_baseline(run.model.provider_model) or workers == 1:
        for episode_id in ids:
            try:
                episode, error = play_episode(episode_id=episode_id), None
            except Exception as exc:
                episode, error = Episode.objects.filter(pk=episode_id).first(), exc
            episodes_ended.send(sender=Run, run_id=run_id)
            on_episode(episode, error)
    else:
        tools = shared_tool_processes()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"run-{run_id}") as pool:
            futures = {pool.submit(_play_in_thread, episode_id, tools): episode_id for episode_id in ids}
            for future in as_completed(futures):
                error = future.exception()
                episode = future.result() if error is None else Episode.objects.filter(pk=futures[future]).first()
                episodes_ended.send(sender=Run, run_id=run_id)
                on_episode(episode, error)
    run = finish_run(run_id=run_id)
    episodes_ended.send(sender=Run, run_id=run_id)
    return run


# ── a run's life cycle ───────────────────────────────────────────────────────────────────────


@transaction.atomic
def finish_run(*, run_id: int) -> Run:
    """End the run if none of its episodes is pending or running; return it either way.

    A cancelled run stays cancelled; otherwise it is failed when an episode failed (an
    infrastructure failure that ``resume_run`` can retry) and completed when all completed.
    """
    run = Run.objects.select_for_update().get(pk=run_id)
    progress = run.progress()
    if progress[Status.PENDING] or progress[Status.RUNNING]:
        return run
    if run.status != Status.CANCELLED:
        run.status = Status.FAILED if progress[Status.FAILED] else Status.COMPLETED
    run.finished_at = run.finished_at or timezone.now()
    run.save(update_fields=["status", "finished_at"])
    db.refresh_totals(run)
    return run


@transaction.atomic
def cancel_run(*, run_id: int) -> Run:
    """Cancel a run: its pending (and stale) episodes at once, its running ones at their next turn."""
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.status in (Status.COMPLETED, Status.FAILED):
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


# ── models ───────────────────────────────────────────────────────────────────────────────────


def check_model(model: str) -> None:
    """Raise ValueError unless ``model`` is a built-in baseline or a model string litellm can route."""
    if is_baseline(model):
        if model not in BASELINES:
            raise ValueError(f"Unknown baseline {model!r}; the built-in agents are {', '.join(BASELINES)}.")
        return
    import litellm

    litellm.suppress_debug_info = True
    try:
        litellm.get_llm_provider(model)
    except Exception:  # litellm raises its own error types for strings it cannot route
        raise ValueError(
            f"Unknown model {model!r}: give a litellm model string with its provider, e.g. "
            f"openai/gpt-4o or openai/<name> with --api-base, or one of {', '.join(BASELINES)}."
        ) from None


def model_spec_for(model: str, *, name: str = "") -> ModelSpec:
    """The ``ModelSpec`` of a model string, created when there is none.

    With ``name`` the spec of that display name (which must run ``model``); without it, the
    spec named after the model string, else an existing spec of the model, else a new one
    named after the model string.
    """
    check_model(model)
    if name:
        spec = ModelSpec.objects.filter(name=name).first()
        if spec is not None and spec.provider_model != model:
            raise ValueError(f"The model name {name!r} is already used for {spec.provider_model}.")
    else:
        spec = (
            ModelSpec.objects.filter(name=model).first()
            or ModelSpec.objects.filter(provider_model=model).order_by("id").first()
        )
        if spec is not None and spec.provider_model != model:
            raise ValueError(f"The model name {model!r} is already used for {spec.provider_model}; give --name.")
    if spec is not None:
        return spec
    baseline = is_baseline(model)
    return new_model_spec(
        name=name or model,
        provider_model=model,
        family="baseline" if baseline else "",
        is_open_weight=True if baseline else None,
        notes="Built-in agent of the platform; runs locally and costs nothing." if baseline else "",
    )


def new_model_spec(**fields) -> ModelSpec:
    """Store a new ``ModelSpec``; ValueError naming each field that does not fit (too long, name taken)."""
    spec = ModelSpec(**fields)
    try:
        spec.full_clean()
    except ValidationError as exc:
        raise ValueError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()))
    spec.save()
    return spec


# ── results ──────────────────────────────────────────────────────────────────────────────────


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None, recursively (strict JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def task_summaries(run: Run, *, epoch: int | None = None) -> dict[str, dict]:
    """The official scorer's summary of each task of the run, over the run's episodes (of ``epoch`` only, if given).

    A completed episode is scored on its prediction; a failed one counts as a result that
    did not complete (it makes the summary unofficial and scores as an empty answer, as the
    official scorer would see it); an episode that never ended has no result. A run of several
    epochs is scored one epoch at a time: its epochs together hold each instance several times.
    """
    episodes = run.episodes.all() if epoch is None else run.episodes.filter(epoch=epoch)
    episodes = episodes.select_related("instance__task").order_by(
        "instance__task__code", "instance__position", "instance_id"
    )
    items = defaultdict(list)
    for episode in episodes:
        completed = episode.status == Status.COMPLETED
        items[episode.instance.task.code].append(
            scoring_item(
                episode.instance,
                episode.prediction if completed else None,
                submitted=episode.status in (Status.COMPLETED, Status.FAILED),
                completed=completed,
            )
        )
    return {code: score_task(code, task_items) for code, task_items in sorted(items.items())}


def _scalars(metrics: dict) -> dict:
    return {
        key: value
        for key, value in metrics.items()
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    }


def mean_of_primaries(summaries: dict[str, dict]) -> float | None:
    """The mean of the six primary scores, whether or not they are official; None without all six tasks."""
    if sorted(summaries) != list(TASK_IDS):
        return None
    scores = [summaries[task]["primary_score"] for task in TASK_IDS]
    if any(score is None for score in scores):
        return None
    return sum(float(score) for score in scores) / len(scores)


def run_report(run: Run, summaries: dict[str, dict] | None = None) -> dict:
    """A run's outcome as JSON-ready data: episodes, usage, each task's metrics, and Overall.

    ``tasks`` maps each task to its primary metric and score, whether that is official, why
    not, its completeness and its scalar metrics under the official names. ``overall`` is the
    mean of the six primary scores when the run covers all six tasks, and ``overall_official``
    says whether it is the official Overall (all six summaries official).

    A run of several epochs reports its leaderboard summary instead: each task's means over
    epochs, each scored on its own, with an ``epochs`` entry (per-epoch primary scores, their
    standard deviation, flip rate, and pass^k and pass@k for T1-T4), and ``overall_epochs``.
    """
    run = Run.objects.select_related("model", "suite__release").get(pk=run.pk)
    if run.epochs > 1:
        return _epochs_report(run)
    summaries = task_summaries(run) if summaries is None else summaries
    tasks = {
        code: {
            "primary_metric": summary["primary_metric"],
            "primary_score": summary["primary_score"],
            "official": summary["official"],
            "reasons": summary["reasons"],
            "n_items": summary["n_items"],
            "completeness": summary["completeness"],
            "metrics": _scalars(summary["metrics"]),
        }
        for code, summary in summaries.items()
    }
    return json_safe({
        **_report_head(run),
        "tasks": tasks,
        "overall": mean_of_primaries(summaries),
        "overall_official": official_overall(summaries) is not None,
    })


def _report_head(run: Run) -> dict:
    return {
        "run_id": run.pk,
        "name": run.name,
        "status": run.status,
        "source": run.source,
        "model": run.model.name,
        "provider_model": run.model.provider_model,
        "suite": run.suite.name,
        "synthetic": run.suite.is_synthetic,
        "episodes": run.progress(),
        "usage": {
            **{name: getattr(run, name) for name in TOKEN_FIELDS},
            "cost_usd": None if run.cost_usd is None else float(run.cost_usd),
        },
    }


def _epochs_report(run: Run) -> dict:
    """``run_report`` of a run of several epochs, from its up-to-date leaderboard summary."""
    summary = refresh_run_summary(run)
    tasks = {
        code: {
            "primary_metric": scored["primary_metric"],
            "primary_score": scored["primary_score"],
            "official": scored["official"],
            "reasons": scored["reasons"],
            "n_items": scored["completeness"]["expected"],
            "completeness": scored["completeness"],
            "metrics": _scalars(scored["metrics"]),
            "epochs": scored["epochs"],
        }
        for code, scored in summary.tasks.items()
    }
    return json_safe({
        **_report_head(run),
        "epochs": run.epochs,
        "tasks": dict(sorted(tasks.items())),
        "overall": summary.overall,
        "overall_official": summary.overall_official,
        "overall_epochs": overall_over_epochs(summary.tasks),
    })

