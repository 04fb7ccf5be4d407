"""The environment API's services: an external agent framework plays a run's episodes one action at a time.

An external run is an ordinary run (``Run.Source.EXTERNAL``) of a ``ModelSpec`` named after the
agent (family ``external``), with one ``EnvironmentToken``. Its episodes go through the episode
engine of ``runs.episode.engine``, one request per turn:

- ``start_episode`` claims a pending episode (``claim_episode``: pending → running, atomically,
  so two requests never get the same one), opens it (``open_episode``: its prompt step) and
  returns the system and user prompts, the tools the instance allows and its output schema.
- ``take_action`` plays one turn: the posted action, as JSON text, is the agent's reply to the
  turn (``EpisodeLoop.begin_turn``, ``EpisodeLoop.end_turn``), read by the official
  text-protocol parser and carried out as any agent's: the same tools on the episode's own
  record, the same budget, limits, repair nudges and step record. Between requests the loop's
  state is its stored record (``resume_episode``).
- A turn is claimed by moving ``Episode.n_turns`` on by one while it still has the value read,
  so two actions sent at once on one episode cannot both be played; each action also renews
  the episode's lease (``heartbeat_at``). Different episodes of a run run concurrently.
- An episode that ends is scored with the official scorer; the run ends (``finish_run``) once
  none of its episodes is pending or running, and its leaderboard summary is refreshed
  (``runs.signals.episodes_ended``, which the leaderboard coalesces: at most every few seconds
  while the run plays, and always once it has ended).
- A person plays the same way from the site's play pages (``leaderboard.play``): their runs are
  external runs of a ``human/<username>`` spec (family ``human``), and their episodes are never
  ended for idleness, so a player can stop and come back.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchmark.models import ModelSpec, Suite
from benchmark.wording import PromptSetUnavailable
from runs import db
from runs.agents import EXTERNAL_FAMILY, HUMAN_FAMILY
from runs.cost import Pricing
from runs.episode.engine import (
    claim_episode,
    finish_episode,
    load_episode,
    open_episode,
    record_crash,
    resume_episode,
)
from runs.episode.limits import EpisodeLimits
from runs.episode.loop import Outcome, ToolBug
from runs.episode.opening import allowed_tool_names, episode_tools, run_wording, spec_name
from runs.episode.transcript import step_messages
from runs.model.reply import Reply
from runs.models import FINISHED, EnvironmentToken, Episode, Run, Status, Step, default_decoding_settings
from runs.redaction import public_error
from runs.services import create_run, finish_run
from runs.signals import episodes_ended
from tools_app.processes import call_for_request

KEY_PREFIX = "eegab_"
# What an agent is told of the score of its ended episode: the metric values, never the reference
# or what restates it (the gold label, the reference's events or subject, their counts).
AGENT_SCORES = {
    "T1": ("correct",), "T2": ("correct",), "T3": ("correct",), "T4": ("correct",),
    "T5": ("event_f1", "sensitivity", "precision", "fp_per_24h", "dice"),
    "T6": ("macro_f1", "cohen_kappa"),
}


def agent_scores(episode: Episode) -> dict | None:
    """The metric values of ``episode``'s score an agent may read; None on a held-out suite (its answer was received)."""
    if episode.instance.suite.is_held_out:
        return None
    return {key: episode.scores[key] for key in AGENT_SCORES[episode.instance.task.code] if key in (episode.scores or {})}


class EnvironmentRefused(Exception):
    """A request the environment refuses; ``status`` is the HTTP status that says why."""

    status = 400


class Conflict(EnvironmentRefused):
    """The episode or run is not in a state that allows the request (finished, not started, busy)."""

    status = 409


class Unavailable(EnvironmentRefused):
    """The server cannot serve the run's episodes now (its prompt set cannot be read here)."""

    status = 503


class ExternalAgent:
    """The agent of an external run, as the loop sees it: text protocol, no price known."""

    protocol = "text"
    pricing = Pricing()

    def respond(self, messages, *, tools=None):
        raise RuntimeError("An external agent answers over the environment API; the platform never asks it.")


# ── runs and tokens ──────────────────────────────────────────────────────────────────────────


