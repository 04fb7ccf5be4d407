"""The pure signal functions against scipy/MNE and signals whose answer is known."""
import numpy as np
import pytest
import scipy.signal
import scipy.stats

from bench import official_tools
from tests.tools_app.recordings import make_raw, make_recording, noise, sine
from tools_app.signal import noise as noise_metrics
from tools_app.signal import ranges, segments, spatial, spectral, temporal, transients, windowed
from tools_app.signal.rounding import round_value, round_values
from tools_app.signal.workspace import Workspace


# ---------------------------------------------------------------------- spectral

@pytest.mark.parametrize("sfreq", [100.0, 173.61, 256.0, 500.0])
@pytest.mark.parametrize("seconds", [0.6, 3.0, 23.6])
def test_welch_matches_scipy_with_official_settings(sfreq, seconds):
    data = np.stack([noise(seconds, sfreq, seed=1), sine(10, 2e-5, seconds, sfreq) + noise(seconds, sfreq, seed=2)])
    nperseg = min(int(sfreq * 2), data.shape[1])
    expected_freqs, expected = scipy.signal.welch(data, fs=sfreq, nperseg=nperseg)
    freqs, psd = spectral.welch_psd(data, sfreq)
    np.testing.assert_array_equal(freqs, expected_freqs)
    np.testing.assert_allclose(psd, expected, rtol=1e-12, atol=0)


def test_welch_nperseg_truncates_non_integer_rates():
    assert spectral.welch_nperseg(173.61, 4097) == 347
    assert spectral.welch_step(347) == 174
    assert spectral.welch_nperseg(256.0, 300) == 300


def test_welch_of_a_long_signal_is_the_average_of_its_batched_segment_periodograms():
    sfreq = 100.0
    signal = noise(3600, sfreq, seed=3) + sine(12, 1e-5, 3600, sfreq)
    total, n_segments = spectral.segment_periodogram_sum(signal, sfreq, 200)
    assert n_segments > 3 * spectral._SEGMENTS_PER_BATCH
    _, expected = scipy.signal.welch(signal, fs=sfreq, nperseg=200)
    np.testing.assert_allclose(total / n_segments, expected, rtol=1e-12)


def test_a_signal_gets_the_same_spectrum_alone_or_with_others():
    sfreq = 100.0
    data = np.stack([noise(2000, sfreq, seed=seed) for seed in range(3)])
    alone = spectral.welch_psd(data[1], sfreq)[1]
    together = spectral.welch_psd(data, sfreq)[1][1]
    np.testing.assert_array_equal(alone, together)


@pytest.mark.parametrize("sfreq", [173.61, 256.0])
def test_alpha_peak_of_a_10_hz_sine_is_10_hz(sfreq):
    freqs, psd = spectral.welch_psd(sine(10, 3e-5, 20, sfreq) + noise(20, sfreq, amplitude_v=1e-6), sfreq)
    frequency, power = spectral.peak_frequency(freqs, psd, spectral.ALPHA_RANGE)
    assert frequency == pytest.approx(10.0, abs=freqs[1])
    assert power > 0


def test_band_edges_are_inclusive_so_an_edge_bin_counts_twice():
    freqs = np.arange(0, 50.5, 0.5)
    psd = np.zeros_like(freqs)
    psd[freqs == 8.0] = 1.0
    powers = spectral.band_powers(freqs, psd)
    assert powers["theta"] == pytest.approx(0.25) and powers["alpha"] == pytest.approx(0.25)
    assert powers["delta"] == 0.0


def test_a_band_without_bins_is_absent():
    freqs = np.arange(0, 20.5, 0.5)
    powers = spectral.band_powers(freqs, np.ones_like(freqs))
    assert set(powers) == {"delta", "theta", "alpha", "beta"}


