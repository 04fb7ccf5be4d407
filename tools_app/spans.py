"""The part of a recording a tool call reads, from its arguments as the tools read them.

No recording is opened and nothing else is known but the arguments (and, for the intervals, the
record's duration), so the explorer's plot of the window a call covered (``leaderboard.explorer.signal``)
and an episode's evidence coverage (``runs.failures``) follow one rule, the tools' own
(``tools_app.tools``):

- ``get_recording_info`` and ``get_channel_list`` read the header only, no sample;
- ``compute_noise_metrics`` reads the whole record, whatever its arguments;
- every other tool reads ``[tmin, tmax]`` s, an end that is omitted (or JSON null) being the record's
  start or end, clipped to the record;
- ``compute_windowed_features`` reads its windows within that range: ``window_sec`` long (5 s when
  omitted), one every ``step_sec`` (``window_sec`` when omitted) from the range's start while a whole
  window fits, or the whole range as one window when it is shorter than one. Where ``step_sec``
  exceeds ``window_sec`` the windows leave gaps, and the range's last part shorter than a step may
  be left unread.

The tools count samples (``int(seconds * sfreq)``); the intervals here are in seconds, true to
within a sample.
"""
from __future__ import annotations

import math

from tools_app.registry import TOOL_NAMES

#: Tools that read the recording's header only.
HEADER_TOOLS = frozenset({"get_recording_info", "get_channel_list"})
#: Tools that read samples of the recording.
SIGNAL_TOOLS = frozenset(TOOL_NAMES) - HEADER_TOOLS
#: Tools whose result is analysed over the whole record whatever the arguments.
WHOLE_RECORD_TOOLS = frozenset({"compute_noise_metrics"})
#: The tool that reads a range in windows.
WINDOWED_TOOL = "compute_windowed_features"
#: The windowed tool's window length when none is given (not advertised in its schema, as upstream).
DEFAULT_WINDOW_SEC = 5.0

Interval = tuple[float, float]


def seconds(value) -> float | None:
    """A time argument as the tools accept it (a finite real number), else None (omitted)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def requested_span(tool_name: str, arguments: dict | None) -> tuple[float | None, float | None]:
    """The time range a call of a signal tool asked for: ``(tmin, tmax)`` in s, as given.

    An end is None where the tool takes the record's start or end: omitted, JSON null, not a
    number, or any end of a tool that reads the whole record.

    Raises
    ------
    ValueError
        If ``tool_name`` is not one of :data:`SIGNAL_TOOLS`.
    """
    if tool_name not in SIGNAL_TOOLS:
        raise ValueError(f"{tool_name!r} does not read the signal; signal tools are {sorted(SIGNAL_TOOLS)}.")
    if tool_name in WHOLE_RECORD_TOOLS or not isinstance(arguments, dict):
        return None, None
    return seconds(arguments.get("tmin")), seconds(arguments.get("tmax"))


def read_intervals(tool_name: str, arguments: dict | None, *, duration_sec: float) -> list[Interval]:
    """The time intervals a call of ``tool_name`` with ``arguments`` read, in s within ``[0, duration_sec]``.

    Parameters
    ----------
    tool_name : str
        Any tool; a header tool, or an unknown one, reads nothing.
    arguments : dict | None
        The call's arguments as the agent gave them.
    duration_sec : float
        The record's duration in s, positive.

    Returns
    -------
    intervals : list of (float, float)
        Sorted, each non-empty; they overlap nowhere but may touch. Empty when the call read no
        sample: a header tool, a range outside the record, or a window or step the tool refuses.
    """
    if not duration_sec > 0:
        raise ValueError(f"duration_sec must be positive, not {duration_sec!r}.")
    if tool_name not in SIGNAL_TOOLS:
        return []
    arguments = arguments if isinstance(arguments, dict) else {}
    tmin, tmax = requested_span(tool_name, arguments)
    start = min(max(tmin, 0.0), duration_sec) if tmin is not None else 0.0
    stop = min(max(tmax, 0.0), duration_sec) if tmax is not None else duration_sec
    if stop <= start:
        return []
    if tool_name != WINDOWED_TOOL:
        return [(start, stop)]
    window = seconds(arguments.get("window_sec"))
    window = DEFAULT_WINDOW_SEC if window is None else window
    step = seconds(arguments.get("step_sec"))
    step = window if step is None else step
    return window_intervals(start, stop, window_sec=window, step_sec=step)


def window_intervals(start: float, stop: float, *, window_sec: float, step_sec: float) -> list[Interval]:
    """The windows ``compute_windowed_features`` reads in ``[start, stop]`` s, merged where they overlap.

    One window of ``window_sec`` every ``step_sec`` from ``start`` while a whole window fits; the
    whole range as one window when it is shorter than one; none for a window or step that is not
    positive (the tool refuses them).
    """
    if window_sec <= 0 or step_sec <= 0:
        return []
    length = stop - start
    if length < window_sec:
        return [(start, stop)]
    count = int((length - window_sec) // step_sec) + 1
    if step_sec <= window_sec:  # each window reaches the next
        return [(start, start + (count - 1) * step_sec + window_sec)]
    return [(start + index * step_sec, start + index * step_sec + window_sec) for index in range(count)]
