"""The step record of an episode, and the conversation it replays to.

The step record is the episode: ``step_messages`` turns each step into the messages it added
to the conversation, the engine builds its conversation with that very function, and
``replay_messages`` rebuilds the conversation from the stored steps. Each kind of step keeps
its ``result`` in one shape (``STEP_RESULTS``):

- ``prompt``: ``result = {"messages", "protocol", "tools", "prompt_set"}``.
- ``agent_message``: ``text`` the model's visible text, ``reasoning`` the provider's,
  tokens, latency and cost, and ``result = {"action", "thought", "tool_calls": [{"id",
  "name", "arguments" (JSON text)}], "final_answer", "memory", "finish_reason"}``.
- ``tool_call``: ``tool_name``, ``arguments``, ``latency_ms``, ``error``,
  ``result = {"status", "content" (the tool's full result), "tool_call_id"}`` and ``text``,
  the result exactly as the model read it. Status is ``ok``, ``tool_not_available``, or
  ``not_executed`` for a native call answered with a stub (these do not count as calls).
- ``nudge``: a message from the environment that is not a tool result, ``text`` as sent,
  ``result = {"reason", "attempt", "errors"}``; memory updates are acknowledged this way.
- ``final_answer``: the accepted answer in ``arguments``, the model's thought in ``text``.
- ``error``: provider attempts that failed (with the tokens they reported), and why the
  episode ended when it ended without an answer.

A step holds what ``runs.db.storable`` made of what the agent sent, as every database stores it:
a NUL character or a lone surrogate reads as U+FFFD, a NaN as ``"NaN"``; the conversation goes
on from the step as stored.
"""
from __future__ import annotations

from typing import Any, TypedDict

from runs.models import Episode, Step

Kind = Step.Kind


class PromptResult(TypedDict):
    messages: list[dict]
    protocol: str
    tools: list[dict] | None
    prompt_set: str  # the name of the wording the episode was played with (benchmark.wording)


class ToolCallRequest(TypedDict):
    id: str
    name: str
    arguments: str


class AgentMessageResult(TypedDict, total=False):
    action: str
    thought: str
    tool_calls: list[ToolCallRequest]
    final_answer: Any
    memory: Any
    finish_reason: str


class ToolCallResult(TypedDict):
    status: str
    content: Any
    tool_call_id: str | None


class NudgeResult(TypedDict, total=False):
    reason: str
    attempt: int
    errors: list[str]


#: The shape of ``Step.result`` for each kind of step (``final_answer`` and ``error`` steps keep
#: what they record in ``arguments``, ``text`` and ``error``).
STEP_RESULTS = {
    Kind.PROMPT: PromptResult,
    Kind.AGENT_MESSAGE: AgentMessageResult,
    Kind.TOOL_CALL: ToolCallResult,
    Kind.NUDGE: NudgeResult,
}


def _assistant_message(step: Step, *, native: bool) -> dict:
    result = step.result or {}
    calls = (result.get("tool_calls") or []) if result.get("action") == "tool_call" else []
    if native:
        message = {"role": "assistant", "content": step.text}
        if calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for call in calls
            ]
        return message
    # Some providers refuse an empty assistant message, so an empty turn is replayed as its
    # thought, else its reasoning, else a placeholder (as the official runner does).
    content = step.text if step.text.strip() else (
        str(result.get("thought") or "").strip() or step.reasoning.strip() or "(no output)"
    )
    return {"role": "assistant", "content": content}


def step_messages(step: Step, *, native: bool) -> list[dict]:
    """The messages ``step`` added to the conversation, in order (none for records of outcome or error)."""
    if step.kind == Kind.PROMPT:
        return [dict(message) for message in step.result["messages"]]
    if step.kind == Kind.AGENT_MESSAGE:
        return [_assistant_message(step, native=native)]
    if step.kind == Kind.TOOL_CALL:
        if native:
            return [{"role": "tool", "tool_call_id": step.result["tool_call_id"], "content": step.text}]
        return [{"role": "user", "content": step.text}]
    if step.kind == Kind.NUDGE:
        return [{"role": "user", "content": step.text}]
    return []


def replay_messages(episode: Episode) -> list[dict]:
    """The episode's conversation rebuilt from its stored steps: every message sent, and the last reply."""
    steps = list(episode.steps.order_by("index"))
    if not steps or steps[0].kind != Kind.PROMPT:
        return []
    native = steps[0].result.get("protocol") == "native"
    return [message for step in steps for message in step_messages(step, native=native)]