def test_band_power_matches_the_trapezoid_rule_one_channel_at_a_time():
    freqs, psd = spectral.welch_psd(np.stack([noise(30, 256.0, seed=seed) for seed in range(4)]), 256.0)
    powers = spectral.band_powers(freqs, psd)
    for band, (low, high) in spectral.DEFAULT_BANDS.items():
        mask = (freqs >= low) & (freqs <= high)
        for row in range(4):
            assert powers[band][row] == np.trapezoid(psd[row][mask], freqs[mask])


def test_band_weights_integrate_like_the_trapezoid_rule():
    freqs, psd = spectral.welch_psd(noise(60, 100.0, seed=5), 100.0)
    weights = spectral.band_weights(freqs, spectral.WINDOWED_BANDS)
    direct = spectral.band_powers(freqs, psd, spectral.WINDOWED_BANDS)
    np.testing.assert_allclose(psd @ weights, [direct[band] for band in spectral.WINDOWED_BANDS], rtol=1e-13)


def test_official_multitaper_averages_welch_spectra_of_dpss_tapered_copies():
    sfreq = 128.0
    data = np.stack([noise(8, sfreq, seed=6), sine(9, 1e-5, 8, sfreq)])
    tapers = scipy.signal.windows.dpss(data.shape[1], 4, Kmax=7)
    expected = np.mean([scipy.signal.welch(data * taper, fs=sfreq, nperseg=256)[1] for taper in tapers], axis=0)
    np.testing.assert_allclose(spectral.official_multitaper_psd(data, sfreq)[1], expected, rtol=1e-9,
                               atol=1e-12 * expected.max())


# ---------------------------------------------------------------------- temporal

def test_vectorised_temporal_features_equal_the_one_channel_computation():
    data = np.stack([noise(10, 256.0, seed=seed) + seed * 1e-6 for seed in range(5)])
    mean, std, rms = temporal.mean_std_rms_uv(data)
    skewness, kurtosis = temporal.skewness_kurtosis(data * 1e6)
    activity, mobility, complexity = temporal.hjorth(data)
    for row, x in enumerate(data):
        uv = x * 1e6
        assert (mean[row], std[row], rms[row]) == (np.mean(uv), np.std(uv), np.sqrt(np.mean(uv**2)))
        assert (skewness[row], kurtosis[row]) == (scipy.stats.skew(uv), scipy.stats.kurtosis(uv))
        dx = np.diff(x)
        assert activity[row] == np.var(x)
        assert mobility[row] == np.sqrt(np.var(dx) / max(np.var(x), 1e-30))
        expected_complexity = np.sqrt(np.var(np.diff(dx)) / max(np.var(dx), 1e-30)) / max(mobility[row], 1e-30)
        assert complexity[row] == expected_complexity


def test_hjorth_mobility_of_a_sine_is_its_angular_step():
    sfreq, frequency = 256.0, 10.0
    _, mobility, complexity = temporal.hjorth(sine(frequency, 1e-5, 10, sfreq))
    assert mobility == pytest.approx(2 * np.sin(np.pi * frequency / sfreq), rel=1e-3)
    assert complexity == pytest.approx(1.0, rel=1e-2)


def test_zero_crossing_rate_of_a_sine_is_twice_its_frequency():
    signal = sine(10, 1e-5, 10, 100.0, phase=0.3)
    assert temporal.zero_crossing_rate_hz(signal, 100.0) == pytest.approx(20.0, abs=0.2)


def test_zero_crossings_count_steps_into_and_out_of_exact_zero():
    signal = np.array([1.0, 0.0, -1.0, -1.0, 0.0, 0.0, 2.0]) + 0.0
    centred = signal - signal.mean()
    expected = np.sum(np.diff(np.sign(centred)) != 0)
    assert temporal.zero_crossing_count(signal) == expected
    exact = np.array([1.0, 0.0, -1.0, 0.0])
    assert temporal.zero_crossing_count(exact) == np.sum(np.diff(np.sign(exact - exact.mean())) != 0)


def test_line_length_is_the_summed_step_per_second():
    ramp = np.arange(101) * 1e-6
    assert temporal.line_length_uv_s(ramp, 100.0) == pytest.approx(100 / 1.01)
    assert temporal.line_length_uv_s(ramp, 100.0, differentiate_in_uv=True) == pytest.approx(100 / 1.01)


