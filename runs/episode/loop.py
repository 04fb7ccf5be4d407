"""One attempt at an episode, turn by turn: the official protocol, every step recorded as it happens.

1. The conversation opens with the task's system and user prompts (the prompt step). With the
   native protocol the model is also given the allowed tools and ``submit_final_answer``.
2. Each turn the agent replies once; the reply is read as an action (``runs.protocol``).
   Up to three tool calls run per turn (native calls beyond that get a stub result), at most
   ``max_tool_calls`` in the episode (0 for T1, 999 otherwise); once they are used up the
   model is told so, and an episode that keeps calling tools ends without an answer.
3. A final answer that fails the output-schema check, a turn without a usable action, and a
   tool call past the budget each get a nudge, up to three in a row; the fourth such turn ends
   the episode as a format failure (an invalid final answer is then scored as given, anything
   else as an empty answer). An empty native final answer gets up to two nudges of its own.
4. The episode ends at the final answer, at 1,000 turns, at an optional wall-clock, token
   or cost cap, when its run is cancelled, or when the provider fails after all retries
   (an infrastructure failure: status failed, not scored, re-runnable).

The loop writes only while the episode runs as its attempt (``runs.db``). Claiming, opening and
finishing an episode are ``runs.episode.engine``'s; the step record and the conversation it
replays to are ``runs.episode.transcript``'s.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from benchmark.wording import Wording
from runs import db, protocol
from runs.cost import TokenUsage, total_cost
from runs.episode.limits import MAX_EMPTY_NUDGES, MAX_PROTOCOL_RETRIES, MAX_TOOL_CALLS_PER_TURN, EpisodeLimits
from runs.episode.opening import allowed_tool_names, native_tools
from runs.episode.transcript import step_messages
from runs.model.reply import Agent, FailedAttempt, ProviderError, Reply
from runs.models import TOKEN_FIELDS, Episode, Status, Step

REPAIR_REASONS = ("invalid_action", "invalid_final_answer", "tool_budget")
NOT_ALLOWED = "Tool '{name}' is not allowed for this scenario."

EndedBy = Episode.EndedBy
Kind = Step.Kind


@dataclass(frozen=True)
class Outcome:
    """How an episode ended and what is to be scored."""

    status: str
    ended_by: str = ""
    final_answer: dict | None = None
    prediction: dict | None = None
    error_kind: str = ""
    error_message: str = ""


class ToolBug(Exception):
    """A tool raised instead of returning its error result: a defect of the platform, not of the agent."""


class EpisodeLoop:
    """One attempt at an episode: the conversation, the counters, and the step record."""

    def __init__(
        self,
        episode: Episode,
        *,
        agent: Agent,
        tool_runner,
        messages: list[dict],
        tool_specs: list[dict],
        wording: Wording,
        n_steps: int | None = None,
        limits: EpisodeLimits | None = None,
    ):
        self.episode = episode
        self.wording = wording
        self.attempt = episode.attempt  # steps and counters are written only while this attempt runs
        self.instance = episode.instance
        self.agent = agent
        self.native = agent.protocol == "native"
        self.tool_runner = tool_runner
        self.limits = EpisodeLimits.for_episode(self.instance.task, episode.run.limits) if limits is None else limits
        self.allowed = set(allowed_tool_names(self.instance))
        self.tool_specs = list(tool_specs)
        self.tools = native_tools(self.instance, tool_specs, wording) if self.native else None
        self.opening = messages
        self.history: list[dict] = []
        # The loop numbers the steps of the episode it claimed; a fresh attempt has none yet.
        self.n_steps = episode.steps.count() if n_steps is None else n_steps
        self.started = time.monotonic()
        self.n_turns = 0
        self.n_tool_calls = 0
        self.tokens = dict.fromkeys(TOKEN_FIELDS, 0)
        self.costs: list[Decimal | None] = []
        self.failures = 0  # consecutive turns that needed a repair nudge
        self.empty_nudges = 0

    # bookkeeping

    def record(self, kind: str, **fields) -> Step:
        """Append a step, add its messages to the conversation, and count its tokens and cost."""
        step = Step(episode_id=self.episode.pk, index=self.n_steps, kind=kind, **fields)
        db.insert_step(step, attempt=self.attempt)
        self.n_steps += 1
        self.history.extend(step_messages(step, native=self.native))
        for name in TOKEN_FIELDS:
            self.tokens[name] += fields.get(name) or 0
        self.costs.append(fields.get("cost_usd"))
        return step

    @property
    def cost_usd(self) -> Decimal | None:
        return total_cost(self.costs, priced=self.agent.pricing.is_priced)

    def usage_fields(self) -> dict:
        return {
            "n_turns": self.n_turns,
            "n_tool_calls": self.n_tool_calls,
            **self.tokens,
            "cost_usd": self.cost_usd,
            "wall_time_sec": round(time.monotonic() - self.started, 3),
        }

    def save_progress(self) -> None:
        """Store the counters so far; raise EpisodeLost if the episode no longer runs as this attempt."""
        values = self.usage_fields()
        changed = db.update_episode(self.episode.pk, values, status=Status.RUNNING, attempt=self.attempt)
        db.still_running(changed, self.episode.pk, self.attempt)

    def record_attempts(self, attempts: Sequence[FailedAttempt]) -> None:
        for number, attempt in enumerate(attempts, start=1):
            self.record(
                Kind.ERROR,
                error=f"provider attempt {number} failed: {attempt.error}",
                latency_ms=attempt.latency_ms,
                cost_usd=attempt.cost_usd,
                result={"reason": "provider_attempt"},
                **(attempt.usage or TokenUsage()).as_fields(),
            )

    # the turn

    def open(self) -> None:
        """Record the prompt step: the opening messages, the protocol, the native tools and the prompt set."""
        self.record(
            Kind.PROMPT,
            result={
                "messages": self.opening,
                "protocol": self.agent.protocol,
                "tools": self.tools,
                "prompt_set": self.wording.name,
            },
        )

    def play(self) -> Outcome:
        """Play the opened episode to its end, asking the agent for each turn's reply."""
        while True:
            outcome = self.begin_turn()
            if outcome is not None:
                return outcome
            try:
                reply = self.agent.respond(list(self.history), tools=self.tools)
            except ProviderError as failure:
                return self.provider_failed(failure)
            outcome = self.end_turn(reply)
            if outcome is not None:
                return outcome

    def begin_turn(self) -> Outcome | None:
        """Start the next turn: the episode's end when its run was cancelled, a cap or the turn limit was reached, else None.

        A turn that starts is counted.
        """
        if self.n_turns >= self.limits.max_turns:  # a task that allows no turn at all
            return self.turn_limit_reached()
        outcome = self.stop_requested()
        if outcome is None:
            self.n_turns += 1
        return outcome

    def end_turn(self, reply: Reply) -> Outcome | None:
        """Carry out the agent's reply to the turn begun: record it, act on it, and save the counters.

        Returns the outcome when the turn ended the episode (its action did, or it was the last
        turn the limits allow), else None.
        """
        self.record_attempts(reply.failed_attempts)
        outcome = self.take_turn(
            self.read(reply, self.n_turns - 1),
            text=reply.content,
            reasoning=reply.reasoning,
            latency_ms=reply.latency_ms,
            cost_usd=reply.cost_usd,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
        )
        if outcome is None and self.n_turns >= self.limits.max_turns:
            return self.turn_limit_reached()
        return outcome

    def take_turn(
        self,
        action: protocol.Action,
        *,
        text: str,
        reasoning: str = "",
        latency_ms: float | None = None,
        cost_usd: Decimal | None = None,
        finish_reason: str = "",
        usage: TokenUsage | None = None,
    ) -> Outcome | None:
        """Record the agent's turn that asked for ``action``, carry the action out, and save the counters.

        Returns the outcome when the turn ended the episode, else None.
        """
        self.record(
            Kind.AGENT_MESSAGE,
            text=text,
            reasoning=reasoning,
            latency_ms=latency_ms,
            cost_usd=cost_usd,
            result={
                "action": action.kind,
                "thought": action.thought,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": protocol.arguments_json(c.arguments)}
                    for c in action.tool_calls
                ],
                "final_answer": action.final_answer,
                "memory": action.memory,
                "finish_reason": finish_reason,
            },
            **(usage or TokenUsage()).as_fields(),
        )
        outcome = self.act(action)
        if outcome is None:  # an ending turn's counters are saved with the outcome
            self.save_progress()
        return outcome

    def turn_limit_reached(self) -> Outcome:
        self.record(Kind.ERROR, error=protocol.MAX_TURNS_EXCEEDED)
        return Outcome(Status.COMPLETED, EndedBy.TURN_LIMIT, prediction={})

    def resume(self) -> None:
        """Take up an attempt where its stored record left it: counters, clock, and the nudges in a row.

        A turn either resets the run of failed turns or ends in a repair nudge numbered with it,
        so the last step tells how many failed turns precede the next.
        """
        episode = self.episode
        self.n_turns = episode.n_turns
        self.n_tool_calls = episode.n_tool_calls
        self.tokens = {name: getattr(episode, name) for name in TOKEN_FIELDS}
        self.costs = [episode.cost_usd]
        if episode.started_at is not None:
            self.started -= (timezone.now() - episode.started_at).total_seconds()
        last = episode.steps.order_by("-index").first()
        result = (last.result or {}) if last is not None and last.kind == Kind.NUDGE else {}
        self.failures = int(result.get("attempt") or 0) if result.get("reason") in REPAIR_REASONS else 0

    def read(self, reply, turn: int) -> protocol.Action:
        prefix = f"call_{turn}_"
        if self.native:
            return protocol.parse_native_action(reply.content, reply.tool_calls, id_prefix=prefix)
        return protocol.parse_text_action(reply.content, id_prefix=prefix)

    def stop_requested(self) -> Outcome | None:
        if db.is_cancelled(self.episode.pk):
            self.record(Kind.ERROR, error="the run was cancelled")
            return Outcome(Status.CANCELLED, EndedBy.CANCELLED)
        cap = self.limits.cap_reached(
            elapsed_sec=time.monotonic() - self.started,
            total_tokens=self.tokens["prompt_tokens"] + self.tokens["completion_tokens"],
            cost_usd=self.cost_usd,
        )
        if cap:
            self.record(Kind.ERROR, error=f"stopped: {cap}")
            return Outcome(Status.COMPLETED, EndedBy.COST_CAP, prediction={}, error_message=cap)
        return None

    def provider_failed(self, failure: ProviderError) -> Outcome:
        self.record_attempts(failure.attempts)
        if not failure.attempts:
            self.record(Kind.ERROR, error=str(failure))
        ended_by = EndedBy.CONTEXT_EXCEEDED if failure.context_exceeded else EndedBy.PROVIDER_ERROR
        return Outcome(
            Status.FAILED, ended_by, error_kind=Episode.ErrorKind.INFRASTRUCTURE, error_message=str(failure)
        )

    def act(self, action: protocol.Action) -> Outcome | None:
        if action.kind == "final_answer":
            return self.final_answer(action)
        if action.kind == "tool_call":
            return self.call_tools(action)
        if action.kind == "memory_update":
            self.failures = 0
            text = self.wording.memory_acknowledgement(action.memory)
            self.record(Kind.NUDGE, text=text, result={"reason": "memory_update"})
            return None
        return self.repair(
            "invalid_action",
            self.wording.invalid_action_nudge(native=self.native),
            give_up=Outcome(Status.COMPLETED, EndedBy.FORMAT_FAILURE, prediction={}),
            gave_up=[protocol.ACTION_NOT_RECOGNISED, protocol.NO_PARSEABLE_ACTION],
        )

    def repair(
        self, reason: str, nudge: str, *, give_up: Outcome, gave_up: Sequence[str], errors=()
    ) -> Outcome | None:
        """Nudge after a failed turn, or end the episode at the fourth failed turn in a row.

        The end is recorded as the error steps ``gave_up`` (the official runner's messages).
        """
        errors = list(errors)[: protocol.MAX_ERRORS_SHOWN]
        if self.failures < MAX_PROTOCOL_RETRIES:
            self.failures += 1
            result = {"reason": reason, "attempt": self.failures, "errors": errors}
            self.record(Kind.NUDGE, text=nudge, result=result)
            return None
        for message in gave_up:
            self.record(Kind.ERROR, error=message)
        return give_up

    def final_answer(self, action: protocol.Action) -> Outcome | None:
        answer = action.final_answer or {}
        if self.native and protocol.is_empty_answer(answer) and self.empty_nudges < MAX_EMPTY_NUDGES:
            self.empty_nudges += 1
            self.record(
                Kind.NUDGE,
                text=self.wording.empty_answer_nudge(),
                result={"reason": "empty_answer", "attempt": self.empty_nudges, "errors": []},
            )
            return None
        instance = self.instance
        errors = protocol.final_answer_errors(
            answer, instance.expected_output_schema, task=instance.task.code, n_epochs=instance.epochs_total
        )
        if errors:
            return self.repair(
                "invalid_final_answer",
                self.wording.repair_nudge(errors, native=self.native),
                give_up=Outcome(
                    Status.COMPLETED, EndedBy.FORMAT_FAILURE, final_answer=answer, prediction=answer
                ),
                gave_up=[protocol.SCHEMA_RECOVERY_EXHAUSTED + "; ".join(errors[: protocol.MAX_ERRORS_SHOWN])],
                errors=errors,
            )
        self.failures = 0
        self.record(Kind.FINAL_ANSWER, text=action.thought, arguments=answer)
        return Outcome(Status.COMPLETED, EndedBy.FINAL_ANSWER, final_answer=answer, prediction=answer)

    def call_tools(self, action: protocol.Action) -> Outcome | None:
        remaining = self.limits.max_tool_calls - self.n_tool_calls
        if remaining <= 0:
            for call in action.tool_calls:
                self.stub(call, self.wording.budget_stub())
            return self.repair(
                "tool_budget",
                self.wording.tool_budget_nudge(),
                give_up=Outcome(Status.COMPLETED, EndedBy.TOOL_CALL_LIMIT, prediction={}),
                gave_up=[protocol.TOOL_BUDGET_EXHAUSTED],
            )
        self.failures = 0
        executed = min(remaining, MAX_TOOL_CALLS_PER_TURN)
        for call in action.tool_calls[:executed]:
            self.run_tool(call)
        for call in action.tool_calls[executed:]:
            self.stub(call, self.wording.per_turn_stub())
        if self.n_tool_calls >= self.limits.max_tool_calls:
            result = {"reason": "tool_budget_used", "errors": []}
            self.record(Kind.NUDGE, text=self.wording.tool_budget_nudge(), result=result)
        return None

    def run_tool(self, call: protocol.ToolCall) -> None:
        started = time.monotonic()
        if call.name in self.allowed:
            try:
                content = self.tool_runner(self.instance, call.name, dict(call.arguments))
            except Exception as exc:
                raise ToolBug(f"{call.name} raised {type(exc).__name__}: {exc}") from exc
            status, error = "ok", ""
        else:
            content, status, error = None, "tool_not_available", NOT_ALLOWED.format(name=call.name)
        self.n_tool_calls += 1
        self.record(
            Kind.TOOL_CALL,
            tool_name=call.name[:64],
            arguments=call.arguments,
            result={"status": status, "content": content, "tool_call_id": call.id},
            error=error,
            text=self.wording.tool_result(call.name, content, error, native=self.native),
            latency_ms=(time.monotonic() - started) * 1000,
        )

    def stub(self, call: protocol.ToolCall, text: str) -> None:
        """Answer a native call that is not run, as the provider requires every call to be answered."""
        if self.native:
            self.record(
                Kind.TOOL_CALL,
                tool_name=call.name[:64],
                arguments=call.arguments,
                result={"status": "not_executed", "content": None, "tool_call_id": call.id},
                text=text,
            )
