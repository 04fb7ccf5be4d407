"""The work limit: a call too large to compute within it is refused before it computes, with a rescope that fits.

The limit's figure (a second of the reference machine) is checked by ``bench/tools.py``; these
tests lower it so that small recordings reach it, and check the refusals' logic.
"""
import re

import numpy as np
import pytest

from tests.tools_app.recordings import make_recording, noise, run, sine
from tools_app import workload
from tools_app.errors import ErrorCode
from tools_app.signal import costs, ranges, temporal, transients

SFREQ = 100.0
CHANNELS = ["C3", "C4", "Cz"]


@pytest.fixture
def hour(episode):
    """Three channels, one hour at 100 Hz: long enough for kept statistics."""
    data = np.stack([noise(3600, SFREQ, amplitude_v=2e-5, seed=seed) + sine(10, 1e-5, 3600, SFREQ) for seed in range(3)])
    return episode(make_recording(data, SFREQ, CHANNELS))


@pytest.fixture
def limit(monkeypatch):
    """Return ``set_limit(seconds)``, the work limit for this test."""
    return lambda seconds: monkeypatch.setattr(workload, "LIMIT_SEC", seconds)


def _refusal_of(result):
    assert result.get("error_code") == ErrorCode.INVALID_ARGUMENT, result
    assert result["work_limit_sec"] == workload.LIMIT_SEC < result["estimated_work_sec"]
    assert "Nothing was returned. Rescope to fit" in result["error"]
    return result


def _refusal(result):
    return _refusal_of(result)["error"]


HOSTILE = [
    ("compute_psd", {"tmin": 0.013}),
    ("compute_psd", {"method": "multitaper", "tmax": 3000}),
    ("compute_band_power", {"tmin": 0.013, "channels": CHANNELS * 20}),
    ("compute_temporal_features", {"tmin": 0.013}),
    ("compute_asymmetry", {"tmin": 0.013}),
    ("compute_channel_correlation", {"tmin": 0.013}),
    ("compute_windowed_features", {"channels": ["Cz"], "features": ["kurtosis"], "window_sec": 1800.5, "step_sec": 10}),
    ("detect_transients", {}),
    ("detect_transients", {"min_amplitude_uv": 0, "max_candidates_per_channel": 10**12}),
]


@pytest.mark.parametrize(("tool_name", "arguments"), HOSTILE)
def test_a_call_over_the_limit_is_refused_before_it_reads_a_sample(hour, limit, monkeypatch, tool_name, arguments):
    def reading(*args, **kwargs):
        raise AssertionError("a refused call read samples")

    monkeypatch.setattr(ranges.SignalSource, "read", reading)
    limit(1e-4)
    _refusal(run(tool_name, **arguments))


@pytest.mark.parametrize(("tool_name", "arguments"), HOSTILE)
def test_the_same_call_gets_the_same_answer_and_fits_within_a_larger_limit(hour, limit, tool_name, arguments):
    limit(1e-4)
    assert run(tool_name, **arguments) == run(tool_name, **arguments)
    limit(1000)
    assert "error" not in run(tool_name, **arguments)


@pytest.mark.parametrize(("tool_name", "arguments"), [
    ("compute_psd", {"tmin": 0.013}),
    ("compute_temporal_features", {"tmin": 0.013, "channels": ["C3", "C4", "C3"]}),
    ("compute_channel_correlation", {"tmin": 0.013}),
    ("detect_transients", {"tmin": 5}),
])
def test_each_suggested_rescope_fits(hour, limit, tool_name, arguments):
    limit(1e-6)
    limit(_refusal_of(run(tool_name, **arguments))["estimated_work_sec"] * 0.7)  # one channel of two or three fits
    message = _refusal(run(tool_name, **arguments))
    channels = re.search(r"use <= (\d+) channel\(s\) over this time range", message)
    span = re.search(r"to a <= ([\d.]+)s chunk via tmin/tmax", message)
    assert span, message
    tmin = arguments.get("tmin", 0)
    assert "error" not in run(tool_name, **{**arguments, "tmax": tmin + float(span.group(1))})
    if tool_name != "compute_channel_correlation":  # two channels cost more than the suggestion allows
        assert channels, message
        fewer = list(dict.fromkeys(arguments.get("channels", CHANNELS)))[: int(channels.group(1))]
        assert "error" not in run(tool_name, **{**arguments, "channels": fewer})


def test_a_long_welch_window_off_the_kept_grid_is_pointed_to_the_nearest_start_on_it(hour, limit):
    limit(0.004)
    message = _refusal(run("compute_band_power", tmin=12.345))
    assert "start the window at tmin=12 s instead, which is answered from precomputed statistics" in message
    assert "error" not in run("compute_band_power", tmin=12)


def test_multitaper_is_pointed_to_welch(hour, limit):
    limit(0.05)
    assert "use method 'welch'" in _refusal(run("compute_psd", method="multitaper", tmax=3000))
    assert "error" not in run("compute_psd", method="welch", tmax=3000)


def test_a_transient_scan_with_too_many_candidates_is_refused_once_they_are_counted(hour, limit):
    """Filtering costs what the range does; measuring the candidates what their number does."""
    filtered = transients.bandpass(noise(3600, SFREQ, amplitude_v=2e-5, seed=2) + sine(10, 1e-5, 3600, SFREQ), SFREQ)
    above = transients.count_above(filtered, min_amplitude_uv=0)
    scan = len(filtered) * (costs.READ_NS + costs.BANDPASS_NS + costs.MAXIMA_NS)
    limit((scan + above * costs.PEAK_SPACING_NS) * 1.05 / 1e9)  # filtering and spacing fit; measuring them all does not
    message = _refusal(run("detect_transients", channels=["Cz"], min_amplitude_uv=0, max_candidates_per_channel=10**12))
    assert "measuring the" in message and "(a) lower max_candidates_per_channel" in message
    assert "error" not in run("detect_transients", channels=["Cz"], min_amplitude_uv=0)


def test_channels_recorded_at_a_lower_rate_are_named_as_the_costly_ones(episode, limit):
    data = np.stack([noise(3600, SFREQ, seed=seed) for seed in range(2)])
    recording = make_recording(data, SFREQ, ["EEG", "Resp"])
    recording.whole_read_channels = frozenset({1})
    episode(recording)
    limit(0.01)
    assert "leave out the channels recorded at a lower rate (Resp)" in _refusal(run("compute_temporal_features", tmin=0.5))


def test_a_channel_named_many_times_is_computed_once(hour, monkeypatch):
    counted = []
    count = temporal.zero_crossing_count
    monkeypatch.setattr(temporal, "zero_crossing_count", lambda *args: counted.append(1) or count(*args))
    once = run("compute_temporal_features", channels=["Cz"], tmin=0.013)["channels"]  # the statistics kept, too
    before = len(counted)
    assert run("compute_temporal_features", channels=["Cz"] * 30, tmin=0.013)["channels"] == once * 30
    assert len(counted) == before + 1