# ---------------------------------------------------------------------- noise

def test_a_flat_line_has_flat_line_ratio_1_and_saturation_1():
    flat = np.full(1000, 3e-6)
    assert noise_metrics.flat_line_ratio(flat) == 1.0
    assert noise_metrics.saturation_ratio(flat) == 1.0


def test_clipping_raises_the_saturation_ratio():
    signal = noise(10, 256.0, amplitude_v=2e-5, seed=7)
    clipped = np.clip(signal, -1e-5, 1e-5)
    assert noise_metrics.saturation_ratio(clipped) > 0.5 > noise_metrics.saturation_ratio(signal)


def test_added_50_hz_raises_the_line_noise_ratio():
    sfreq = 256.0
    clean = noise(20, sfreq, seed=8)
    freqs, psd_clean = spectral.welch_psd(clean, sfreq)
    _, psd_mains = spectral.welch_psd(clean + sine(50, 2e-5, 20, sfreq), sfreq)
    assert noise_metrics.line_noise_ratio(freqs, psd_mains, sfreq, 50) > 10 * noise_metrics.line_noise_ratio(freqs, psd_clean, sfreq, 50)
    assert noise_metrics.line_noise_ratio(freqs, psd_clean, sfreq, 50) == pytest.approx(1.0, rel=0.5)


def test_high_frequency_ratio_of_white_noise_is_the_share_of_the_band_above_40_hz():
    sfreq = 256.0
    freqs, psd = spectral.welch_psd(noise(200, sfreq, seed=9), sfreq)
    assert noise_metrics.high_frequency_ratio(freqs, psd, sfreq) == pytest.approx((128 - 40) / (127 - 1), rel=0.05)


# ---------------------------------------------------------------------- rounding

@pytest.mark.parametrize("decimals", [0, 1, 2, 4])
def test_rounding_many_values_at_once_equals_pythons_round(decimals):
    rng = np.random.default_rng(15)
    values = np.concatenate([
        rng.uniform(-1000, 1000, 20000),
        np.arange(-5000, 5000) / 20,  # half-way points at 1 dp, exact or nearly
        np.arange(0, 10000) / 2000 + 0.00005,  # half-way points at 4 dp
        [0.15, 2.675, 1.0005, -0.05, 1e300, -1e300, 5e-324, -0.0, np.nan, np.inf, -np.inf],
    ])
    expected = [round_value(value, decimals) for value in values]
    assert round_values(values, decimals).tolist() == expected


# ---------------------------------------------------------------------- transients

def _spiky_signal(sfreq=256.0, seconds=20.0, times=(3.0, 7.5, 12.25, 16.0)):
    signal = noise(seconds, sfreq, amplitude_v=3e-6, seed=10)
    for at in times:
        index = int(at * sfreq)
        signal[index - 3 : index + 4] += 2e-4 * np.array([0.2, 0.5, 0.85, 1.0, 0.85, 0.5, 0.2])
    return signal


def _candidates(signal, sfreq, *, min_amplitude_uv, max_candidates):
    filtered = transients.bandpass(signal, sfreq)
    peaks, positive, amplitudes = transients.find_candidates(filtered, sfreq, min_amplitude_uv=min_amplitude_uv)
    return transients.keep_candidates(filtered, sfreq, peaks, positive, amplitudes, max_candidates=max_candidates)


def test_injected_spikes_are_found_at_their_times():
    sfreq, times = 256.0, (3.0, 7.5, 12.25, 16.0)
    found = _candidates(_spiky_signal(sfreq, times=times), sfreq, min_amplitude_uv=70, max_candidates=20)
    assert sorted(found.samples[found.positive] / sfreq) == pytest.approx(times, abs=0.02)
    assert all(found.amplitude_uv >= 70)


