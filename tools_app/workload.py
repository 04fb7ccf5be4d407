"""How much one tool call may compute, and the refusal of a call that would compute more.

Next to the output budget (:mod:`tools_app.budget`), which bounds what a call returns, this
bounds what it computes. A tool adds up the cost of what its arguments ask for (the figures of
:mod:`tools_app.signal.costs`, along the path the computation takes) on a :class:`WorkMeter`
before doing it, and a call whose cost passes :data:`LIMIT_SEC` is refused with
``invalid_argument`` and numbers that tell the agent how to rescope, as the output budget's
refusal does. The cost depends only on the arguments and the recording, never on the clock
or the load, so the same call always gets the same answer.
"""
import math

from tools_app.errors import ErrorCode, ToolError

#: The most computation one call may take, in seconds of one core of the reference machine.
LIMIT_SEC = 1.0


class WorkMeter:
    """The estimated work of one call so far; a charge that takes it past the limit refuses the call."""

    def __init__(self):
        self.spent_ns = 0.0

    def charge(self, cost_ns, refuse):
        """Add ``cost_ns`` of work about to be done.

        Parameters
        ----------
        cost_ns : float
            Estimated cost, ns of the reference machine.
        refuse : callable
            ``refuse(total_ns)`` returns the :class:`ToolError` to raise when the total passes
            :data:`LIMIT_SEC` (see :func:`span_refusal` and :func:`refusal`).

        Raises
        ------
        ToolError
            ``invalid_argument``, from ``refuse``.
        """
        self.spent_ns += cost_ns
        if self.spent_ns > LIMIT_SEC * 1e9:
            raise refuse(self.spent_ns)


def check(cost_ns, refuse):
    """Refuse a call whose whole work, ``cost_ns``, is known at once (:meth:`WorkMeter.charge`)."""
    WorkMeter().charge(cost_ns, refuse)


def refusal(total_ns, *, work, rescope):
    """Return the refusal of a call whose estimated work is ``total_ns``.

    Parameters
    ----------
    total_ns : float
    work : str
        What the call would compute, e.g. "7 channel(s) over 82800.0 s".
    rescope : str
        How to make it fit: one or more suggestions, e.g. "(a) ...; or (b) ...".

    Returns
    -------
    error : ToolError
        ``invalid_argument`` with ``work_limit_sec`` and ``estimated_work_sec``.
    """
    estimated = total_ns / 1e9
    return ToolError(
        ErrorCode.INVALID_ARGUMENT,
        f"Too much computation for one call: {work} would take about {estimated:.3g} s, more than the "
        f"{LIMIT_SEC:g} s one call may take. Nothing was returned. Rescope to fit, e.g.: {rescope}. "
        f"Then call again.",
        work_limit_sec=LIMIT_SEC,
        estimated_work_sec=float(f"{estimated:.3g}"),
    )


def span_refusal(cost, *, picks, start, stop, sfreq, hint="", min_channels=1, costly=()):
    """Return ``refuse(total_ns)`` for work that depends on the channels and the time range.

    Parameters
    ----------
    cost : callable
        ``cost(picks, start, stop)``: the call's work, ns, for channels ``picks`` over samples
        ``[start, stop)``.
    picks : list of int
        The channels asked for (repeats allowed).
    start, stop : int
        The range asked for, samples.
    sfreq : float
        Sampling rate, Hz.
    hint : str, optional
        A further suggestion, e.g. "use method 'welch'".
    min_channels : int or None
        The fewest channels the tool takes (no fewer are suggested); None for a tool that
        takes no channel list.
    costly : sequence of str
        Channels that cost far more than the others (recorded at a lower rate), named in the message.

    Notes
    -----
    The suggestions are computed with ``cost``, to fit within four fifths of the limit: the
    most leading channels over the whole range, and the longest range from ``start`` with
    every channel.
    """
    distinct = list(dict.fromkeys(picks))
    target = LIMIT_SEC * 1e9 * 0.8

    def refuse(total_ns):
        channels = max((count for count in range(1, len(distinct)) if cost(distinct[:count], start, stop) <= target),
                       default=0)
        low, high = 0, stop - start  # the longest range that fits: low fits, high does not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if cost(distinct, start, start + middle) <= target else (low, middle)
        suggestions = []
        if min_channels is not None and channels >= min_channels:
            suggestions.append(f"use <= {channels} channel(s) over this time range")
        if low:
            suggestions.append(f"limit the time range to a <= {math.floor(low / sfreq * 10) / 10}s chunk via "
                               f"tmin/tmax with these channels")
        if costly:
            suggestions.append(f"leave out the channels recorded at a lower rate ({', '.join(costly)}), "
                               f"which cost the most to read")
        if hint:
            suggestions.append(hint)
        labelled = [f"({'abcde'[index]}) {text}" for index, text in enumerate(suggestions)]
        return refusal(total_ns, work=f"{len(distinct)} channel(s) over {round((stop - start) / sfreq, 1)} s",
                       rescope="; or ".join(labelled))
    return refuse