def human_model_name(username: str) -> str:
    """The model name (and provider model) of a person's runs on the play pages: ``human/<username>``."""
    return f"{HUMAN_FAMILY}/{username}"


def agent_spec(agent: str, *, human: bool = False) -> ModelSpec:
    """The ``ModelSpec`` of external agent ``agent``, created when there is none.

    ``human``: ``agent`` is the username of a person playing in the browser; the spec is
    ``human/<username>`` (name and provider model), family ``human``.
    """
    agent = agent.strip()
    if not agent:
        raise ValueError("Name the agent.")
    if human:
        name = provider_model = human_model_name(agent)
        defaults = {"family": HUMAN_FAMILY, "notes": "A person, playing episodes on the site's play pages."}
    else:
        name, provider_model = agent, f"{EXTERNAL_FAMILY}/{agent}"
        defaults = {
            "family": EXTERNAL_FAMILY,
            "notes": "An external agent framework, driven through the environment API.",
        }
    spec, _ = ModelSpec.objects.get_or_create(name=name, defaults={"provider_model": provider_model, **defaults})
    if spec.provider_model != provider_model:
        raise ValueError(f"The name {name!r} is already used for the model {spec.provider_model}.")
    return spec


def issue_token(*, run: Run) -> str:
    """Give ``run`` a new environment key (replacing any earlier one) and return the key, shown only now."""
    if run.source != Run.Source.EXTERNAL:
        raise ValueError(f"Run {run.pk} is {run.get_source_display()}; only external runs get an environment token.")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    EnvironmentToken.objects.update_or_create(
        run=run, defaults={"key_hash": EnvironmentToken.hash_key(key), "revoked": False}
    )
    return key


def token_for_key(key: str) -> EnvironmentToken | None:
    """The live token whose key is ``key``, or None."""
    return (
        EnvironmentToken.objects.select_related("run")
        .filter(key_hash=EnvironmentToken.hash_key(key), revoked=False)
        .first()
    )


@transaction.atomic
def open_external_run(
    *,
    agent: str,
    suite: Suite,
    tasks: list[str],
    name: str = "",
    limit: int | None = None,
    limits: dict | None = None,
    created_by=None,
    prompt_set: str | None = None,
    human: bool = False,
) -> tuple[Run, str]:
    """Create an external run of ``agent`` on ``suite`` (one pending episode per instance) and its key.

    ``limits`` are the run's caps (``runs.episode.limits.EpisodeLimits``); ``prompt_set`` the wording its agent
    reads (``benchmark.wording``; by default official where the package is installed). The run
    records the official configs' decoding settings, which the agent is advised to use with its
    model. ``human``: ``agent`` is a player's username (``agent_spec``). Returns the run and the key.
    """
    run = create_run(
        suite=suite,
        model=agent_spec(agent, human=human),
        tasks=tasks,
        name=name or f"{agent} on {suite.name}",
        limit=limit,
        limits=limits or {},
        settings=default_decoding_settings(),
        prompt_set=prompt_set,
        source=Run.Source.EXTERNAL,
        created_by=created_by,
    )
    return run, issue_token(run=run)


# ── episodes ─────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class EpisodeStart:
    """What an agent gets when its episode starts."""

    episode: Episode
    messages: list[dict]
    tools: list[dict]
    output_schema: dict
    limits: dict


def start_episode(*, run: Run, record_id: str = "") -> EpisodeStart:
    """Start the run's next pending episode (by position), or the one on ``record_id``, and record its prompt."""
    run.refresh_from_db(fields=["status"])
    if run.status in FINISHED:
        raise Conflict(f"Run {run.pk} has ended ({run.status}); it takes no new episodes.")
    try:
        with transaction.atomic():  # an episode that cannot be opened is not left claimed without its prompt
            claimed = _claim_next(run, record_id)
            # Opened as every episode is, in the run's prompt set; the agent is handed the specs of the allowed tools.
            loop = open_episode(claimed, agent=ExternalAgent())
    except PromptSetUnavailable as exc:
        raise Unavailable(str(exc)) from None
    return _offer(claimed, loop.opening, loop.tool_specs)


