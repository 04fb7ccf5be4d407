"""The episode engine: what every player of an episode drives, from its claim to its score.

The queue worker and ``--sync`` drive it through ``run_episode``, the environment API
(``runs.environment``) one request at a time:

- ``claim_episode`` moves a pending episode to running as this attempt, atomically (two callers
  never both get it), and starts its run: the only claim.
- ``open_episode`` builds the episode's opening once (the prompt set's messages and tool
  specs), makes its loop (``runs.episode.loop.EpisodeLoop``) and records the prompt step.
- ``EpisodeLoop.begin_turn`` and ``EpisodeLoop.end_turn(reply)`` play one turn;
  ``EpisodeLoop.play`` plays them all, asking the loop's agent for each reply.
  ``resume_episode`` takes an attempt up where its stored record left it (one turn per request).
- ``finish_episode`` stores how the episode ended; a completed episode is scored at once with
  the official scorer, on this one item.

An episode played by ``run_episode`` always has a wall-clock cap, ``EEGAB_EPISODE_WALL_SEC``,
shorter than the queue worker's timeout, which would otherwise kill it (``played_limits``).
"""
from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from django.utils import timezone

from benchmark.models import Release
from benchmark.wording import PromptSetUnavailable
from runs import db
from runs.agents import build_agent
from runs.episode.failures import classify_episode
from runs.episode.limits import EpisodeLimits, played_limits
from runs.episode.loop import EndedBy, EpisodeLoop, Kind, Outcome, ToolBug
from runs.episode.opening import episode_tools, opening, run_wording
from runs.episode.scoring import score_prediction
from runs.model.reply import Agent
from runs.models import Episode, Run, Status, Step
from runs.services import append_step

logger = logging.getLogger(__name__)

# ── loading an episode ───────────────────────────────────────────────────────────────────────

# What the loop reads with an episode: its run and model, its instance with its task, and the
# release root its recording lies under (not the release's file list).
EPISODE_RELATED = ("run__model", "instance__task", "instance__suite__release")
EPISODE_DEFERRED = tuple(Release.unread("instance__suite__release"))


_episode_for_loop = db.PreparedGet(
    lambda: Episode.objects.select_related(*EPISODE_RELATED).defer(*EPISODE_DEFERRED)
)


def load_episode(episode_id: int) -> Episode | None:
    """The episode with everything the loop reads of it, in one query; None when it does not exist."""
    return _episode_for_loop(episode_id)


# ── the service ──────────────────────────────────────────────────────────────────────────────


def _prompt_set_missing(episode: Episode, message: str) -> Episode:
    """End an episode whose prompt set cannot be read here: a worker without the official package.

    Nothing was sent to a model, so it is an infrastructure failure: not scored, and re-runnable
    once the package is installed (``resume_run``).
    """
    append_step(episode=episode, kind=Kind.ERROR, error=message)
    outcome = Outcome(Status.FAILED, error_kind=Episode.ErrorKind.INFRASTRUCTURE, error_message=message)
    if not finish_episode(None, episode, outcome):
        episode.refresh_from_db()
    return episode


def record_crash(loop: EpisodeLoop | None, episode: Episode, exc: Exception, *, message: str | None = None) -> Outcome:
    """Record the traceback of an unexpected error while playing ``episode`` (a platform bug); the outcome it ends in.

    Call it while handling ``exc``. A tool that raised (``ToolBug``) fails the episode with error
    kind ``tool_bug``. The episode's error message is ``message``, by default the exception's type
    and text. Through ``loop`` the step is written only while the attempt is still ours (else
    ``runs.db.EpisodeLost`` is raised); without one it is appended as it is.
    """
    details = traceback.format_exc()
    if loop is None:
        append_step(episode=episode, kind=Kind.ERROR, error=details)
    else:
        loop.record(Kind.ERROR, error=details)
    kind = Episode.ErrorKind.TOOL_BUG if isinstance(exc, ToolBug) else ""
    return Outcome(Status.FAILED, error_kind=kind, error_message=message or f"{type(exc).__name__}: {exc}")