@pytest.mark.parametrize(("sfreq", "min_amplitude_uv"), [(200.0, 20), (100.0, 0), (256.0, -5)])
def test_transient_candidates_equal_the_official_per_peak_computation(sfreq, min_amplitude_uv):
    signal = _spiky_signal(sfreq) + noise(20, sfreq, amplitude_v=3e-5, seed=11)
    found = _candidates(signal, sfreq, min_amplitude_uv=min_amplitude_uv, max_candidates=10**6)
    expected = official_tools.detect_transients(
        make_raw(signal, sfreq, ["X"]),
        {"record_id": "r", "min_amplitude_uv": min_amplitude_uv, "max_candidates_per_channel": 10**6})
    assert found.n_detected == expected["n_candidates_detected"] == len(found.samples) > 5
    summary = expected["channel_summary"][0]
    assert found.background_rms_uv == summary["background_rms_uv"]
    assert round_value(np.mean(found.amplitude_uv), 1) == summary["amplitude_mean_uv"]
    assert round_value(np.mean(found.width_ms), 1) == summary["width_mean_ms"]
    assert round_value(np.mean(found.sharpness_uv_s), 1) == summary["sharpness_mean_uv_s"]
    top = [found.row(index, channel="X", sfreq=sfreq, time_offset=0.0) for index in range(5)]
    assert top == expected["top_candidates"]


def _walked(absolute, peak):
    half = absolute[peak] / 2
    left = right = peak
    while left > 0 and absolute[left] > half:
        left -= 1
    while right < len(absolute) - 1 and absolute[right] > half:
        right += 1
    return left, right


def test_half_amplitude_spans_equal_a_sample_by_sample_walk():
    rng = np.random.default_rng(12)
    absolute = np.abs(np.cumsum(rng.standard_normal(5000)))  # a random walk: some walks run for hundreds of samples
    absolute[[100, 2000]] = 0.0, 1e-9  # a peak of amplitude 0, and one whose half nothing reaches
    peaks = np.concatenate([rng.integers(0, 5000, 400), [0, 100, 2000, 4999]])
    left, right = transients.half_amplitude_spans(absolute, peaks)
    assert list(zip(left, right)) == [_walked(absolute, int(peak)) for peak in peaks]
    assert max(right - left) > 16 * 16  # walks that cross blocks of blocks


@pytest.mark.parametrize("n_peaks", [30, 3000])  # few peaks: read around each; many: one pass over the signal
def test_steepest_slopes_equal_the_official_search(n_peaks):
    sfreq = 256.0
    filtered = noise(20, sfreq, amplitude_v=3e-5, seed=13)
    peaks = np.concatenate([np.random.default_rng(14).integers(0, len(filtered), n_peaks), [0, 5, len(filtered) - 1, len(filtered) - 20]])
    slope = np.diff(filtered) * sfreq
    reach = int(sfreq * 0.07)
    expected = []
    for peak in peaks:
        first, last = max(0, peak - reach), min(len(slope) - 1, peak + reach)
        expected.append(float(np.max(np.abs(slope[first:last]))) if last > first else 0.0)
    assert list(transients.steepest_slopes(filtered, sfreq, peaks)) == expected


def test_ranking_uses_rounded_amplitudes_and_keeps_ties_in_order():
    amplitudes = np.array([70.04, 70.01, 95.0, 70.049, 80.0])
    assert list(transients._largest_by_rounded_amplitude(amplitudes, 3)) == [2, 4, 0]
    assert list(transients._largest_by_rounded_amplitude(amplitudes, 0)) == []
    assert list(transients._largest_by_rounded_amplitude(amplitudes, 10)) == [2, 4, 0, 1, 3]


def test_the_filter_band_is_empty_at_very_low_sampling_rates():
    assert transients.filter_band(4.0) is None
    assert transients.filter_band(100.0) == (1.0, 49.0)


# ---------------------------------------------------------------------- spatial

