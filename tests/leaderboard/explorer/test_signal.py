"""The signal behind a tool call: its window from the arguments, min–max decimation, chunked reading."""
import numpy as np
import pytest

from leaderboard.explorer import signal
from tests.datafiles import SLEEP_EDFX
from tools_app.recording import Recording, open_recording

SFREQ = 100.0
CHANNELS = [f"EEG{index}" for index in range(1, 13)]


def make_recording(data, sfreq=SFREQ, ch_names=None, ch_types=None, units=None):
    data = np.atleast_2d(np.asarray(data, dtype=np.float64))
    ch_names = ch_names or CHANNELS[: len(data)]
    return Recording(
        sfreq=sfreq,
        ch_names=ch_names,
        ch_types=ch_types or ["eeg"] * len(ch_names),
        n_times=data.shape[1],
        read=lambda picks, start, stop: data[picks, start:stop].copy(),
        units=units,
    )


def window(tool_name="compute_psd", arguments=None, *, n_times=6000, ch_names=CHANNELS, eeg=None, **options):
    return signal.signal_window(
        tool_name,
        arguments,
        ch_names=list(ch_names),
        eeg_channels=list(ch_names if eeg is None else eeg),
        sfreq=SFREQ,
        n_times=n_times,
        **options,
    )


@pytest.mark.parametrize("n_times", [1, 1999, 2000, 2001, 4096, 123_457, 8_640_000])
def test_bucket_size_keeps_points_within_the_limit(n_times):
    bucket = signal.bucket_size(n_times)
    n_points = n_times if bucket == 1 else 2 * -(-n_times // bucket)
    assert n_points <= signal.MAX_POINTS


def test_short_signals_are_not_decimated():
    data = np.arange(30.0).reshape(3, 10)
    indices, values = signal.minmax_decimate(data, bucket=1)
    np.testing.assert_array_equal(indices[0], np.arange(10))
    np.testing.assert_array_equal(values, data)


def test_minmax_decimation_keeps_each_buckets_extremes_in_time_order():
    data = np.array([[0.0, 5.0, -3.0, 1.0, 2.0, 9.0, -1.0, 0.5, 7.0]])
    indices, values = signal.minmax_decimate(data, bucket=3)
    # buckets [0, 5, -3], [1, 2, 9], [-1, 0.5, 7]: max before min in the first
    np.testing.assert_array_equal(indices, [[1, 2, 3, 5, 6, 8]])
    np.testing.assert_array_equal(values, [[5.0, -3.0, 1.0, 9.0, -1.0, 7.0]])


def test_minmax_decimation_pads_a_short_last_bucket_without_new_values():
    data = np.array([[1.0, 2.0, 3.0, 4.0, -8.0]])
    indices, values = signal.minmax_decimate(data, bucket=4)
    assert indices.max() <= 4
    np.testing.assert_array_equal(values, [[1.0, 4.0, -8.0, -8.0]])


def test_a_single_spike_survives_decimation():
    data = np.zeros((1, 100_000))
    data[0, 54_321] = 250e-6
    traces = signal.read_signal(make_recording(data), window(n_times=100_000, ch_names=["EEG1"]))
    assert len(traces[0]["values"]) <= signal.MAX_POINTS
    assert max(traces[0]["values"]) == pytest.approx(250.0)
    assert traces[0]["times"][int(np.argmax(traces[0]["values"]))] == pytest.approx(543.21)


def test_chunked_reading_equals_decimating_everything_at_once(monkeypatch):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 50_001)) * 1e-5
    monkeypatch.setattr(signal, "_CHUNK_SAMPLES", 4096)
    traces = signal.read_signal(make_recording(data), window(n_times=50_001, ch_names=CHANNELS[:2]))
    indices, values = signal.minmax_decimate(data, bucket=signal.bucket_size(50_001))
    np.testing.assert_allclose(traces[1]["times"], indices[1] / SFREQ, atol=1e-4)
    np.testing.assert_allclose(traces[1]["values"], values[1] * 1e6, atol=1e-3)


def test_read_signal_gives_microvolts_at_record_times():
    data = np.tile(np.arange(600.0) * 1e-6, (2, 1))
    recording = make_recording(data, ch_names=["Fp1", "Fp2"])
    traces = signal.read_signal(recording, window(arguments={"tmin": 2, "tmax": 3}, n_times=600, ch_names=["Fp1", "Fp2"]))
    assert [trace["channel"] for trace in traces] == ["Fp1", "Fp2"]
    assert traces[0]["times"][0] == 2.0 and traces[0]["times"][-1] == 2.99
    assert traces[0]["values"][0] == pytest.approx(200.0)