def _claim_next(run: Run, record_id: str) -> Episode:
    """Claim the run's episode on ``record_id``, or else its next pending one; Conflict when there is none."""
    if record_id:
        episode = run.episodes.filter(record_id=record_id).first()
        if episode is None:
            raise EnvironmentRefused(f"Run {run.pk} has no episode on record {record_id!r}.")
        claimed = claim_episode(episode.pk)
        if claimed is None:
            raise Conflict(f"The episode on record {record_id!r} has already started ({episode.status}).")
    else:
        # Several requests may race for the next episode: each takes the first one it can claim.
        pending = run.episodes.filter(status=Status.PENDING)
        candidates = pending.order_by("instance__task__code", "instance__position", "id").values_list("id", flat=True)
        claimed = next((episode for pk in candidates if (episode := claim_episode(pk)) is not None), None)
        if claimed is None:
            raise Conflict(f"Run {run.pk} has no pending episode left.")
    return claimed


def started_episode(episode: Episode) -> EpisodeStart:
    """What ``episode``, already started, was offered: its recorded opening messages, tools and output schema.

    For an agent that comes back to an episode it left (a player on the play pages).
    """
    if episode.status == Status.PENDING:
        raise Conflict(f"Episode {episode.pk} has not started; start it first.")
    prompt = episode.steps.filter(kind=Step.Kind.PROMPT).order_by("index").first()
    messages = list(((prompt.result or {}) if prompt is not None else {}).get("messages") or [])
    return _offer(episode, messages, run_wording(episode.run).tool_specs(episode.instance))


def _offer(episode: Episode, messages: list[dict], specs: list[dict]) -> EpisodeStart:
    """The episode's start as the agent gets it: the specs of the tools its instance allows, its schema and caps."""
    instance = episode.instance
    allowed = set(allowed_tool_names(instance))
    limits = EpisodeLimits.for_episode(instance.task, episode.run.limits)  # an external episode's, as its loop's
    return EpisodeStart(
        episode=episode,
        messages=messages,
        tools=[spec for spec in specs if spec_name(spec) in allowed],
        output_schema=instance.expected_output_schema or {},
        limits={"max_turns": limits.max_turns, "max_tool_calls": limits.max_tool_calls},
    )


@dataclass
class ActionResult:
    """What one action did: the environment's reply while the episode goes on, or its end and score."""

    episode: Episode
    done: bool
    status: str
    observation: str = ""
    result: Any = None
    errors: list[str] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        episode = self.episode
        if self.done:
            return {
                "done": True,
                "episode": episode.pk,
                "status": episode.status,
                "ended_by": episode.ended_by,
                "scores": agent_scores(episode),
                "received": episode.final_answer is not None,
                "prediction": episode.prediction,
                "error_message": public_error(episode.error_message),
                "usage": {"turns": episode.n_turns, "tool_calls": episode.n_tool_calls},
            }
        return {
            "done": False,
            "episode": episode.pk,
            "status": self.status,
            "observation": self.observation,
            "result": self.result,
            "errors": self.errors,
            "messages": self.messages,
            "usage": {"turns": episode.n_turns, "tool_calls": episode.n_tool_calls},
        }


def _claim_turn(episode: Episode) -> None:
    """Take the episode's next turn, or raise Conflict when it has ended or another action holds it."""
    if episode.status == Status.PENDING:
        raise Conflict(f"Episode {episode.pk} has not started; start it before acting on it.")
    if episode.status != Status.RUNNING:
        raise Conflict(f"Episode {episode.pk} has ended ({episode.status}); it takes no more actions.")
    taken = Episode.objects.filter(pk=episode.pk, status=Status.RUNNING, n_turns=episode.n_turns).update(
        n_turns=F("n_turns") + 1, heartbeat_at=timezone.now()
    )
    if taken != 1:
        episode.refresh_from_db(fields=["status"])
        if episode.status != Status.RUNNING:
            raise Conflict(f"Episode {episode.pk} has ended ({episode.status}); it takes no more actions.")
        raise Conflict(f"Another action on episode {episode.pk} is under way; send one action at a time.")