@pytest.mark.parametrize(
    ("name", "hemisphere", "region"),
    [("EEG Fpz-Cz", "M", "frontal"), ("FP1-F7", "unknown", "unknown"), ("T8-P8-0", "R", "temporal"),
     ("A1", "L", "unknown"), ("F7", "L", "temporal"), ("EOG horizontal", "unknown", "unknown"), ("--0", "unknown", "unknown")],
)
def test_electrode_lookup_follows_the_official_rule(name, hemisphere, region):
    assert (spatial.hemisphere_of(name), spatial.region_of(name)) == (hemisphere, region)


def test_homologous_pairs_match_exact_and_prefixed_names_but_not_t7_t8():
    assert [pair[:2] for pair in spatial.homologous_pairs(["EEG C3", "EEG C4", "T7", "T8", "O1"])] == [("C3", "C4")]
    assert spatial.homologous_pairs(["T3", "T4"]) == [("T3", "T4", "T3", "T4")]


def test_identical_channels_correlate_at_1_and_constant_channels_at_0():
    base = noise(10, 100.0, seed=13)
    data = np.stack([base, base, -base, np.full_like(base, 2e-6), noise(10, 100.0, seed=14)])
    correlation, constant = spatial.correlation_matrix(data)
    assert round_value(correlation[0, 1]) == 1.0 and round_value(correlation[0, 2]) == -1.0
    assert constant.tolist() == [False, False, False, True, False]
    assert not correlation[3].any() and not correlation[:, 3].any()
    expected = [np.mean(np.abs(np.delete(correlation[row], row))) for row in range(5)]
    assert spatial.mean_absolute_correlation(correlation).tolist() == expected


def test_a_louder_left_side_gives_positive_asymmetry():
    assert spatial.asymmetry_index(2.0, 1.0, floor=1e-10) == pytest.approx(1 / 3)
    assert spatial.asymmetry_index(0.0, 0.0, floor=1e-10) == 0.0


# ---------------------------------------------------------------------- windows

def test_window_starts_follow_the_official_range_rule():
    starts, length = windowed.window_starts(1000, 300, 250)
    assert starts.tolist() == [0, 250, 500] and length == 300
    starts, length = windowed.window_starts(200, 300, 100)
    assert starts.tolist() == [0] and length == 200


@pytest.mark.parametrize("sfreq", [100.0, 173.61, 256.0])
def test_window_features_equal_the_per_window_official_computation(sfreq):
    data = np.stack([noise(60, sfreq, seed=15) + sine(11, 1e-5, 60, sfreq), noise(60, sfreq, seed=16)])
    starts, length = windowed.window_starts(data.shape[1], int(7 * sfreq), int(5 * sfreq))
    values = windowed.window_features(data, sfreq, starts, length, windowed.FEATURES)
    for row in range(2):
        for column, begin in enumerate(starts):
            expected = official_tools._window_features(data[row, begin : begin + length], sfreq, set(windowed.FEATURES))
            ours = {name: round_value(values[name][row, column], windowed.DECIMALS[name]) for name in windowed.FEATURES}
            assert ours == expected


def test_windows_too_short_for_a_spectrum_give_zero_spectral_features():
    values = windowed.window_features(noise(1, 1.5, seed=17)[np.newaxis], 1.5, np.array([0]), 1, ["delta_power", "rms_uv"])
    assert values["delta_power"].tolist() == [[0.0]]


# ---------------------------------------------------------------------- the per-segment cache

@pytest.fixture(scope="module")
def long_source():
    """A 2-hour, 3-channel recording at 100 Hz whose length is not a whole number of seconds."""
    sfreq = 100.0
    seconds = 7200.37
    data = np.stack([
        sine(10, 2e-5, seconds, sfreq) + noise(seconds, sfreq, seed=18),
        noise(seconds, sfreq, amplitude_v=1e-5, seed=19) + 3e-6,
        np.round(noise(seconds, sfreq, amplitude_v=5e-6, seed=20) * 1e7) / 1e7,
    ])
    data[2, 1000:5000] = 0.0
    return ranges.SignalSource(make_recording(data, sfreq)), data


RANGES = [(0, None), (0, 360_000), (12_345, 700_001), (150_000, 300_000), (300, 140_000)]


