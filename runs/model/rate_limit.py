"""Per-minute limits on a run's model calls: an agent that waits while its run is at them.

A run's ``limits`` may cap its requests and tokens per minute (``requests_per_minute``,
``tokens_per_minute``). Before each call, ``RateLimitedAgent`` counts the run's calls of the last
minute from its stored steps (every episode's, in every process) and the calls under way in this
process, and waits until the next call fits. Calls in flight in other processes are not
counted, so a run on several workers can overshoot by at most one call per worker.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from runs.models import Run, Step

# The window the per-minute limits count calls in.
RATE_WINDOW_SEC = 60.0


@dataclass(frozen=True)
class RateLimits:
    """A run's model-call limits per minute; None is unlimited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    @classmethod
    def of(cls, run: Run) -> RateLimits:
        limits = run.limits or {}
        rpm, tpm = limits.get("requests_per_minute"), limits.get("tokens_per_minute")
        return cls(None if rpm is None else int(rpm), None if tpm is None else int(tpm))

    @property
    def active(self) -> bool:
        return self.requests_per_minute is not None or self.tokens_per_minute is not None


def rate_limit_wait(
    calls: Iterable[tuple[float, int]], *, now: float, limits: RateLimits, in_flight: int = 0
) -> float:
    """Seconds to wait before the next call so that the last minute stays within ``limits``.

    Parameters
    ----------
    calls : iterable of (time, tokens)
        The calls of the last ``RATE_WINDOW_SEC`` seconds: when each ended (seconds, any
        epoch) and its prompt plus completion tokens.
    now : float
        The current time on the same clock.
    limits : RateLimits
    in_flight : int
        Calls already under way, which count as requests with no tokens yet.

    Returns
    -------
    float
        0 when the call may go now.
    """
    window = sorted((t, tokens) for t, tokens in calls if t > now - RATE_WINDOW_SEC)
    wait = 0.0
    rpm = limits.requests_per_minute
    excess = 0 if rpm is None else len(window) + in_flight + 1 - rpm
    if excess > 0:
        # The call may go once the oldest ``excess`` calls have left the window; calls in
        # flight cannot leave it before they end.
        wait = window[excess - 1][0] + RATE_WINDOW_SEC - now if excess <= len(window) else RATE_WINDOW_SEC
    tpm = limits.tokens_per_minute
    if tpm is not None:
        used = sum(tokens for _, tokens in window)
        for t, tokens in window:
            if used < tpm:
                break
            used -= tokens
            wait = max(wait, t + RATE_WINDOW_SEC - now)
    return max(wait, 0.0)


def recent_calls(run_id: int) -> list[tuple[float, int]]:
    since = timezone.now() - timedelta(seconds=RATE_WINDOW_SEC)
    rows = (
        Step.objects.filter(episode__run_id=run_id, created_at__gte=since)
        .filter(Q(kind=Step.Kind.AGENT_MESSAGE) | Q(kind=Step.Kind.ERROR, result__reason="provider_attempt"))
        .values_list("created_at", "prompt_tokens", "completion_tokens")
    )
    return [(created.timestamp(), (prompt or 0) + (completion or 0)) for created, prompt, completion in rows]


class CallsInFlight:
    """Model calls under way in this process, per run."""

    def __init__(self):
        self._lock = threading.Lock()
        self._count: Counter[int] = Counter()

    def __getitem__(self, run_id: int) -> int:
        with self._lock:
            return self._count[run_id]

    @contextmanager
    def call(self, run_id: int):
        with self._lock:
            self._count[run_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self._count[run_id] -= 1


in_flight_calls = CallsInFlight()


class RateLimitedAgent:
    """An agent that waits before each model call while its run is at a per-minute limit.

    The wrapped agent is built on first use, inside the episode loop, so that a model that
    cannot be built fails its episode like any other error of the loop.
    """

    def __init__(self, build: Callable[[], Any], *, run_id: int, limits: RateLimits, sleep=time.sleep):
        self._build = build
        self._agent = None
        self.run_id = run_id
        self.limits = limits
        self.sleep = sleep

    @property
    def agent(self):
        if self._agent is None:
            self._agent = self._build()
        return self._agent

    @property
    def protocol(self) -> str:
        return self.agent.protocol

    @property
    def pricing(self):
        return self.agent.pricing

    def wait_for_room(self) -> None:
        while True:
            wait = rate_limit_wait(
                recent_calls(self.run_id),
                now=timezone.now().timestamp(),
                limits=self.limits,
                in_flight=in_flight_calls[self.run_id],
            )
            if wait <= 0:
                return
            self.sleep(min(wait, 1.0))

    def respond(self, messages, *, tools=None):
        self.wait_for_room()
        with in_flight_calls.call(self.run_id):
            return self.agent.respond(messages, tools=tools)
