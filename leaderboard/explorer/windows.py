"""The signal window a step's tool call read, as its page plots it: traces, the windowed features, notes."""
from __future__ import annotations

from pathlib import Path

from leaderboard.explorer import charts as episode_charts
from leaderboard.explorer.signal import MAX_POINTS, read_signal, signal_window, visitor_points
from runs.models import Step
from tools_app.recording import RecordingError, open_recording


def step_window(step: Step, *, staff: bool) -> dict:
    """The figure of the window ``step``'s call read (None when the recording cannot be opened), its features
    figure for ``compute_windowed_features``, the channels and time range shown, and notes on what is left out.

    Staff see up to ``MAX_POINTS`` points; anyone else never the samples themselves, only a min/max
    decimation (half the samples or fewer), whatever the window.
    """
    content = (step.result or {}).get("content")
    features = (
        episode_charts.windowed_features_figure(content)
        if step.tool_name == "compute_windowed_features" and isinstance(content, dict)
        else None
    )
    instance = step.episode.instance
    try:
        recording = open_recording(
            Path(instance.suite.release.source) / instance.recording_path, metadata=instance.metadata
        )
    except RecordingError as exc:
        return {"figure": None, "features_figure": features, "notes": [f"{exc} The signal cannot be shown."]}
    eeg = [recording.ch_names[pick] for pick in recording.eeg_picks]
    window = signal_window(
        step.tool_name, step.arguments, ch_names=recording.ch_names, eeg_channels=eeg,
        sfreq=recording.sfreq, n_times=recording.n_times,
    )
    n_samples = window.stop - window.start
    traces = read_signal(recording, window, max_points=MAX_POINTS if staff else visitor_points(n_samples))
    start_sec, stop_sec = window.start / recording.sfreq, window.stop / recording.sfreq
    notes = []
    if window.n_requested > len(window.channels):
        notes.append(f"Showing the first {len(window.channels)} of the {window.n_requested} channels the call covered.")
    if window.missing:
        notes.append(f"Not in the recording: {', '.join(window.missing)}.")
    return {
        "figure": episode_charts.signal_figure(traces, title=f"{step.tool_name} · {start_sec:.1f}–{stop_sec:.1f} s"),
        "features_figure": features,
        "channels": list(window.channels),
        "time_range": [start_sec, stop_sec],
        "notes": notes,
    }