@pytest.mark.parametrize(("start", "stop"), RANGES)
def test_cached_welch_equals_scipy_welch_of_the_whole_range(long_source, start, stop):
    source, data = long_source
    stop = stop or data.shape[1]
    freqs, psd = source.welch([0, 1, 2], start, stop)
    expected_freqs, expected = scipy.signal.welch(data[:, start:stop], fs=100.0, nperseg=200)
    np.testing.assert_array_equal(freqs, expected_freqs)
    np.testing.assert_allclose(psd, expected, rtol=1e-12)


@pytest.mark.parametrize(("start", "stop"), RANGES)
def test_pooled_temporal_features_equal_the_direct_ones(long_source, start, stop):
    source, data = long_source
    stop = stop or data.shape[1]
    pooled = source.temporal_features([0, 1, 2], start, stop)
    x = data[:, start:stop]
    mean, std, rms = temporal.mean_std_rms_uv(x)
    skewness, kurtosis = temporal.skewness_kurtosis(x * 1e6)
    activity, mobility, complexity = temporal.hjorth(x)
    direct = {"mean_uv": mean, "std_uv": std, "rms_uv": rms, "peak_to_peak_uv": temporal.peak_to_peak_uv(x),
              "skewness": skewness, "kurtosis": kurtosis, "hjorth_activity": activity, "hjorth_mobility": mobility,
              "hjorth_complexity": complexity, "line_length_uv_s": temporal.line_length_uv_s(x, 100.0),
              "zero_crossing_rate_hz": temporal.zero_crossing_rate_hz(x, 100.0)}
    for name, expected in direct.items():
        np.testing.assert_allclose(pooled[name], expected, rtol=1e-9, atol=1e-12, err_msg=name)


def test_pooled_noise_features_equal_the_direct_ones(long_source):
    source, data = long_source
    pooled = source.noise_features([2, 0, 2])
    np.testing.assert_array_equal(pooled["flat_line_ratio"], noise_metrics.flat_line_ratio(data[[2, 0, 2]]))
    np.testing.assert_array_equal(pooled["saturation_ratio"], [noise_metrics.saturation_ratio(data[i]) for i in (2, 0, 2)])
    np.testing.assert_allclose(pooled["rms_uv"], temporal.rms_uv(data[[2, 0, 2]]), rtol=1e-13)


def test_streamed_correlation_equals_numpy_corrcoef(long_source):
    source, data = long_source
    correlation, constant = source.correlation([0, 1, 2, 0], 0, data.shape[1])
    np.testing.assert_allclose(correlation, np.corrcoef(data[[0, 1, 2, 0]]), atol=1e-12)
    assert not constant.any()


def test_a_channel_read_whole_streams_the_same_numbers(long_source):
    """A channel stored at a lower rate is read whole by the long streams, the others in pieces."""
    _, data = long_source
    recording = make_recording(data, 100.0)
    recording.whole_read_channels = frozenset({1})
    source = ranges.SignalSource(recording)
    start = 12_345  # off the kept grid: streamed
    correlation, _ = source.correlation([0, 1, 2, 1], start, data.shape[1])
    np.testing.assert_allclose(correlation, np.corrcoef(data[[0, 1, 2, 1], start:]), atol=1e-12)
    freqs, psd = source.welch([1, 0], start, data.shape[1])
    expected_freqs, expected = scipy.signal.welch(data[[1, 0], start:], fs=100.0, nperseg=200)
    np.testing.assert_allclose(psd, expected, rtol=1e-10)
    crossings = source.temporal_features([1], start, data.shape[1])["zero_crossing_rate_hz"]
    np.testing.assert_allclose(crossings, temporal.zero_crossing_rate_hz(data[[1], start:], 100.0), rtol=1e-12)


