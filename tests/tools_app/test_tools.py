"""The ten tools through ``call_tool``: equal to the official computation, deterministic, safe.

The oracle is ``bench/official_tools.py``: the official definitions run plainly on the MNE
Raw the official implementation would load (scipy's ``welch`` per channel and so on).
"""
import json

import mne
import numpy as np
import pyedflib
import pytest

from bench import official_tools
from tests.datafiles import BONN, SLEEP_EDFX
from tests.tools_app.recordings import RECORD_ID, make_raw, make_recording, noise, run, same_result, sine
from tools_app import TOOL_NAMES, call_tool
from tools_app.errors import ErrorCode

MONTAGE = ["Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "T3", "C3", "Cz", "C4", "T4", "T5", "P3", "Pz", "P4", "T6", "O1", "O2"]


def montage_signal(sfreq=256.0, seconds=30.0):
    """19 monopolar channels: occipital alpha louder on the left, spikes on T3, mains on Pz."""
    data = np.stack([noise(seconds, sfreq, amplitude_v=4e-6, seed=seed) for seed in range(len(MONTAGE))])
    data[MONTAGE.index("O1")] += sine(10, 3e-5, seconds, sfreq)
    data[MONTAGE.index("O2")] += sine(10, 1.5e-5, seconds, sfreq)
    data[MONTAGE.index("Fz")] += sine(6, 1e-5, seconds, sfreq)
    data[MONTAGE.index("Pz")] += sine(50, 1e-5, seconds, sfreq)
    for at in (2.0, 9.5, 17.25, 24.0):
        index = int(at * sfreq)
        data[MONTAGE.index("T3"), index - 3 : index + 4] += 1.8e-4 * np.array([0.2, 0.5, 0.85, 1.0, 0.85, 0.5, 0.2])
    return data


CALLS = [
    ("get_recording_info", {}),
    ("get_channel_list", {}),
    ("compute_noise_metrics", {}),
    ("compute_noise_metrics", {"channels": ["Pz", "O1", "nope"], "line_freq": 60}),
    ("compute_psd", {}),
    ("compute_psd", {"channels": ["O1", "O2"], "tmin": 2, "tmax": 12.5}),
    ("compute_psd", {"channels": ["O1", "Fz"], "method": "multitaper", "tmin": 0, "tmax": 8}),
    ("compute_psd", {"channels": ["Fz"], "fmin": 1, "fmax": 20}),
    ("compute_psd", {"channels": ["Fz"], "method": "periodogram", "fmin": 9.0, "fmax": 9.4}),
    ("compute_band_power", {}),
    ("compute_band_power", {"channels": ["O1", "nope", "O1"], "tmin": 1.3}),
    ("detect_transients", {}),
    ("detect_transients", {"channels": ["T3", "C3"], "min_amplitude_uv": 15, "max_candidates_per_channel": 3, "tmin": 1.5, "tmax": 20}),
    ("detect_transients", {"channels": ["T3", "T3"], "max_events_per_channel": 2}),
    ("detect_transients", {"channels": ["Cz"], "min_amplitude_uv": 0, "tmin": 0, "tmax": 2}),
    ("detect_transients", {"channels": ["T3", "O1", "T3"], "min_amplitude_uv": 0, "max_candidates_per_channel": 10**12}),
    ("compute_temporal_features", {}),
    ("compute_temporal_features", {"channels": ["O1"], "tmin": 0, "tmax": 10.01}),
    ("compute_asymmetry", {}),
    ("compute_asymmetry", {"feature": "amplitude"}),
    ("compute_asymmetry", {"feature": "band_power", "tmin": 5, "tmax": 15}),
    ("compute_channel_correlation", {}),
    ("compute_channel_correlation", {"channels": ["O1", "O2", "Fz", "O1"], "tmin": 3, "tmax": 4}),
    ("compute_windowed_features", {}),
    ("compute_windowed_features", {"channels": ["O1"], "features": list(official_tools.WINDOWED_FEATURES), "window_sec": 2, "step_sec": 1.5}),
    ("compute_windowed_features", {"channels": ["T3", "Pz"], "features": ["rms_uv", "nope", "zero_crossing_rate_hz"], "window_sec": 100}),
    ("compute_windowed_features", {"channels": ["O2"], "features": ["sigma_power", "slow_fast_ratio"], "tmin": 10, "tmax": 20.3, "window_sec": 4}),
]


def _comparable(result):
    """The asymmetry tool's not-applicable reason is our own wording; everything else must match."""
    if result.get("applicable") is False:
        return {key: value for key, value in result.items() if key not in ("_meta", "reason")}
    return result


@pytest.mark.parametrize(("tool_name", "arguments"), CALLS)
def test_every_tool_equals_the_official_computation(episode, tool_name, arguments):
    data, sfreq = montage_signal(), 256.0
    episode(make_recording(data, sfreq, MONTAGE))
    expected = official_tools.call(make_raw(data, sfreq, MONTAGE), tool_name, {"record_id": RECORD_ID, **arguments})
    assert run(tool_name, **arguments) == expected


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
def test_results_start_with_meta_and_are_byte_identical_for_identical_arguments(episode, tool_name):
    episode(make_recording(montage_signal(), 256.0, MONTAGE))
    first = run(tool_name)
    run("compute_band_power", channels=["O1"], tmin=3, tmax=9)
    second = run(tool_name)
    assert next(iter(first)) == "_meta"
    assert json.dumps(first) == json.dumps(second)
    meta = first["_meta"]
    body = {key: value for key, value in first.items() if key != "_meta"}
    size = len(json.dumps(body, ensure_ascii=False))
    assert meta["approx_response_bytes"] == size and meta["approx_response_tokens"] == size // 4
    assert meta["approx_response_kb"] == round(size / 1024, 1)


LONG_CALLS = [
    ("compute_noise_metrics", {}),
    ("compute_psd", {}),
    ("compute_psd", {"tmin": 600, "tmax": 4000}),
    ("compute_psd", {"channels": ["Cz"], "tmin": 600.5, "tmax": 4000}),
    ("compute_band_power", {"tmin": 1200}),
    ("compute_temporal_features", {}),
    ("compute_temporal_features", {"tmin": 33.33, "tmax": 5000.07}),
    ("compute_asymmetry", {"tmin": 0, "tmax": 3000}),
    ("compute_channel_correlation", {"tmin": 0, "tmax": 5000}),
    ("compute_windowed_features", {"channels": ["C3"], "features": list(official_tools.WINDOWED_FEATURES),
                                   "window_sec": 150}),
    ("compute_windowed_features", {"channels": ["C4", "Cz"], "features": ["kurtosis", "sigma_power", "zero_crossing_rate_hz"],
                                   "window_sec": 120, "step_sec": 60, "tmin": 300}),
]


@pytest.fixture(scope="module")
def long_montage():
    """Two hours of C3, C4 and Cz at 100 Hz: long enough for the per-segment cache."""
    sfreq, seconds = 100.0, 7200.0
    data = np.stack([noise(seconds, sfreq, amplitude_v=8e-6, seed=40 + seed) for seed in range(3)])
    data[0] += sine(10, 2e-5, seconds, sfreq)
    data[1] += sine(6, 1e-5, seconds, sfreq) + 4e-6
    return data, sfreq, ["C3", "C4", "Cz"]


@pytest.mark.parametrize(("tool_name", "arguments"), LONG_CALLS)
def test_long_ranges_from_the_segment_cache_equal_the_official_computation(episode, long_montage, tool_name, arguments):
    data, sfreq, names = long_montage
    episode(make_recording(data, sfreq, names))
    expected = official_tools.call(make_raw(data, sfreq, names), tool_name, {"record_id": RECORD_ID, **arguments})
    assert same_result(run(tool_name, **arguments), expected)


# ---------------------------------------------------------------------- known answers

def test_psd_finds_the_10_hz_alpha_peak(episode):
    episode(make_recording(montage_signal(), 256.0, MONTAGE))
    result = run("compute_psd", channels=["O1", "O2"])
    assert result["global_alpha_peak_hz"] == 10.0
    assert [row["alpha_peak_freq_hz"] for row in result["channels"]] == [10.0, 10.0]
    assert result["channels"][0]["dominant_freq_hz"] == 10.0


def test_noise_metrics_flag_a_flat_channel_and_mains(episode):
    data = montage_signal()
    data[MONTAGE.index("Cz")] = 1e-6
    episode(make_recording(data, 256.0, MONTAGE))
    rows = {row["channel"]: row for row in run("compute_noise_metrics")["channels"]}
    assert rows["Cz"]["flat_line_ratio"] == 1.0 and rows["Cz"]["saturation_ratio"] == 1.0
    assert rows["Pz"]["line_noise_ratio"] > 10 * rows["C3"]["line_noise_ratio"]


def test_transients_find_the_injected_spikes(episode):
    episode(make_recording(montage_signal(), 256.0, MONTAGE))
    result = run("detect_transients", channels=["T3"], min_amplitude_uv=100)
    times = sorted(c["time_sec"] for c in result["top_candidates"] if c["polarity"] == "positive")
    assert times == pytest.approx([2.0, 9.5, 17.25, 24.0], abs=0.02)


def test_identical_channels_correlate_at_1(episode):
    data = montage_signal()
    data[MONTAGE.index("C4")] = data[MONTAGE.index("C3")]
    episode(make_recording(data, 256.0, MONTAGE))
    result = run("compute_channel_correlation", channels=["C3", "C4", "Cz"])
    assert result["pairs"][0] == {"channel_a": "C3", "channel_b": "C4", "correlation": 1.0}


def test_a_louder_left_side_gives_positive_asymmetry(episode):
    episode(make_recording(montage_signal(), 256.0, MONTAGE))
    pairs = {(pair["left"], pair["right"]): pair for pair in run("compute_asymmetry")["pairs"]}
    assert len(pairs) == 8
    assert pairs["O1", "O2"]["amplitude_asymmetry"] > 0.2
    assert pairs["O1", "O2"]["band_power_asymmetry"]["alpha"] > 0.5


def test_asymmetry_does_not_apply_to_bipolar_montages(episode):
    names = ["FP1-F7", "F7-T7", "T7-P7", "P7-O1"]
    episode(make_recording(np.stack([noise(10, 256.0, seed=seed) for seed in range(4)]), 256.0, names))
    result = run("compute_asymmetry")
    assert result["applicable"] is False and result["pairs"] == [] and result["available_channels"] == names
    assert "time_window" not in result


# ---------------------------------------------------------------------- real files

def _real_calls(channel):
    return [
        ("get_recording_info", {}), ("get_channel_list", {}), ("compute_noise_metrics", {}),
        ("compute_psd", {"tmin": 1, "tmax": 20}), ("compute_band_power", {}),
        ("detect_transients", {"min_amplitude_uv": 40}), ("compute_temporal_features", {}),
        ("compute_channel_correlation", {"tmin": 0, "tmax": 60}),
        ("compute_windowed_features", {"channels": [channel], "window_sec": 4}),
    ]


def test_a_bonn_segment_gives_the_official_values():
    path = BONN / "S" / "S001.txt"
    metadata = {"sampling_rate": 173.61, "channel_names": ["EEG"]}
    raw = mne.io.RawArray(np.loadtxt(path)[np.newaxis] * 1e-6, mne.create_info(["EEG"], 173.61, "eeg"), verbose="ERROR")
    for tool_name, arguments in _real_calls("EEG"):
        if tool_name == "compute_channel_correlation":
            continue
        arguments = {"record_id": "bonn-1", **arguments}
        ours = call_tool(path, tool_name, arguments, record_id="bonn-1", metadata=metadata)
        assert ours == official_tools.call(raw, tool_name, arguments), tool_name


def test_the_sleep_edf_crop_gives_mne_values():
    path = SLEEP_EDFX / "short_psg.edf"
    raw = mne.io.read_raw_edf(path, preload=True, verbose="ERROR")
    for tool_name, arguments in _real_calls("EEG Fpz-Cz"):
        arguments = {"record_id": "sleep-1", **arguments}
        ours = call_tool(path, tool_name, arguments, record_id="sleep-1")
        assert same_result(ours, official_tools.call(raw, tool_name, arguments)), tool_name


CHB_CHANNELS = ["FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP2-F4", "F4-C4", "C4-P4",
                "P4-O2", "FP2-F8", "F8-T8", "T8-P8", "P8-O2", "FZ-CZ", "CZ-PZ", "P7-T7", "T7-FT9", "FT9-FT10",
                "FT10-T8", "T8-P8", "-", "-"]


@pytest.fixture
def chb_like_edf(tmp_path):
    """A 2-minute CHB-MIT-style EDF: bipolar names, a repeated T8-P8 and two '-' dummies."""
    path = tmp_path / "chb-like.edf"
    sfreq, seconds = 256, 120
    rng = np.random.default_rng(30)
    signals = [rng.standard_normal(sfreq * seconds) * 40 for _ in CHB_CHANNELS]
    signals[-1] = signals[-2] = np.zeros(sfreq * seconds)
    writer = pyedflib.EdfWriter(str(path), len(CHB_CHANNELS), file_type=pyedflib.FILETYPE_EDF)
    writer.setSignalHeaders([
        {"label": label, "dimension": "uV", "sample_frequency": sfreq, "physical_max": 800.0, "physical_min": -800.0,
         "digital_max": 32767, "digital_min": -32768, "transducer": "", "prefilter": ""}
        for label in CHB_CHANNELS
    ])
    writer.writeSamples(signals)
    writer.close()
    return path


def test_chb_mit_duplicate_and_dummy_channels_follow_mne(chb_like_edf):
    """The constant dummy channels are left out of the spectral comparisons: their spectra are
    floating-point rounding noise, whose band ratios and peaks no two implementations share."""
    raw = mne.io.read_raw_edf(chb_like_edf, preload=True, verbose="ERROR")
    info = call_tool(chb_like_edf, "get_recording_info", {"record_id": "chb"}, record_id="chb")
    assert info["channel_names"] == raw.ch_names
    assert "T8-P8-0" in info["channel_names"] and "T8-P8-1" in info["channel_names"]
    listing = call_tool(chb_like_edf, "get_channel_list", {"record_id": "chb"}, record_id="chb")
    rows = {row["name"]: row for row in listing["channels"]}
    assert rows["FP1-F7"]["hemisphere"] == "unknown" and rows["T8-P8-0"]["region"] == "temporal"
    signals = [name for name in raw.ch_names if not name.startswith("--")]
    spectral_tools = {"compute_noise_metrics", "compute_psd", "compute_band_power"}
    calls = [(name, {**arguments, "channels": signals}) if name in spectral_tools else (name, arguments)
             for name, arguments in _real_calls("T8-P8-1")]
    for tool_name, arguments in calls + [("compute_channel_correlation", {"channels": ["T8-P8-0", "T8-P8-1", "--0"]})]:
        arguments = {"record_id": "chb", **arguments}
        ours = call_tool(chb_like_edf, tool_name, arguments, record_id="chb")
        assert same_result(ours, official_tools.call(raw, tool_name, arguments)), tool_name
    dummies = call_tool(chb_like_edf, "compute_noise_metrics", {"record_id": "chb", "channels": ["--0", "--1"]},
                        record_id="chb")["channels"]
    assert [(row["rms_uv"], row["flat_line_ratio"], row["saturation_ratio"]) for row in dummies] == [(0.0, 1.0, 1.0)] * 2
    correlation = call_tool(chb_like_edf, "compute_channel_correlation", {"record_id": "chb", "channels": ["--0", "--1", "FZ-CZ"]}, record_id="chb")
    assert correlation["constant_channels"] == ["--0", "--1"]


# ---------------------------------------------------------------------- errors

def _error(result, code):
    assert set(result) >= {"record_id", "error", "error_code"} and "_meta" not in result
    assert result["error_code"] == code, result["error"]
    return result["error"]


@pytest.fixture
def montage(episode):
    return episode(make_recording(montage_signal(), 256.0, MONTAGE))


@pytest.mark.parametrize("other", ["rec-other", "EEG_0201"])
def test_rejects_a_foreign_record_id_without_listing_records(montage, other):
    result = call_tool("/data/bonn/S/S001.txt", "get_recording_info", {"record_id": other}, record_id=RECORD_ID)
    message = _error(result, ErrorCode.UNKNOWN_RECORD)
    assert result["record_id"] == other
    assert "bonn" not in message and "S001" not in message


@pytest.mark.parametrize("record_id", ["/srv/eeg/bonn/S/S001.txt", "../S/S001.txt", "S001.txt", "C:\\data\\x.edf", "~/x"])
def test_rejects_a_path_as_record_id(montage, record_id):
    result = call_tool("/data/bonn/Z/Z001.txt", "compute_psd", {"record_id": record_id})
    message = _error(result, ErrorCode.UNKNOWN_RECORD)
    assert "Z001" not in message and "/Z/" not in message


def test_an_unreadable_recording_is_an_error_without_its_path(tmp_path):
    path = tmp_path / "chb01" / "seizure_chb01_03.edf"
    result = call_tool(path, "get_recording_info", {"record_id": "r1"}, record_id="r1")
    message = _error(result, ErrorCode.UNKNOWN_RECORD)
    assert str(tmp_path) not in message and "seizure" not in message and "chb01" not in message


@pytest.mark.parametrize(
    ("tool_name", "arguments", "code", "text"),
    [
        ("compute_psd", {"channels": ["nope"]}, ErrorCode.UNKNOWN_CHANNEL,
         "None of the requested channels exist in this recording: ['nope']. Available channels: Fp1, Fp2,"),
        ("compute_windowed_features", {"channels": ["nope"]}, ErrorCode.UNKNOWN_CHANNEL,
         "None of the requested channels exist: ['nope']"),
        ("compute_channel_correlation", {"channels": ["nope", "zip"]}, ErrorCode.UNKNOWN_CHANNEL,
         "Need at least 2 valid channels for correlation. Found: []"),
        ("compute_channel_correlation", {"channels": ["O1"]}, ErrorCode.INVALID_ARGUMENT,
         "Need at least 2 valid channels for correlation. Found: ['O1']"),
        ("compute_windowed_features", {"features": ["nope"]}, ErrorCode.UNKNOWN_FEATURE,
         "No valid features requested. Allowed: ['alpha_power', 'alpha_relative',"),
        ("compute_asymmetry", {"feature": "coherence"}, ErrorCode.UNKNOWN_FEATURE, "Unknown feature 'coherence'."),
        ("compute_psd", {"tmin": 40}, ErrorCode.OUT_OF_RANGE,
         "Requested time window [40, None] s yields too few samples (0) within the 30.00s recording. "
         "Choose a window inside [0, 30.00] s."),
        ("compute_band_power", {"tmin": -1, "tmax": 5}, ErrorCode.OUT_OF_RANGE, "starts before the recording"),
        ("compute_temporal_features", {"tmax": -2}, ErrorCode.OUT_OF_RANGE, "yields too few samples (0)"),
        ("compute_windowed_features", {"tmin": 31}, ErrorCode.OUT_OF_RANGE, "Too few samples (0) in the requested time window."),
        ("compute_psd", {"tmin": 5, "tmax": 5}, ErrorCode.INVALID_ARGUMENT, "tmax (5) must be greater than tmin (5)."),
        ("compute_psd", {"tmin": 5, "tmax": 5.2}, ErrorCode.INVALID_ARGUMENT, "yields too few samples (51)"),
        ("detect_transients", {"tmin": 5, "tmax": 5.2}, ErrorCode.INVALID_ARGUMENT, "yields too few samples (51)"),
        ("compute_temporal_features", {"tmin": 1, "tmax": 1.005}, ErrorCode.INVALID_ARGUMENT, "too few samples (1)"),
        ("compute_channel_correlation", {"tmin": 1, "tmax": 1.003}, ErrorCode.INVALID_ARGUMENT, "Too few samples (0)"),
        ("compute_windowed_features", {"window_sec": 0.01}, ErrorCode.INVALID_ARGUMENT,
         "Window or step too small for the sampling rate."),
        ("compute_windowed_features", {"step_sec": 0.001}, ErrorCode.INVALID_ARGUMENT, "Window or step too small"),
        ("compute_psd", {"tmin": float("nan")}, ErrorCode.INVALID_ARGUMENT, "must be a finite number"),
        ("compute_psd", {"tmax": float("inf")}, ErrorCode.INVALID_ARGUMENT, "must be a finite number"),
        ("compute_psd", {"tmin": True}, ErrorCode.INVALID_ARGUMENT, "must be a number, got bool"),
        ("compute_psd", {"tmin": "10"}, ErrorCode.INVALID_ARGUMENT, "must be a number, got str"),
        ("compute_psd", {"channels": "O1"}, ErrorCode.INVALID_ARGUMENT, "must be a list of strings"),
        ("compute_psd", {"channels": ["O1", 2]}, ErrorCode.INVALID_ARGUMENT, "must be a list of strings"),
        ("compute_psd", {"method": 3}, ErrorCode.INVALID_ARGUMENT, "must be a string"),
        ("compute_psd", {"fmin": 30, "fmax": 20}, ErrorCode.INVALID_ARGUMENT, "No spectral bins in [fmin, fmax]"),
        ("detect_transients", {"max_candidates_per_channel": 2.5}, ErrorCode.INVALID_ARGUMENT, "must be a whole number"),
        ("detect_transients", {"max_candidates_per_channel": -1}, ErrorCode.INVALID_ARGUMENT, "0 or more"),
        ("compute_psd", {"tmin": 1e308}, ErrorCode.OUT_OF_RANGE, "far outside the recording"),
        ("compute_windowed_features", {"window_sec": 1e308}, ErrorCode.INVALID_ARGUMENT, "durations in seconds"),
        ("compute_windowed_features", {"channels": ["O1"], "window_sec": 0.05}, ErrorCode.OUTPUT_TOO_LARGE,
         "Output too large: this call would return 1 channels x 640 windows = 640 rows"),
    ],
)
def test_every_invalid_request_gets_its_error_code(montage, tool_name, arguments, code, text):
    message = _error(run(tool_name, **arguments), code)
    assert text in message


def test_a_missing_record_id_or_unknown_tool_is_an_invalid_argument(montage):
    from tools_app import call_tool as call

    _error(call("/x.edf", "compute_psd", {}, record_id=RECORD_ID), ErrorCode.INVALID_ARGUMENT)
    _error(call("/x.edf", "compute_psd", {"record_id": 7}, record_id=RECORD_ID), ErrorCode.INVALID_ARGUMENT)
    _error(call("/x.edf", "compute_psd", ["record_id"], record_id=RECORD_ID), ErrorCode.INVALID_ARGUMENT)
    assert "Available tools" in _error(call("/x.edf", "plot_eeg", {"record_id": RECORD_ID}, record_id=RECORD_ID),
                                       ErrorCode.INVALID_ARGUMENT)


def test_a_bug_in_a_tool_is_reported_not_raised(montage, monkeypatch):
    from tools_app.registry import REGISTRY

    def broken(*args, **kwargs):
        raise RuntimeError("secret /data/bonn/S path")

    spec = REGISTRY["compute_psd"]
    monkeypatch.setitem(REGISTRY, "compute_psd", type(spec)(**{**spec.__dict__, "function": broken}))
    message = _error(run("compute_psd"), ErrorCode.INTERNAL_ERROR)
    assert "secret" not in message and "/data" not in message


def test_a_long_list_of_unknown_channels_is_not_repeated_whole(montage):
    assert _error(run("compute_psd", channels=["nope", "nada"]), ErrorCode.UNKNOWN_CHANNEL).startswith(
        "None of the requested channels exist in this recording: ['nope', 'nada']. Available channels: Fp1, Fp2")
    for tool_name in ("compute_psd", "compute_windowed_features"):
        message = _error(run(tool_name, channels=["nope"] * 20000 + ["x" * 5000]), ErrorCode.UNKNOWN_CHANNEL)
        assert len(message) < 1000 and "'nope', …] (20001 names)" in message


def test_a_long_record_id_is_not_echoed_whole():
    from tools_app import call_tool as call

    result = call("/x.edf", "compute_psd", {"record_id": "EEG_" * 10000}, record_id=RECORD_ID)
    assert result["record_id"] == "EEG_" * 25 + "…" and len(result["error"]) < 500
    assert result["error_code"] == ErrorCode.UNKNOWN_RECORD


def test_unknown_arguments_are_ignored_and_null_means_omitted(montage):
    assert run("compute_psd", channels=["O1"], tmin=None, colour="blue") == run("compute_psd", channels=["O1"])


def test_multitaper_refuses_windows_longer_than_its_limit(episode):
    episode(make_recording(noise(4200, 256.0, seed=31)[np.newaxis], 256.0, ["Cz"]))
    _error(run("compute_psd", method="multitaper"), ErrorCode.INVALID_ARGUMENT)
    assert "channels" in run("compute_psd", method="multitaper", tmin=0, tmax=60)


def test_a_window_longer_than_the_range_gives_one_window_of_the_whole_range(montage):
    result = run("compute_windowed_features", channels=["O1"], window_sec=1e9, tmin=10)
    assert result["n_windows"] == 1 and result["time_range"] == [10, 30.0]
    assert (result["channels"][0]["windows"][0]["t_start"], result["channels"][0]["windows"][0]["t_end"]) == (10.0, 30.0)


def test_a_tmax_past_the_end_is_clipped_as_upstream(montage):
    assert run("compute_band_power", tmin=20, tmax=500)["channels"] == run("compute_band_power", tmin=20)["channels"]
