"""What an agent returns for one turn (``Reply``), how a call fails, and reading a chat completion.

An agent answers the conversation so far with one ``Reply``: the model's text, its reasoning
where the provider returns it, its native tool calls, the call's tokens, cost and latency, and
every failed attempt that came before it. When a provider gives no usable reply after all
retries the agent raises ``ProviderError``, which the loop records as an infrastructure failure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from runs.cost import Pricing, TokenUsage


@dataclass(frozen=True)
class FailedAttempt:
    """A provider call that did not give a usable reply, with whatever usage it reported."""

    error: str
    latency_ms: float
    usage: TokenUsage | None = None
    cost_usd: Decimal | None = None


@dataclass(frozen=True)
class Reply:
    """One model turn.

    Attributes
    ----------
    content : str
        The visible text ("" when there is none).
    reasoning : str
        The provider's separate reasoning text (``reasoning_content``), "" when absent.
    tool_calls : tuple of (id, name, arguments_json)
        Native tool calls, as the provider sent them.
    usage, cost_usd, latency_ms
        Of the successful call only; failed attempts carry their own. ``latency_ms`` is None
        when nobody timed the reply (an external agent's action, posted to the environment API).
    failed_attempts : tuple of FailedAttempt
        The attempts retried before this reply, in order.
    finish_reason : str
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    usage: TokenUsage | None = None
    cost_usd: Decimal | None = None
    latency_ms: float | None = 0.0
    failed_attempts: tuple[FailedAttempt, ...] = ()
    finish_reason: str = ""


class ProviderError(Exception):
    """The provider gave no usable reply after all retries (an infrastructure failure, not the model's).

    ``attempts`` lists every failed call; ``context_exceeded`` is set when the last failure
    was the conversation outgrowing the model's context window.
    """

    def __init__(
        self, message: str, *, attempts: tuple[FailedAttempt, ...] = (), context_exceeded: bool = False
    ):
        super().__init__(message)
        self.attempts = attempts
        self.context_exceeded = context_exceeded


# How a failed call is recorded (``failure_text``): the exception's class, the HTTP status when the
# provider answered one, then the message, whose words are the provider's and shown to staff only.
FAILURE_TEXT = re.compile(r"(?P<kind>[A-Za-z_][A-Za-z0-9_]*)(?: \(HTTP (?P<status>[1-5][0-9][0-9])\))?: ")


def failure_text(exc: Exception) -> str:
    """``exc``, a failed model call, as it is recorded: ``BadRequestError (HTTP 400): <the provider's message>``."""
    status = getattr(exc, "status_code", None)
    answered = f" (HTTP {status})" if isinstance(status, int) and 100 <= status <= 599 else ""
    return f"{type(exc).__name__}{answered}: {exc}"


class Agent(Protocol):
    protocol: str  # "native" or "text"
    pricing: Pricing

    def respond(self, messages: list[dict], *, tools: list[dict] | None = None) -> Reply: ...


# ── reading a chat completion ────────────────────────────────────────────────────────────────


def attr(obj: Any, *names: str) -> Any:
    """``obj.a.b…``, None as soon as a link is missing (usage objects differ between providers)."""
    for name in names:
        if obj is None:
            return None
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj


def usage_of(response: Any) -> TokenUsage | None:
    """The token counts of a litellm response, None-safe; None when it carries no usage."""
    usage = attr(response, "usage")
    if usage is None:
        return None
    return TokenUsage(
        prompt_tokens=attr(usage, "prompt_tokens"),
        completion_tokens=attr(usage, "completion_tokens"),
        cache_read_tokens=attr(usage, "prompt_tokens_details", "cached_tokens"),
        cache_write_tokens=attr(usage, "cache_creation_input_tokens"),
        reasoning_tokens=attr(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def text_of(content: Any) -> str:
    """Visible text of a message whose content may be a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part if isinstance(part, str) else attr(part, "text") or attr(part, "content")
                 for part in content]  # fmt: skip
        return "\n".join(str(part) for part in parts if part)
    return str(content)