@pytest.mark.parametrize(("window", "step"), [(3000, 3000), (1500, 500), (6000, 3000), (30_000, 30_000), (30_000, 10_100), (12_800, 6_400)])
def test_cached_windows_equal_the_direct_windows(long_source, window, step):
    source, data = long_source
    features = windowed.FEATURES
    starts, length, cached = source.windowed_features([1, 0], 6000, 654_000, window, step, features)
    assert source._windows_cached(6000, len(starts), length, step)
    direct = windowed.window_features(data[[1, 0], 6000:654_000], 100.0, starts, length, features)
    for name in features:
        np.testing.assert_allclose(cached[name], direct[name], rtol=1e-9, atol=1e-12, err_msg=name)
        rounded = np.vectorize(lambda value: round_value(value, windowed.DECIMALS[name]))
        mismatches = np.count_nonzero(rounded(cached[name]) != rounded(direct[name]))
        assert mismatches <= cached[name].size // 1000, name


def test_the_cache_holds_the_same_numbers_however_it_was_filled(long_source, monkeypatch):
    source, data = long_source
    together = source.segments
    together.build([0, 1, 2])  # three channels, built by concurrent threads
    monkeypatch.setattr(segments, "_WORKERS", 1)
    monkeypatch.setattr(segments, "_READ_SAMPLES", 1 << 18)
    monkeypatch.setattr(segments, "_COMPUTE_SAMPLES", 1 << 14)
    alone = segments.RecordSegments(source.read, 100.0, data.shape[1])
    alone.build([1])
    whole = segments.RecordSegments(source.read, 100.0, data.shape[1], whole_reads={1})  # in reads of 2^18
    whole.build([1])
    for name in ("units", "steps", "curvatures_before", "curvatures_after", "unit_blocks", "segment_bands",
                 "block_psd", "saturation_ratio", "flat_line_ratio", "whole_zero_crossings"):
        expected = getattr(together.channel(1), name)
        np.testing.assert_array_equal(getattr(alone.channel(1), name), expected, err_msg=name)
        if name != "whole_zero_crossings":
            np.testing.assert_array_equal(getattr(whole.channel(1), name), expected, err_msg=name)
    assert together.channel(1).whole_zero_crossings[1] == temporal.zero_crossing_count(data[1])
    assert whole.channel(1).whole_zero_crossings is None  # a second pass would repeat the whole reads


@pytest.mark.parametrize("whole", [False, True])
def test_the_saturation_ratio_counts_every_sample_at_the_extremes(whole):
    sfreq, seconds = 100.0, 2000.37  # the last unit is partial
    clipped = np.clip(sine(0.013, 1e-4, seconds, sfreq) + noise(seconds, sfreq, seed=3), -9e-5, 9e-5)
    single = np.round(noise(seconds, sfreq, seed=4) * 1e7) / 1e7
    single[-1] = 1.0  # the maximum only in the last, partial unit
    data = np.stack([clipped, single, np.full(clipped.size, 2e-6)])
    source = ranges.SignalSource(make_recording(data, sfreq))
    built = segments.RecordSegments(source.read, sfreq, data.shape[1], whole_reads=range(3) if whole else ())
    for pick in range(3):
        assert built.channel(pick).saturation_ratio == noise_metrics.saturation_ratio(data[pick]), pick
    assert built.channel(0).saturation_ratio > 0.1 and built.channel(2).saturation_ratio == 1.0


def test_an_edf_cache_built_in_one_pass_equals_each_channel_built_alone(tmp_path):
    from tests.tools_app.test_recording import pyedflib_edf
    from tools_app.recording import open_recording

    path = pyedflib_edf(tmp_path / "long.edf", ["A", "B", "Resp", "C"], [200, 200, 1, 200], 700)
    recording = open_recording(path)
    source = ranges.SignalSource(recording)
    source.prepare()  # A, B and C in one pass over the file, Resp read whole
    assert recording.whole_read_channels == {2} and recording.n_times == 140_000
    alone = segments.RecordSegments(source.read, recording.sfreq, recording.n_times, whole_reads=range(4))
    for pick in range(4):
        ours, expected = source.segments.channel(pick), alone.channel(pick)
        for name in ("units", "steps", "curvatures_before", "curvatures_after", "unit_blocks", "segment_bands",
                     "block_psd", "saturation_ratio", "flat_line_ratio", "whole_zero_crossings"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(expected, name), err_msg=f"{pick} {name}")
    data = recording.get_data()
    np.testing.assert_allclose(source.segments.channel(3).units[:700, segments.COLUMN["mean"]],
                               data[3, :140_000].reshape(700, 200).mean(axis=1), rtol=1e-12)  # fmt: skip
    assert source.segments.channel(1).whole_zero_crossings[1] == temporal.zero_crossing_count(data[1])


