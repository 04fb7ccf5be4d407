"""The limits of an episode: the protocol's per-turn counts, the task's turns and tool calls, the run's caps."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from runs.models import Episode

MAX_TOOL_CALLS_PER_TURN = 3
MAX_PROTOCOL_RETRIES = 3
MAX_EMPTY_NUDGES = 2


@dataclass(frozen=True)
class EpisodeLimits:
    """The limits of one episode: the task's turns and tool calls, and the run's optional caps.

    ``Run.limits`` may lower ``max_turns`` and ``max_tool_calls`` (never raise them above the
    task's) and set per-episode caps ``max_wall_time_sec``, ``max_total_tokens`` (prompt plus
    completion) and ``max_cost_usd``. ``wall_time_cap_sec`` bounds the run's wall-clock cap
    (it lowers a larger one and sets one where the run has none).
    """

    max_turns: int = 1000
    max_tool_calls: int = 999
    max_wall_time_sec: float | None = None
    max_total_tokens: int | None = None
    max_cost_usd: Decimal | None = None

    @classmethod
    def for_episode(
        cls, task, run_limits: dict | None, *, wall_time_cap_sec: float | None = None
    ) -> EpisodeLimits:
        run_limits = run_limits or {}
        cost_cap = run_limits.get("max_cost_usd")
        wall_caps = [cap for cap in (run_limits.get("max_wall_time_sec"), wall_time_cap_sec) if cap is not None]
        return cls(
            max_turns=min(task.max_turns, int(run_limits.get("max_turns", task.max_turns))),
            max_tool_calls=min(
                task.max_tool_calls, int(run_limits.get("max_tool_calls", task.max_tool_calls))
            ),
            max_wall_time_sec=min(wall_caps) if wall_caps else None,
            max_total_tokens=run_limits.get("max_total_tokens"),
            max_cost_usd=None if cost_cap is None else Decimal(str(cost_cap)),
        )

    def cap_reached(self, *, elapsed_sec: float, total_tokens: int, cost_usd: Decimal | None) -> str:
        """Which cap, if any, the episode has reached, in words ("" for none)."""
        if self.max_wall_time_sec is not None and elapsed_sec >= self.max_wall_time_sec:
            return f"wall-clock cap of {self.max_wall_time_sec} s reached after {elapsed_sec:.1f} s"
        if self.max_total_tokens is not None and total_tokens >= self.max_total_tokens:
            return f"token cap of {self.max_total_tokens} reached ({total_tokens} tokens used)"
        if self.max_cost_usd is not None and cost_usd is not None and cost_usd >= self.max_cost_usd:
            return f"cost cap of ${self.max_cost_usd} reached (${cost_usd} spent)"
        return ""


def wall_time_cap_sec() -> float:
    """The wall-clock cap of every episode played here (``EEGAB_EPISODE_WALL_SEC``), in seconds.

    It is shorter than the queue worker's timeout (``EEGAB_EPISODE_TIMEOUT``), so that the loop
    ends a long episode itself rather than the worker being killed in the middle of it.
    """
    return float(settings.EEGAB_EPISODE_WALL_SEC)


def played_limits(episode: Episode) -> EpisodeLimits:
    """The limits of an episode played here: its task's and its run's, within ``wall_time_cap_sec()``.

    An episode driven by an external agent (``runs.environment``) has no worker to be killed and
    keeps its run's limits only.
    """
    return EpisodeLimits.for_episode(episode.instance.task, episode.run.limits, wall_time_cap_sec=wall_time_cap_sec())