def take_action(*, episode: Episode, action: dict) -> ActionResult:
    """Play one turn of a running episode: ``action`` is a text-protocol action object, as the official JSON.

    Raises Conflict for an episode that has not started, has ended, or is busy with another action.
    """
    episode_id, episode = episode.pk, load_episode(episode.pk)
    if episode is None:
        raise Conflict(f"Episode {episode_id} no longer exists.")
    _claim_turn(episode)
    loop = resume_episode(episode, agent=ExternalAgent())
    # In a request, below the server's worker timeout: a call past its deadline is stopped and is the step's result.
    loop.tool_runner = episode_tools(episode, call=call_for_request)
    first_new = loop.n_steps
    try:
        try:
            outcome = loop.begin_turn()
            if outcome is None:  # the agent's reply is its action, as text; nobody timed it
                outcome = loop.end_turn(Reply(content=json.dumps(action, ensure_ascii=False), latency_ms=None))
        except ToolBug as exc:  # the agent is told what the tool did, not the platform's exception type
            outcome = record_crash(loop, episode, exc, message=str(exc))
    except db.EpisodeLost:
        raise Conflict(f"Episode {episode_id} ended or was restarted while this action was under way.") from None
    if outcome is not None:
        finish_episode(loop, episode, outcome)
        _finish_run_if_done(episode.run_id)
        episode.refresh_from_db()
        return ActionResult(episode=episode, done=True, status=episode.status)
    episode.refresh_from_db()
    return _reply(episode, list(episode.steps.filter(index__gte=first_new + 1).order_by("index")))


def _reply(episode: Episode, steps: list[Step]) -> ActionResult:
    """The environment's reply to a turn, from the steps the turn added after the agent's message."""
    reply = ActionResult(episode=episode, done=False, status="ok")
    for step in steps:
        reply.messages.extend(step_messages(step, native=False))
        result = step.result or {}
        if step.kind == Step.Kind.TOOL_CALL:
            reply.status, reply.result = result.get("status", "ok"), result.get("content")
            if step.error:
                reply.errors.append(step.error)
        elif step.kind == Step.Kind.NUDGE:
            if result.get("reason") != "tool_budget_used":
                reply.status = result.get("reason", "nudge")
            reply.errors.extend(result.get("errors") or [])
    reply.observation = "\n\n".join(message["content"] for message in reply.messages)
    return reply


def end_idle_episodes(*, run_id: int | None = None, now=None) -> int:
    """End as abandoned every external episode that has had no action for ``EEGAB_ENV_IDLE_SEC``.

    An agent that walks away leaves its episode running for ever, and its run with it. Such an
    episode ends scored as unanswered (an empty prediction), and its run finishes once every
    episode has. Runs as a django-q2 schedule (every minute, ``runs`` migrations 0006 and 0010) and before
    each environment request of a run (``run_id``). Returns how many episodes were ended.

    A person's episodes (a ``human`` run, played on the play pages) are left alone: a player may
    think for hours, or stop and come back another day, and a run of theirs never ends anyway
    while instances of its suite are left to play.
    """
    from django.conf import settings
    from django.db.models.functions import Coalesce

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.EEGAB_ENV_IDLE_SEC)
    idle = (
        Episode.objects.filter(status=Status.RUNNING, run__source=Run.Source.EXTERNAL)
        .exclude(run__model__family=HUMAN_FAMILY)
        .annotate(last_action=Coalesce("heartbeat_at", "started_at"))
        .filter(last_action__lt=cutoff)
    )
    if run_id is not None:
        idle = idle.filter(run_id=run_id)
    ended = 0
    for episode_id in list(idle.values_list("id", flat=True)):
        episode = load_episode(episode_id)
        if episode is None or episode.status != Status.RUNNING:
            continue
        loop = resume_episode(episode, agent=ExternalAgent())
        message = f"abandoned: no action for {settings.EEGAB_ENV_IDLE_SEC:g} s"
        try:
            loop.record(Step.Kind.ERROR, error=message)
        except db.EpisodeLost:
            continue  # an action or a reset got there first
        outcome = Outcome(Status.COMPLETED, Episode.EndedBy.ABANDONED, prediction={}, error_message=message)
        if finish_episode(loop, episode, outcome):
            ended += 1
            _finish_run_if_done(episode.run_id)
    return ended


def _finish_run_if_done(run_id: int) -> None:
    finish_run(run_id=run_id)
    episodes_ended.send(sender=Run, run_id=run_id)
