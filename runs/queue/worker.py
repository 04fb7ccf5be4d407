"""A queue worker's side of a run: getting a process ready, playing an episode under a lease, keeping its run going.

- One django-q2 task per episode (``runs.tasks.run_episode_task`` calls ``execute_episode``).
  The episode engine claims the episode atomically (pending → running), so a duplicate task,
  or one for a finished episode, does nothing.
- A task delivered again for a stale episode (the broker redelivers unacknowledged tasks after
  ``Q_CLUSTER["retry"]``) recovers it first (``runs.queue.leases``); so does every task of the
  same run when it ends, and, every minute, the sweep of ``runs.sweep``.
- Provider errors are retried in one layer only (``runs.model.agent.ModelAgent``); what is left
  is an infrastructure failure: the episode fails, is not scored and can be resumed.
- After each episode the task looks after its run (``look_after_run``): stale episodes are
  recovered, the next pending ones sent, the run finished once nothing is left
  (``runs.services.finish_run``), and its leaderboard summary refreshed
  (``runs.signals.episodes_ended``; the leaderboard coalesces them).

Rate limits are ``runs.model.rate_limit``'s; episodes played here get them through ``_agent_for``.
"""
from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from runs.agents import build_agent, is_baseline
from runs.episode.engine import load_episode, run_episode
from runs.episode.opening import episode_tools
from benchmark.wording import PROMPT_SETS, PromptSetUnavailable, prompt_set
from runs.model.litellm_transport import preload_litellm, warm_up
from runs.model.rate_limit import RateLimitedAgent, RateLimits
from runs.models import FINISHED, Episode, Run, Status
from runs.queue.dispatch import release_episodes
from runs.queue.leases import heartbeat, recover_stale_episode, stale_episodes
from runs.services import finish_run
from runs.signals import episodes_ended

logger = logging.getLogger(__name__)


_settled_pid: int | None = None


# glibc's mallopt parameters, and the values set: arrays up to 32 MB (glibc's largest threshold)
# come from the heap rather than a mapping of their own, and up to 512 MB of freed heap is kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES, _TRIM_THRESHOLD_BYTES = 32 * 2**20, 512 * 2**20


