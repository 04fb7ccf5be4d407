"""A run played in this process (``run_benchmark --sync``): episodes on a pool of threads, tool calls in tool processes."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed

from django.db import connections
from django.utils import timezone

from runs.agents import is_baseline
from runs.model import openai_http
from runs.models import Episode, Run, Status
from runs.queue.dispatch import PLAY_ORDER
from runs.queue.worker import play_episode, settle_process
from runs.services import finish_run
from runs.signals import episodes_ended
from tools_app.processes import ToolProcesses, shared_tool_processes


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
    ids = list(run.episodes.filter(status=Status.PENDING).order_by(*PLAY_ORDER).values_list("id", flat=True))
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