def test_each_channel_is_read_in_its_own_unit_voltages_in_microvolts():
    recording = open_recording(SLEEP_EDFX / "short_psg.edf")  # a real Sleep-EDF crop, 300 s
    names = recording.ch_names
    traces = signal.read_signal(recording, window(arguments={"tmin": 100, "tmax": 110}, n_times=recording.n_times,
                                                  ch_names=names))
    assert [(trace["channel"], trace["unit"]) for trace in traces] == [
        ("EEG Fpz-Cz", "µV"), ("EEG Pz-Oz", "µV"), ("EOG horizontal", "µV"), ("Resp oro-nasal", ""),
        ("EMG submental", "µV"), ("Temp rectal", "DegC"), ("Event marker", ""),
    ]
    stored = recording.get_data(names, 10_000, 11_000)  # 1,000 samples: plotted one for one
    scale = np.array([1e6 if unit == "V" else 1.0 for unit in recording.units])
    for row, trace in enumerate(traces):
        np.testing.assert_allclose(trace["values"], stored[row] * scale[row], atol=1e-3, err_msg=trace["channel"])
    by_name = {trace["channel"]: trace["values"] for trace in traces}
    assert 34 <= min(by_name["Temp rectal"]) and max(by_name["Temp rectal"]) <= 40  # degrees, not 37e6
    assert max(map(abs, by_name["Resp oro-nasal"])) <= 2048  # the file's own numbers (its physical range)
    assert max(map(abs, by_name["EEG Fpz-Cz"])) <= 192  # µV, within the header's physical range


def test_a_channel_recorded_in_small_numbers_keeps_six_significant_digits():
    values = 2e-4 * np.sin(np.linspace(0, 6, 600))
    recording = make_recording(np.stack([values, values * 1e-6]), ch_names=["Flow", "EEG1"], units=["L/s", "V"])
    flow, eeg = signal.read_signal(recording, window(n_times=600, ch_names=["Flow", "EEG1"]))
    assert (flow["unit"], eeg["unit"]) == ("L/s", "µV")
    np.testing.assert_allclose(flow["values"], values, rtol=0, atol=1e-9)  # not rounded to 0.000
    np.testing.assert_allclose(eeg["values"], values, rtol=0, atol=1e-9)


def test_defaults_are_every_eeg_channel_and_the_whole_record():
    covered = window(arguments={}, eeg=["EEG1", "EEG2"])
    assert covered.channels == ("EEG1", "EEG2")
    assert (covered.start, covered.stop) == (0, 6000)


def test_channels_are_capped_for_plotting():
    covered = window(arguments={"channels": CHANNELS})
    assert covered.channels == tuple(CHANNELS[: signal.MAX_CHANNELS])
    assert covered.n_requested == len(CHANNELS)


def test_unknown_channels_are_reported_not_plotted():
    covered = window(arguments={"channels": ["EEG2", "Cz"]})
    assert covered.channels == ("EEG2",)
    assert covered.missing == ("Cz",)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"tmin": 10, "tmax": 20.5}, (1000, 2050)),
        ({"tmin": 50}, (5000, 6000)),
        ({"tmax": 1e9}, (0, 6000)),
        ({"tmin": 99, "tmax": 120}, (6000, 6000)),
        ({"tmin": "10", "tmax": True}, (0, 6000)),
    ],
)
def test_time_range_counts_samples_as_the_tools_do(arguments, expected):
    covered = window(arguments=arguments)
    assert (covered.start, covered.stop) == expected


def test_noise_metrics_always_cover_the_whole_record():
    covered = window("compute_noise_metrics", {"tmin": 10, "tmax": 20})
    assert (covered.start, covered.stop) == (0, 6000)


def test_asymmetry_covers_the_homologous_pairs():
    names = ["Fp1", "Fp2", "Cz", "O1", "O2"]
    covered = window("compute_asymmetry", {"channels": ["Cz"]}, ch_names=names)
    assert covered.channels == ("Fp1", "Fp2", "O1", "O2")


def test_rejects_a_tool_that_does_not_read_the_signal():
    with pytest.raises(ValueError, match="does not read the signal"):
        window("get_channel_list", {})