@cache
def keep_freed_memory() -> bool:
    """Have the C allocator keep freed memory for reuse (glibc only); True when it was told.

    By default glibc gives each large block (a tool's temporary array of a long recording) a
    mapping of its own and returns it on free, so every call faults in and zeroes fresh pages
    (half the page faults of a T5 and a T6 session's tools in a fresh process). The memory kept
    is bounded by the largest set of temporaries a process holds at once. The allocator is told
    once per process; a child forked from it keeps the setting.
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


# The C heap a worker touches as it starts, for its tools' temporaries: the tools of one of
# bench/scale.py's sessions (a 10-hour night, an hour of 23 channels) grow a worker's heap by about
# 20 MB, every page of it faulted in and zeroed by the kernel during the episode.
HEAP_RESERVE_BYTES = 32 * 2**20


def fault_in_heap(nbytes: int = HEAP_RESERVE_BYTES) -> bool:
    """Touch ``nbytes`` of the C heap and free them again, for later allocations to reuse; True when done.

    A process that keeps freed memory (``keep_freed_memory``) then serves the tools' temporary
    arrays from pages it already has: in ``bench/scale.py``'s part 4, an episode's tools took
    1,470 page faults and 33-36 ms of processor time instead of 4,400 and 43-53 ms. Touched in
    blocks below the allocator's mapping threshold, so that they come from the heap and stay in
    it once freed. Nothing is done where freed memory is not kept (it would go straight back).
    """
    if not keep_freed_memory():
        return False
    import numpy as np

    block = min(nbytes, _MMAP_THRESHOLD_BYTES // 8)
    blocks = []
    for _ in range(max(nbytes // block, 1)):
        touched = np.empty(block, dtype=np.uint8)
        touched.fill(1)
        blocks.append(touched)
    del blocks, touched
    return True


def settle_process(*, model: str | None) -> None:
    """Get this process ready to play episodes of ``model`` (of any model when None), once per process.

    The modules episodes use are imported (litellm for a model, whose import alone makes
    about half a million objects and takes seconds), then everything allocated so far is
    moved out of the garbage collector's sight (``gc.freeze``): these objects live as long
    as the process, and a full collection walking them stops every episode thread of the
    process for a quarter of a second. A queue cluster calls it with None before it forks
    its workers (``manage.py qcluster``, which imports the queue task's module first), so that
    they share these modules (with the EDF writer of their tool rehearsal, ``rehearse_tools``)
    rather than each import them again.

    The C allocator is also told to keep freed memory for reuse (``keep_freed_memory``): the
    tools' large temporary arrays then reuse pages the process already has, instead of asking
    the kernel for fresh ones, zeroed page by page, on every call.
    """
    global _settled_pid
    if _settled_pid == os.getpid():
        return
    keep_freed_memory()
    import tools_app.views  # noqa: F401  (a tool result's text, which every tool call's step records)
    from tools_app.registry import function_schemas

    function_schemas()
    for name in PROMPT_SETS:  # the wording of either prompt set a run may have been created with
        try:
            prompt_set(name)
        except PromptSetUnavailable:
            continue
        except Exception:  # a broken install of the official package: its runs' episodes will say so
            logger.exception("the prompt set %r could not be loaded ahead", name)
    if model is None:
        preload_litellm()
        import benchmark.demo.raw  # noqa: F401  (the EDF writer of the workers' tool rehearsal, 40 modules)
    elif not is_baseline(model):
        import litellm  # noqa: F401
    gc.freeze()
    _settled_pid = os.getpid()


def batch_scheduling() -> bool:
    """Have the kernel schedule this process as batch work (Linux's ``SCHED_BATCH``); True when it does.

    An episode's turns are short bursts of work between model calls of hundreds of
    milliseconds. Scheduled as batch work, a burst runs to its end instead of being preempted
    each time another worker's reply arrives, so the processor's caches serve one episode at a
    time: in ``bench/scale.py``'s part 4 (36 workers on 2 processors) a turn took 13.6-15.6 ms of
    processor time instead of 14.1-17.5 ms. Pages served from the same machine keep their
    interactive priority over the workers.
    """
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:  # not Linux: the default policy stays
        return False
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError:
        return False
    return True


#: What a worker logs once it has warmed up (its name, pid and the warm-up's processor time, ms).
WARMED_UP = "%s (pid %d) warmed up in %.0f ms of processor time; ready for episodes"


#: The calls of a worker's rehearsal: each of the ten tools once, as an episode's first calls make them.
REHEARSAL = (
    ("get_recording_info", {}),
    ("get_channel_list", {}),
    ("compute_noise_metrics", {}),
    ("compute_band_power", {}),
    ("compute_psd", {"fmax": 40}),
    ("compute_temporal_features", {}),
    ("compute_windowed_features", {"window_sec": 10}),
    ("detect_transients", {}),
    ("compute_channel_correlation", {}),
    ("compute_asymmetry", {}),
)
_REHEARSAL_SECONDS, _REHEARSAL_RATE = 60, 100  # a minute at 100 Hz: too short for any statistics to be kept


def rehearse_tools() -> int:
    """Call each tool once on a minute of EEG of this process's own; returns how many calls gave a result.

    A worker's first tool calls touch, and so copy, the memory pages of the tool code and the
    numerical libraries it shares with the process it was forked from, and grow its heap: in
    ``bench/scale.py``'s part 4 a worker's first episode took about 1,500 page faults in its
    tools where its second took 300; rehearsed, part 4 ran at 71-74 % of ideal against 69-71 %
    without (four alternating runs each). The recording (two EEG channels, a left and a right one,
    written as EDF to a temporary directory, removed afterwards) is too short for its statistics
    to be computed or kept (``tools_app.signal``): nothing is written anywhere else, and the
    process's recording cache, which holds nothing else before a worker's first task, is
    emptied of it.
    """
    import tempfile
    from datetime import datetime
    from pathlib import Path

    import numpy as np

    from benchmark.demo.raw import EdfSignal, write_edf
    from tools_app.recording import clear_recording_cache
    from tools_app.registry import call_tool

    noise = np.random.default_rng(0).normal(0.0, 20.0, size=(2, _REHEARSAL_SECONDS * _REHEARSAL_RATE))
    given = 0
    with tempfile.TemporaryDirectory(prefix="eegab-rehearsal-") as directory:
        path = write_edf(
            Path(directory) / "rehearsal.edf",
            [EdfSignal(label, samples, _REHEARSAL_RATE) for label, samples in zip(("EEG C3-A2", "EEG C4-A1"), noise)],
            patient="X", recording="rehearsal", start=datetime(2000, 1, 1), record_duration=1.0,
        )  # fmt: skip
        for tool_name, arguments in REHEARSAL:
            result = call_tool(path, tool_name, {"record_id": "rehearsal", **arguments}, record_id="rehearsal")
            given += "error" not in result
        clear_recording_cache()
    return given


#: An episode id no episode has (ids count up from 1): what the warm-up loads.
NO_EPISODE = -1


def open_database() -> None:
    """Make this process's first database query, the one an episode starts with, and keep the connection.

    The query loads an episode that does not exist (``NO_EPISODE``), as ``load_episode`` loads
    each one: the query is compiled once per process, here. A process's first query also opens
    its connection: Django sets it up and, with SQLite, the schema is read and the connection's
    page cache filled afresh. In a worker that is about 5 ms of processor time and 900 page
    faults, which every worker of a cluster would otherwise spend as its first episode starts,
    all of them at once when a run is queued: in ``bench/scale.py``'s part 4, 68 % of ideal on
    average over eight runs without it, 73 % with it. The connection is left open: the task's
    start closes it as the end of a request does, and a SQLite connection so closed goes back
    to the process's pool (``config.sqlite``) for the task to take; another database's is kept
    for ``CONN_MAX_AGE``.
    """
    load_episode(NO_EPISODE)


def warm_worker(name: str = "worker") -> None:
    """Get a queue worker that has just started ready for its first episode, before it takes a task.

    The worker is scheduled as batch work (``batch_scheduling``), faults in the heap its tools'
    temporaries will use (``fault_in_heap``), makes its first litellm calls here, answered by
    a loopback server (``warm_up``), calls each tool once on a recording of its own
    (``rehearse_tools``) and opens its database connection (``open_database``), rather than
    in its first episode: the state each process builds on a first call, and the pages it
    touches, are then ready. ``manage.py qcluster`` has each worker call it as the worker
    starts, with the worker's ``name``. A warm-up step that fails is logged and the worker
    goes on: its first episode then does what the step would have. Either way the worker logs
    (at INFO, as ``WARMED_UP``) that it is ready: a cluster whose workers have all said so
    plays a run without their warm-ups (about 120 ms of processor time each) competing with
    its episodes.
    """
    started = time.process_time()
    batch_scheduling()
    fault_in_heap()
    for step, failed in (
        (warm_up, "the worker's warm-up failed; its first model call will build what it would have"),
        (rehearse_tools, "the worker's tool rehearsal failed; its first tool calls will do what it would have"),
        (open_database, "the worker could not query its database as it warmed up; its first episode will connect"),
    ):
        try:
            step()
        except Exception:
            logger.exception(failed)
    logger.info(WARMED_UP, name, os.getpid(), 1000 * (time.process_time() - started))


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
