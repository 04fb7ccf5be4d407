"""A recording's min/max pyramid: each pixel's minimum and maximum are those of the stored samples it covers,
as pyedflib reads them, at each channel's own rate; the pyramid is kept beside the statistics and checked."""
from pathlib import Path

import numpy as np
import pyedflib
import pytest

from tests.tools_app.test_recording import pyedflib_edf
from tests.tools_app.test_stored_statistics import stats  # noqa: F401 (fixture)
from tools_app.recording import clear_recording_cache, open_recording
from tools_app.signal import pyramid, stored

ROOT = Path(__file__).resolve().parents[2]
SHORT_PSG = ROOT / "tests" / "data" / "sleep-edfx" / "short_psg.edf"
MICROVOLT = 1e-6


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """20 minutes: two channels at 256 Hz, one at 1 Hz (as Sleep-EDF's respiration), one at 64 Hz."""
    path = tmp_path_factory.mktemp("mixed") / "mixed.edf"
    return pyedflib_edf(path, ["A", "B", "Resp", "C"], [256, 256, 1, 64], 1200)


def pyedflib_samples(path) -> list[np.ndarray]:
    """Every channel's stored samples, read by pyedflib, in volts where the file's unit is µV."""
    with pyedflib.EdfReader(str(path)) as reader:
        return [reader.readSignal(i) * (MICROVOLT if reader.getPhysicalDimension(i) == "uV" else 1.0)
                for i in range(reader.signals_in_file)]


def truth(samples: np.ndarray, result: pyramid.Envelope) -> tuple[np.ndarray, np.ndarray]:
    """Each pixel's minimum and maximum, computed here from every sample it covers."""
    bounds = [*result.starts.tolist(), result.stop]
    lows = [samples[begin:end].min() for begin, end in zip(bounds, bounds[1:])]
    highs = [samples[begin:end].max() for begin, end in zip(bounds, bounds[1:])]
    return np.array(lows), np.array(highs)


@pytest.mark.parametrize("path", [SHORT_PSG, "mixed"], ids=["sleep-edf-crop", "mixed-rates"])
def test_stored_samples_are_pyedflibs_at_each_channels_own_rate(path, request):
    path = request.getfixturevalue(path) if path == "mixed" else path
    recording = open_recording(path)
    expected = pyedflib_samples(path)
    with pyedflib.EdfReader(str(path)) as reader:
        rates = [reader.getSampleFrequency(i) for i in range(reader.signals_in_file)]
    assert recording.stored_rates == rates
    assert recording.stored_lengths == [len(samples) for samples in expected]
    for pick, samples in enumerate(expected):
        np.testing.assert_allclose(recording.read_stored(pick, 0, len(samples)), samples, rtol=1e-12, atol=1e-15)
        middle = len(samples) // 3
        np.testing.assert_array_equal(recording.read_stored(pick, middle, middle + 7),
                                      recording.read_stored(pick, 0, len(samples))[middle:middle + 7])


