"""The record browser of an episode: its recording's channels and montages, where it opens, what it lays over.

The page gets everything but the samples at once (``browser_context``); the samples come page by page
from the window endpoint (``leaderboard.explorer.record``). The clock time of the recording's start
is given only where the references are shown: with a public dataset's file listing, a start time can
name the file, and so its labels.
"""
from __future__ import annotations

from pathlib import Path

from django.http import Http404

from leaderboard.explorer import overlays
from leaderboard.explorer.record import GROUPS, channel_group, montages_of, parse_window, read_window
from leaderboard.explorer.signal import signal_window
from runs.models import Episode, Step
from tools_app.recording import RecordingError, open_recording
from tools_app.signal.stored import StoreError
from tools_app.spans import SIGNAL_TOOLS

#: The page a browser opens on when no step chooses one: the record's first 30 s (an epoch of sleep scoring).
FIRST_PAGE_SEC = 30.0


def episode_recording(episode: Episode):
    """The recording ``episode``'s instance names (a 404 for a task without one, or a file that cannot be read)."""
    instance = episode.instance
    if not instance.recording_path:
        raise Http404("This episode's task has no recording.")
    try:
        return open_recording(Path(instance.suite.release.source) / instance.recording_path, metadata=instance.metadata)
    except RecordingError as error:
        raise Http404(str(error)) from None


def _opening(episode: Episode, recording, step_index: int | None) -> dict:
    """Where the browser opens: a signal step's window and channels, else the record's first page."""
    duration = recording.n_times / recording.sfreq
    step = None
    if step_index is not None:
        step = episode.steps.filter(index=step_index, kind=Step.Kind.TOOL_CALL, tool_name__in=SIGNAL_TOOLS).first()
    if step is None:
        return {"start": 0.0, "stop": min(FIRST_PAGE_SEC, duration), "channels": None, "step": None}
    eeg = [recording.ch_names[pick] for pick in recording.eeg_picks]
    window = signal_window(step.tool_name, step.arguments, ch_names=recording.ch_names, eeg_channels=eeg,
                           sfreq=recording.sfreq, n_times=recording.n_times, max_channels=len(recording.ch_names))
    start, stop = window.start / recording.sfreq, window.stop / recording.sfreq
    if stop - start < 1.0:  # a call that read (almost) nothing: a page around it
        start, stop = max(0.0, start - 5.0), min(duration, start + 5.0)
    return {"start": start, "stop": stop, "channels": list(window.channels) or None, "step": step.index}


def start_clock(recording) -> str | None:
    """The recording's start as ``HH:MM:SS`` where its file gives it (EDF), else None."""
    start = getattr(recording, "start_time", None)
    return start.strftime("%H:%M:%S") if start is not None else None


def browser_context(episode: Episode, *, references: bool, step_index: int | None, step_link=None) -> dict:
    """Everything the browser page needs but the samples, as JSON-ready data (``step_link`` as for
    :func:`leaderboard.explorer.overlays.tool_bands`)."""
    recording = episode_recording(episode)
    units = recording.units
    channels = [
        {"name": name, "group": channel_group(name, units[index]), "rate": recording.stored_rates[index]}
        for index, name in enumerate(recording.ch_names)
    ]
    return {
        "duration": recording.n_times / recording.sfreq,
        "sfreq": recording.sfreq,
        "channels": channels,
        "groups": [group for group in GROUPS if any(channel["group"] == group for channel in channels)],
        "montages": montages_of(recording),
        "clock": start_clock(recording) if references else None,
        "opening": _opening(episode, recording, step_index),
        "bands": overlays.tool_bands(episode, recording, step_link=step_link),
        "lanes": overlays.answer_lanes(episode, references=references),
    }


def window_answer(episode: Episode, query, *, staff: bool, step_link=None) -> dict:
    """One page of ``episode``'s recording for the window endpoint, with the tool calls' bands as they are now.

    Raises :class:`leaderboard.explorer.record.WindowError` for a query that cannot be read.
    """
    recording = episode_recording(episode)
    window = parse_window(query, recording)
    try:
        data = read_window(recording, window, staff=staff)
    except StoreError:  # a kept pyramid failed its check and was deleted: read it again, rebuilt
        data = read_window(recording, window, staff=staff)
    data["bands"] = overlays.tool_bands(episode, recording, step_link=step_link)
    return data