@pytest.mark.parametrize(
    ("shape", "count"), [((50, 100), None), ((3, 7, 64), None), ((1000,), 400), ((2, 10), 9), ((3,), 1), ((1,), None)]
)
def test_rows_computed_in_a_workspace_equal_the_allocating_computation(shape, count):
    workspace = Workspace()
    workspace.array("deviation", (10_000,))  # scratch left larger by an earlier use
    for seed in (23, 24):  # the second use overwrites the scratch arrays of the first
        values = np.random.default_rng(seed).standard_normal(shape) * 1e-5
        np.testing.assert_array_equal(
            segments.rows_of(values, count, workspace=workspace), segments.rows_of(values, count)
        )


@pytest.mark.parametrize(("sfreq", "seconds"), [(100.0, 300), (173.61, 60), (256.0, 4)])
def test_periodograms_computed_in_a_workspace_equal_the_allocating_computation(sfreq, seconds):
    workspace = Workspace()
    nperseg = spectral.welch_nperseg(sfreq, int(seconds * sfreq))
    for seed in (25, 26):
        data = np.stack([noise(seconds, sfreq, seed=seed), sine(10, 2e-5, seconds, sfreq)])
        np.testing.assert_array_equal(
            spectral.segment_periodograms(data, sfreq, nperseg, workspace=workspace),
            spectral.segment_periodograms(data, sfreq, nperseg),
        )


def test_pooling_rows_gives_the_moments_of_the_union():
    rng = np.random.default_rng(21)
    values = rng.standard_normal(1000) * 3 + 7
    pieces = np.split(values, [1, 250, 251, 700])
    rows = np.stack([segments.rows_of(piece) for piece in pieces if len(piece) > 2])
    whole = segments.rows_of(np.concatenate([piece for piece in pieces if len(piece) > 2]))
    pooled = segments.pool(rows)
    column = segments.COLUMN
    for name in ("n", "mean", "m2", "m3", "m4", "low", "high"):
        assert pooled[column[name]] == pytest.approx(whole[column[name]], rel=1e-12, abs=1e-9), name


@pytest.mark.parametrize("n_units", [1, 63, 64, 65, 128, 300, 1000])
def test_window_pools_by_blocks_equal_the_pool_of_their_units(long_source, n_units):
    source, data = long_source
    source.segments.build([0, 2])
    channel = source.segments.channel(2)  # with a flat stretch, so its minimum and flat steps matter
    n_whole = len(channel.units) - 1  # the last unit is a partial one
    first_units = np.unique(np.r_[0, 1, 63, 64, 65, 127, np.arange(0, n_whole - n_units, 37), n_whole - n_units])
    pooled = channel.window_pools(first_units, n_units)
    index = first_units[:, np.newaxis] + np.arange(n_units)
    one_by_one = segments.pool(np.concatenate([channel.units[index], channel.boundaries(index[:, :-1])], axis=1))
    assert n_units < 2 * segments.SEGMENTS_PER_BLOCK or len(np.unique(first_units % segments.SEGMENTS_PER_BLOCK)) > 10
    for column, name in enumerate(segments.FIELDS):  # moments near zero differ by rounding of the order of their scale
        scale = np.abs(one_by_one[:, column][np.isfinite(one_by_one[:, column])]).max()
        np.testing.assert_allclose(pooled[:, column], one_by_one[:, column], rtol=1e-11, atol=1e-12 * scale, err_msg=name)
    np.testing.assert_array_equal(pooled[:, segments.COLUMN["n"]], n_units * source.segments.unit)