def finish_episode(loop: EpisodeLoop | None, episode: Episode, outcome: Outcome) -> bool:
    """Store how the episode ended, scored when it completed, and the run's new totals.

    Returns whether the outcome was stored: not when the episode stopped being ours in between
    (a reset or a cancel wins). When it was, ``episode`` holds the stored values too.
    """
    scored = outcome.status == Status.COMPLETED
    values = {
        "status": outcome.status,
        "ended_by": outcome.ended_by,
        "final_answer": outcome.final_answer,
        "prediction": outcome.prediction,
        "scores": score_prediction(episode.instance, outcome.prediction) if scored else {},
        "error_kind": outcome.error_kind,
        "error_message": outcome.error_message,
        "finished_at": timezone.now(),
        **(loop.usage_fields() if loop is not None else {}),
    }
    # One statement, and only while the episode is still ours.
    stored = db.update_episode(episode.pk, values, status=Status.RUNNING, attempt=episode.attempt) == 1
    if stored:
        for name, value in values.items():
            setattr(episode, name, value)
        if outcome.status != Status.CANCELLED:
            store_failure_modes(episode)
    db.refresh_run_totals(episode.run_id)
    return stored


def store_failure_modes(episode: Episode) -> None:
    """Classify an ended episode's failure modes and evidence coverage (``runs.failures``) and store them.

    A defect of the classification is logged and leaves them blank (``manage.py classify_episodes``
    fills them later): it never costs the episode its stored outcome.
    """
    try:
        modes, coverage = classify_episode(episode)
    except Exception:
        logger.exception("episode %s: its failure modes could not be classified", episode.pk)
        return
    codes = failure_codes(modes)
    Episode.objects.filter(pk=episode.pk, attempt=episode.attempt).update(
        failure_modes=modes, failure_codes=codes, evidence_coverage=coverage
    )
    episode.failure_modes, episode.failure_codes, episode.evidence_coverage = modes, codes, coverage


def failure_codes(modes: Sequence[dict]) -> str:
    """The codes of ``modes`` as ``Episode.failure_codes`` keeps them: each between spaces, for a filter
    (``failure_codes__contains=" repeated_call "``); blank for none."""
    return f" {' '.join(mode['code'] for mode in modes)} " if modes else ""


def end_at_cap(episode: Episode, *, lived_sec: float) -> bool:
    """End a running attempt whose worker was lost after ``lived_sec`` seconds, if it had reached a cap.

    The loop checks its caps between turns, so a model call or a tool still under way at the
    wall-clock cap can outlast the queue worker's timeout, which kills the worker. Such an
    attempt had reached its cap: it ends as the cap ends one, scored unanswered with the
    counters its last turn stored, rather than being played again from the start to the same
    end. Returns whether it was ended: not when it had reached no cap, nor when it no longer
    runs as its attempt.
    """
    cap = played_limits(episode).cap_reached(
        elapsed_sec=lived_sec,
        total_tokens=episode.prompt_tokens + episode.completion_tokens,
        cost_usd=episode.cost_usd,
    )
    if not cap:
        return False
    step = Step(
        episode_id=episode.pk,
        index=episode.steps.count(),
        kind=Kind.ERROR,
        error=f"stopped: {cap}; its worker was lost in a model call or a tool that outlasted the cap",
    )
    try:
        db.insert_step(step, attempt=episode.attempt)
    except db.EpisodeLost:
        return False
    return finish_episode(None, episode, Outcome(Status.COMPLETED, EndedBy.COST_CAP, prediction={}, error_message=cap))


def claim_episode(episode_id: int, *, loaded: Episode | None = None) -> Episode | None:
    """Claim the pending episode ``episode_id`` for its current attempt and start its run.

    The episode moves pending → running in one conditional statement, so of two callers at once
    only one gets it. Returns the claimed episode (``loaded``, when it is the episode as
    ``load_episode`` read it just before, saves reading it again), or None when the episode
    was not pending (running elsewhere, finished, or missing).
    """
    now = timezone.now()
    claimed = db.update_episode(
        episode_id, {"status": Status.RUNNING, "started_at": now, "heartbeat_at": now}, status=Status.PENDING
    )
    if claimed != 1:
        return None
    episode = loaded if loaded is not None and loaded.pk == episode_id else load_episode(episode_id)
    episode.status, episode.started_at, episode.heartbeat_at = Status.RUNNING, now, now
    if episode.run.status == Status.PENDING:
        Run.objects.filter(pk=episode.run_id, status=Status.PENDING).update(status=Status.RUNNING, started_at=now)
    return episode


