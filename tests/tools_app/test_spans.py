"""The part of a record a tool call reads, from its arguments: defaults, clipping, and the windowed tool's windows."""
import numpy as np
import pytest

from benchmark.scoring.seizure import union
from tests.tools_app.recordings import make_recording, noise, run
from tools_app.spans import HEADER_TOOLS, SIGNAL_TOOLS, read_intervals, requested_span, window_intervals

DURATION = 3600.0


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("get_recording_info", {"tmin": 0, "tmax": 10}, []),
    ("get_channel_list", {}, []),
    ("no_such_tool", {"tmin": 0, "tmax": 10}, []),
    ("compute_psd", {}, [(0.0, DURATION)]),
    ("compute_psd", None, [(0.0, DURATION)]),
    ("compute_psd", {"tmin": None, "tmax": None}, [(0.0, DURATION)]),
    ("compute_band_power", {"tmin": 100, "tmax": 250.5}, [(100.0, 250.5)]),
    ("detect_transients", {"tmin": 1800}, [(1800.0, DURATION)]),
    ("compute_temporal_features", {"tmax": 60}, [(0.0, 60.0)]),
    ("compute_asymmetry", {"tmin": 3000, "tmax": 5000}, [(3000.0, DURATION)]),  # clipped to the record
    ("compute_channel_correlation", {"tmin": -5, "tmax": 10}, [(0.0, 10.0)]),
    ("compute_psd", {"tmin": 4000, "tmax": 5000}, []),  # after the record
    ("compute_psd", {"tmin": 20, "tmax": 10}, []),  # inverted
    ("compute_psd", {"tmin": "10", "tmax": True}, [(0.0, DURATION)]),  # not numbers: the defaults
    ("compute_noise_metrics", {"tmin": 100, "tmax": 200}, [(0.0, DURATION)]),  # always the whole record
    ("compute_windowed_features", {}, [(0.0, DURATION)]),  # 5-s windows, end to end
    ("compute_windowed_features", {"window_sec": 30, "step_sec": 20}, [(0.0, 3590.0)]),  # the last 10 s unread
    ("compute_windowed_features", {"window_sec": 30, "step_sec": 300, "tmax": 1000},
     [(0.0, 30.0), (300.0, 330.0), (600.0, 630.0), (900.0, 930.0)]),
    ("compute_windowed_features", {"window_sec": 30, "tmin": 3590}, [(3590.0, DURATION)]),  # shorter than a window
    ("compute_windowed_features", {"window_sec": 0}, []),  # refused by the tool
])  # fmt: skip
def test_read_intervals_follow_the_tools_reading_of_their_arguments(tool, arguments, expected):
    assert read_intervals(tool, arguments, duration_sec=DURATION) == expected


def test_the_header_tools_are_the_tools_that_read_no_signal():
    assert HEADER_TOOLS == {"get_recording_info", "get_channel_list"}
    assert not HEADER_TOOLS & SIGNAL_TOOLS and len(SIGNAL_TOOLS) == 8


def test_requested_span_refuses_a_tool_that_reads_no_signal():
    with pytest.raises(ValueError, match="does not read the signal"):
        requested_span("get_recording_info", {"tmin": 1})
    with pytest.raises(ValueError, match="positive"):
        read_intervals("compute_psd", {}, duration_sec=0)


@pytest.mark.parametrize("arguments", [
    {},
    {"window_sec": 2, "step_sec": 1.5},
    {"window_sec": 4, "step_sec": 10, "tmin": 5, "tmax": 52},
    {"window_sec": 3, "tmin": 58.5},
    {"window_sec": 100},
])  # fmt: skip
def test_the_windowed_intervals_are_the_windows_the_tool_computes(episode, arguments):
    sfreq, seconds = 100.0, 60.0
    episode(make_recording(noise(seconds, sfreq), sfreq))
    result = run("compute_windowed_features", features=["rms_uv"], **arguments)
    windows = [(window["t_start"], window["t_end"]) for window in result["channels"][0]["windows"]]
    np.testing.assert_allclose(union(windows), read_intervals("compute_windowed_features", arguments,
                                                              duration_sec=seconds), atol=1 / sfreq)


def test_window_intervals_merge_windows_that_reach_the_next():
    assert window_intervals(0.0, 100.0, window_sec=10, step_sec=10) == [(0.0, 100.0)]
    assert window_intervals(0.0, 100.0, window_sec=10, step_sec=25) == [(0.0, 10.0), (25.0, 35.0), (50.0, 60.0),
                                                                         (75.0, 85.0)]
