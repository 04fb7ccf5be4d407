"""The one retry policy of model calls, and the kinds of failure a way of calling sorts its errors into.

Provider failures are retried in exactly one place, ``runs.model.agent.ModelAgent.respond``:
litellm's own retries (``num_retries``) and the provider SDK's (``max_retries``) are switched
off. Each way of calling (``litellm_transport``, ``openai_http``) sorts its errors into
``CONTEXT`` (the conversation outgrew the model's window: one retry with a ``max_tokens``
that fits, ``fitted_max_tokens``), ``TRANSIENT`` (a timeout, a lost connection, an unreadable
reply, HTTP 429 or 5xx: retried with exponential backoff, ``RetryPolicy``) or ``FATAL`` (a key
missing or refused among them, whatever status it comes with).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

CONTEXT, TRANSIENT, FATAL = "context", "transient", "fatal"


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for provider failures: ``base_delay_sec``, doubling, capped at ``max_delay_sec``.

    The defaults are the official adapter's: 5 retries from 2 s, capped at 120 s.
    """

    max_retries: int = 5
    base_delay_sec: float = 2.0
    max_delay_sec: float = 120.0

    @classmethod
    def from_settings(cls) -> RetryPolicy:
        """The policy set in Django settings (from the environment, see ``config.settings``).

        Settings: ``EEGAB_PROVIDER_RETRIES``, ``EEGAB_RETRY_BASE_DELAY_SEC``, ``EEGAB_RETRY_MAX_DELAY_SEC``.
        """
        from django.conf import settings

        return cls(
            max_retries=settings.EEGAB_PROVIDER_RETRIES,
            base_delay_sec=settings.EEGAB_RETRY_BASE_DELAY_SEC,
            max_delay_sec=settings.EEGAB_RETRY_MAX_DELAY_SEC,
        )

    def delays(self):
        """The waits before retry 1, 2, …, ``max_retries``."""
        delay = self.base_delay_sec
        for _ in range(self.max_retries):
            yield delay
            delay = min(delay * 2, self.max_delay_sec)


# vLLM's two wordings of a context-length error, which say how many tokens the prompt takes.
CONTEXT_WITH_SPLIT = re.compile(
    r"maximum context length is (\d+) tokens.*?requested (\d+) tokens "
    r"\((\d+) in the messages, (\d+) in the completion\)",
    re.DOTALL,
)
CONTEXT_WITH_PROMPT = re.compile(
    r"maximum context length is (\d+) tokens.*?prompt contains at least (\d+) input tokens", re.DOTALL
)
CONTEXT_WORDS = (
    "context length", "context window", "maximum context", "too many tokens", "prompt is too long",
    "context size",  # llama.cpp: "the request exceeds the available context size"
)  # fmt: skip


def fitted_max_tokens(error_text: str, max_tokens: int) -> int | None:
    """A ``max_tokens`` that fits the window a context-length error describes, or None when nothing fits.

    The window and prompt size are read from vLLM's messages; other providers' messages do
    not give them, and then the completion budget is halved.
    """
    match = CONTEXT_WITH_SPLIT.search(error_text)
    if match:
        window, prompt = int(match.group(1)), int(match.group(3))
    elif match := CONTEXT_WITH_PROMPT.search(error_text):
        window, prompt = int(match.group(1)), int(match.group(2))
    else:
        halved = max_tokens // 2
        return halved if halved >= 1 else None
    fitted = window - prompt - 1  # one token of slack: templates tokenise a little differently on retry
    return fitted if 1 <= fitted < max_tokens else None


def status_kind(exc: Exception) -> str | None:
    """What an error's HTTP status (``status_code``) says: ``CONTEXT``, ``TRANSIENT``, or None when it says neither."""
    status = getattr(exc, "status_code", None)
    if status == 400 and any(word in str(exc).lower() for word in CONTEXT_WORDS):
        return CONTEXT
    if isinstance(status, int) and (status == 429 or status >= 500):
        return TRANSIENT
    return None