def open_episode(
    episode: Episode,
    *,
    agent: Agent | None = None,
    tool_runner: Callable[[Any, str, dict], dict] | None = None,
    build_messages: Callable[..., list[dict]] | None = None,
    tool_specs: Sequence[dict] | None = None,
    limits: EpisodeLimits | None = None,
) -> EpisodeLoop:
    """Open a claimed episode: build its opening once, make its loop, and record the prompt step.

    Raises ``PromptSetUnavailable`` when the run's prompt set cannot be read here. The arguments
    are ``run_episode``'s; ``limits`` defaults to the run's (``EpisodeLimits.for_episode``).
    """
    wording = run_wording(episode.run)
    instance = episode.instance
    specs, messages = opening(
        instance, wording, record_id=episode.record_id, tool_specs=tool_specs, build_messages=build_messages
    )
    loop = EpisodeLoop(
        episode,
        agent=agent or build_agent(episode.run, instance, record_id=episode.record_id, epoch=episode.epoch),
        tool_runner=tool_runner or episode_tools(episode),
        messages=messages,
        tool_specs=specs,
        wording=wording,
        n_steps=0,  # a claimed attempt starts with no steps: a retry deletes the earlier attempt's
        limits=limits,
    )
    loop.open()
    return loop


def resume_episode(episode: Episode, *, agent: Agent) -> EpisodeLoop:
    """The loop of a running attempt, taken up where its stored record left it (``EpisodeLoop.resume``).

    For an episode played one turn per request (``runs.environment``), whose loop lives no
    longer than one turn: its conversation is the stored record, not the loop's.
    """
    loop = EpisodeLoop(
        episode, agent=agent, tool_runner=episode_tools(episode), messages=[], tool_specs=[],
        wording=run_wording(episode.run),
    )
    loop.resume()
    return loop


def run_episode(
    *,
    episode_id: int,
    agent: Agent | None = None,
    tool_runner: Callable[[Any, str, dict], dict] | None = None,
    build_messages: Callable[..., list[dict]] | None = None,
    tool_specs: Sequence[dict] | None = None,
    loaded: Episode | None = None,
) -> Episode:
    """Play the pending episode ``episode_id`` to its end, record every step, and score it.

    An episode that is not pending (running elsewhere, or finished) is left as it is: two
    workers never play the same episode, and a finished one is never played again.

    Parameters
    ----------
    episode_id : int
    agent : Agent, optional
        Defaults to the run's model (``runs.agents.build_agent``).
    tool_runner : callable, optional
        ``tool_runner(instance, tool_name, arguments) -> dict``; defaults to the platform's tools
        (``episode_tools``)
        on the instance's recording. A tool that raises is a platform bug: the episode fails
        with error kind ``tool_bug`` and the exception propagates.
    build_messages : callable, optional
        ``build_messages(instance, *, tool_specs) -> [system, user]``; defaults to the opening
        messages of the run's prompt set (``benchmark.wording``), which gives every other text too.
    tool_specs : sequence of dict, optional
        The tools' OpenAI function specs; defaults to the prompt set's.
    loaded : Episode, optional
        The episode as ``load_episode`` read it just before, which saves reading it again.

    Returns
    -------
    Episode
        The episode as stored at the end.
    """
    episode = claim_episode(episode_id, loaded=loaded)
    if episode is None:
        episode = load_episode(episode_id)
        if episode is None:
            raise Episode.DoesNotExist(f"Episode {episode_id} does not exist.")
        return episode

    loop = None
    try:
        try:
            loop = open_episode(
                episode, agent=agent, tool_runner=tool_runner, build_messages=build_messages,
                tool_specs=tool_specs, limits=played_limits(episode),
            )
        except PromptSetUnavailable as exc:
            return _prompt_set_missing(episode, str(exc))
        stored = finish_episode(loop, episode, loop.play())
    except db.EpisodeLost:
        # It stalled past its lease and a newer attempt has it, or it ended: nothing more of ours is written.
        return load_episode(episode_id)
    except Exception as exc:
        try:
            outcome = record_crash(loop, episode, exc)
        except db.EpisodeLost:
            return load_episode(episode_id)
        finish_episode(loop, episode, outcome)
        raise
    if not stored:
        episode.refresh_from_db()
    return episode
