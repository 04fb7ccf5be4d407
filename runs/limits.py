"""What a run's ``limits`` may hold: the episode caps (``runs.episode.limits.EpisodeLimits``) and how the run
is played (episodes at once, model calls and tokens per minute: ``runs.queue`` and ``runs.model.rate_limit``)."""
import math

# Each limit: its type, its lowest and its highest value (None: no highest).
LIMIT_KEYS = {
    "max_turns": (int, 1, 1000),
    "max_tool_calls": (int, 0, 999),
    "max_total_tokens": (int, 1, None),
    "max_wall_time_sec": (float, 0, None),
    "max_cost_usd": (float, 0, None),
    "concurrency": (int, 1, 256),
    "requests_per_minute": (int, 1, None),
    "tokens_per_minute": (int, 1, None),
}


def check_limits(limits) -> dict:
    """``limits`` if every key is a known limit with a value in its range; ValueError naming the first that is not."""
    if not isinstance(limits, dict):
        raise ValueError("limits must be a JSON object of limit names and numbers.")
    for key, value in limits.items():
        if key not in LIMIT_KEYS:
            raise ValueError(f"limits: {key!r} is no limit; the limits are {', '.join(LIMIT_KEYS)}.")
        kind, lowest, highest = LIMIT_KEYS[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (kind is int and not isinstance(value, int)) or not math.isfinite(value):
            raise ValueError(f"limits: {key} must be a {'whole number' if kind is int else 'number'}, not {value!r}.")
        if value < lowest or (highest is not None and value > highest):
            bound = f"from {lowest} to {highest}" if highest is not None else f"at least {lowest}"
            raise ValueError(f"limits: {key} must be {bound}, not {value!r}.")
    return limits