def test_every_pixel_holds_the_true_minimum_and_maximum_of_its_samples(mixed, stats):
    recording = open_recording(mixed)
    expected = pyedflib_samples(mixed)
    rng = np.random.default_rng(3)
    levels = set()
    for pick, samples in enumerate(expected):
        n = len(samples)
        windows = [(0, n, 1), (0, n, 3), (0, n, 700), (0, n, n // 2), (1, n - 1, 5)]
        for _ in range(40):
            start = int(rng.integers(0, n - 2))
            stop = int(rng.integers(start + 2, n + 1))
            windows.append((start, stop, int(rng.integers(1, min(stop - start, 1500) + 1))))
        for start, stop, n_pixels in windows:
            result = pyramid.envelope(recording, pick, start, stop, n_pixels)
            levels.add(result.level)
            assert len(result.starts) == len(result.lows) == len(result.highs) == n_pixels
            assert result.starts[0] == start and result.stop == stop
            assert np.all(np.diff(result.starts) > 0)
            lows, highs = truth(samples, result)
            np.testing.assert_allclose(result.lows, lows, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(result.highs, highs, rtol=1e-12, atol=1e-15)
    assert {None, 0, 1, 2, 3}.issubset(levels)  # read from the file and from several levels


def test_a_whole_night_window_reads_about_as_many_values_as_it_returns(mixed, stats, monkeypatch):
    recording = open_recording(mixed)
    pyramid.pyramid_of(recording).prepare()
    read = []
    original = recording.read_stored
    monkeypatch.setattr(recording, "read_stored", lambda pick, start, stop: read.append(stop - start) or original(pick, start, stop))
    result = pyramid.envelope(recording, 0, 0, recording.stored_lengths[0], 1000)
    assert result.level is not None
    assert sum(read) == 0  # the window starts and ends on bucket edges: nothing read from the file
    result = pyramid.envelope(recording, 0, 13, recording.stored_lengths[0] - 5, 1000)
    assert 0 < sum(read) < 2 * pyramid.BASE * pyramid.FACTOR ** result.level


def test_the_pyramid_is_kept_beside_the_statistics_and_mapped_by_a_fresh_process(mixed, stats):
    first = open_recording(mixed)
    assert pyramid.Pyramid(first).prepare() == "computed"
    assert len(list(stats.rglob("*.stats"))) == 1
    clear_recording_cache()
    again = pyramid.Pyramid(open_recording(mixed))
    assert again.file_exists()
    assert again.prepare() == "kept"
    n = first.stored_lengths[1]
    expected = pyramid.envelope(first, 1, 0, n, 50, pyramid=pyramid.Pyramid(first))
    mapped = pyramid.envelope(first, 1, 0, n, 50, pyramid=again)
    np.testing.assert_array_equal(mapped.lows, expected.lows)
    np.testing.assert_array_equal(mapped.highs, expected.highs)


def test_a_damaged_pyramid_is_detected_deleted_and_rebuilt(mixed, stats):
    recording = open_recording(mixed)
    built = pyramid.Pyramid(recording)
    built.prepare()
    (path,) = stats.rglob("*.stats")
    data = bytearray(path.read_bytes())
    data[-16:-8] = np.float64(1e9).tobytes()  # the last channel's coarsest maximum
    path.write_bytes(bytes(data))
    damaged = pyramid.Pyramid(recording)
    assert damaged.prepare() == "kept"  # its header is sound; the array fails when read
    last = len(recording.stored_lengths) - 1
    top = len(pyramid.bucket_sizes(recording.stored_lengths[last])) - 1
    with pytest.raises(stored.StoreError):
        damaged.level(last, top)
    assert not path.exists()
    rebuilt = pyramid.Pyramid(recording)
    assert rebuilt.prepare() == "computed"
    assert rebuilt.level(last, top)[1].max() < 1e-2


def test_without_a_statistics_directory_it_is_built_in_memory(mixed):
    previous = stored.stats_dir()
    stored.configure(None)
    try:
        clear_recording_cache()
        recording = open_recording(mixed)
        assert pyramid.Pyramid(recording).prepare() == "memory"
        assert pyramid.pyramid_of(recording) is pyramid.pyramid_of(recording)
    finally:
        stored.configure(previous)
        clear_recording_cache()


def test_levels_follow_each_channels_own_length():
    assert pyramid.bucket_sizes(pyramid.MIN_SAMPLES) == []
    assert pyramid.bucket_sizes(300) == [64]
    assert pyramid.bucket_sizes(30000) == [64, 256, 1024, 4096]  # each level splits the channel in two at least
    recording = open_recording(SHORT_PSG)
    samples = pyedflib_samples(SHORT_PSG)[3]  # Resp oro-nasal, 300 samples at 1 Hz: a pyramid of its own
    result = pyramid.envelope(recording, 3, 0, 300, 1)  # 300 samples a pixel: 64-sample buckets fit four times
    assert result.level == 0
    np.testing.assert_allclose(result.lows, truth(samples, result)[0], rtol=1e-12)


@pytest.mark.parametrize("n_pixels", [0, 11])
def test_more_pixels_than_samples_is_refused(n_pixels):
    recording = open_recording(SHORT_PSG)
    with pytest.raises(ValueError, match="n_pixels"):
        pyramid.envelope(recording, 0, 0, 10, n_pixels)
