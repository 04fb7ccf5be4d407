"""The demo's signal generators have the signatures they are meant to have, and are seeded.

Pure tests (no database): spectra are Welch PSDs from scipy, the same estimator the tools use.
"""

import numpy as np
import pytest
from scipy.signal import welch

from benchmark.demo import signals

SLEEP_SFREQ = 100.0


def psd(x, sfreq, *, seconds=4.0):
    """Welch PSD with ``seconds``-long Hann segments: (freqs in Hz, power in unit²/Hz)."""
    return welch(np.asarray(x, dtype=float), sfreq, nperseg=min(int(seconds * sfreq), np.shape(x)[-1]))


def band_power(x, sfreq, low, high):
    freqs, power = psd(x, sfreq)
    inside = (freqs >= low) & (freqs <= high)
    return float(power[..., inside].sum(axis=-1) * (freqs[1] - freqs[0]))


def relative_power(x, sfreq, low, high, *, total=(0.5, 30.0)):
    return band_power(x, sfreq, low, high) / band_power(x, sfreq, *total)


def peak_frequency(x, sfreq, low, high):
    freqs, power = psd(x, sfreq)
    inside = (freqs >= low) & (freqs <= high)
    return float(freqs[inside][np.argmax(power[inside])])


# ---------------------------------------------------------------------------------------------
# Building blocks


@pytest.mark.parametrize("exponent", [1.0, 2.0])
def test_pink_noise_has_the_requested_spectral_slope(exponent):
    x = signals.pink_noise(60 * 256, 256.0, seed=1, exponent=exponent)[0]
    freqs, power = psd(x, 256.0)
    fit = (freqs >= 4) & (freqs <= 60)
    slope = np.polyfit(np.log10(freqs[fit]), np.log10(power[fit]), 1)[0]
    np.testing.assert_allclose(slope, -exponent, atol=0.15)


def test_shaped_noise_has_zero_mean_and_unit_rms_per_channel():
    x = signals.shaped_noise(5000, 250.0, signals.pink_gain(), seed=3, n_channels=4)
    assert x.shape == (4, 5000)
    np.testing.assert_allclose(x.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(np.mean(x**2, axis=1)), 1.0)


@pytest.mark.parametrize("freq", [5.5, 10.0, 20.0])
def test_rhythm_peaks_at_its_frequency(freq):
    x = signals.rhythm(120 * 200, 200.0, freq, seed=4, width=0.5)[0]
    assert abs(peak_frequency(x, 200.0, 1, 45) - freq) <= 0.5


def test_event_onsets_fall_only_where_the_rate_is_positive():
    rate = np.zeros(100_000)
    rate[20_000:30_000] = 5.0
    onsets = signals.event_onsets(rate, 100.0, seed=0)
    assert onsets.size > 200
    assert onsets.min() >= 20_000 and onsets.max() < 30_000


def test_place_events_adds_templates_and_drops_what_runs_past_the_end():
    out = signals.place_events(10, [0, 8], np.ones((2, 4)))
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1])


@pytest.mark.parametrize("seed", [1.5, "7", None, True])
def test_rejects_a_seed_that_is_not_an_int_or_a_generator(seed):
    with pytest.raises(TypeError, match="seed"):
        signals.pink_noise(100, 100.0, seed=seed)


def test_rejects_unknown_electrodes_and_stages():
    with pytest.raises(ValueError, match="unknown electrode 'XYZ'"):
        signals.resting_state(["O1", "XYZ"], 1000, 500.0, seed=0)
    with pytest.raises(ValueError, match="unknown sleep stage"):
        signals.sleep_night(["W", "N2"], seed=0)


# ---------------------------------------------------------------------------------------------
# Determinism: the same seed always gives the same signal, another seed another one

GENERATORS = {
    "pink_noise": lambda seed: signals.pink_noise(2000, 256.0, seed=seed),
    "resting_state": lambda seed: signals.resting_state(["Fp1", "Cz", "O2"], 2000, 500.0, seed=seed),
    "clean_epoch": lambda seed: signals.clean_epoch(512, 256.0, seed=seed),
    "ocular_epoch": lambda seed: signals.ocular_epoch(512, 256.0, seed=seed),
    "muscle_epoch": lambda seed: signals.muscle_epoch(512, 256.0, seed=seed),
    "bonn_segment": lambda seed: signals.bonn_segment("S", seed=seed),
    "seizure_recording": lambda seed: signals.seizure_recording(
        ["FP1-F7", "F7-T7", "-", "T8-P8"], 60.0, 256.0, [(20.0, 40.0)], seed=seed),
    "hypnogram": lambda seed: signals.hypnogram(400, seed=seed, sleep_onset_epochs=40, final_wake_epochs=30),
    "sleep_night": lambda seed: signals.sleep_night(["W", "2", "3", "R"], seed=seed)["EEG Fpz-Cz"],
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_same_seed_gives_the_same_signal(name):
    make = GENERATORS[name]
    np.testing.assert_array_equal(make(11), make(11))
    np.testing.assert_array_equal(make(np.random.default_rng(11)), make(11))
    assert not np.array_equal(make(11), make(12))


# ---------------------------------------------------------------------------------------------
# Resting-state cohorts (T4)

ELECTRODES = ["Fp1", "Fz", "Cz", "Pz", "O1", "O2"]


@pytest.fixture(scope="module")
def cohorts():
    n_times = 120 * 500
    return {name: signals.resting_state(ELECTRODES, n_times, 500.0, seed=5, profile=profile)
            for name, profile in signals.COHORT_PROFILES.items()}


def test_healthy_controls_have_a_clean_alpha_peak_near_10_hz_posteriorly(cohorts):
    healthy = cohorts["HC"]
    o1, fz = healthy[ELECTRODES.index("O1")], healthy[ELECTRODES.index("Fz")]
    assert 9.5 <= peak_frequency(o1, 500.0, 2, 30) <= 10.5
    assert relative_power(o1, 500.0, 8, 13) > 0.7
    assert band_power(o1, 500.0, 8, 13) > 5 * band_power(fz, 500.0, 8, 13)


def test_alzheimer_profile_has_a_slower_alpha_peak_and_more_theta(cohorts):
    o1 = ELECTRODES.index("O1")
    healthy, alzheimer = cohorts["HC"][o1], cohorts["AD"][o1]
    assert peak_frequency(alzheimer, 500.0, 7, 13) <= peak_frequency(healthy, 500.0, 7, 13) - 1.5
    theta_alpha = {name: band_power(x, 500.0, 4, 8) / band_power(x, 500.0, 8, 13)
                   for name, x in (("HC", healthy), ("AD", alzheimer))}
    assert theta_alpha["AD"] > 10 * theta_alpha["HC"]


def test_ftd_profile_slows_the_frontal_eeg_and_spares_posterior_alpha(cohorts):
    fz, o1 = ELECTRODES.index("Fz"), ELECTRODES.index("O1")
    frontal_slow = {name: relative_power(x[fz], 500.0, 1, 8) for name, x in cohorts.items()}
    assert frontal_slow["FTD"] > frontal_slow["HC"] + 0.2
    assert relative_power(cohorts["FTD"][o1], 500.0, 8, 13) > 0.6
    assert 8.8 <= peak_frequency(cohorts["FTD"][o1], 500.0, 7, 13) <= 10.0


# ---------------------------------------------------------------------------------------------
# Artifact epochs (T2) and Bonn segments (T3)


def _mean_share(make, low, high, *, total=(0.5, 128.0)):
    return np.mean([relative_power(make(512, 256.0, seed=seed), 256.0, low, high, total=total) for seed in range(20)])


def test_muscle_epochs_are_dominated_by_high_frequencies():
    assert _mean_share(signals.muscle_epoch, 20, 128) > 0.85
    assert _mean_share(signals.clean_epoch, 20, 128) < 0.2


def test_ocular_epochs_are_dominated_by_low_frequencies():
    assert _mean_share(signals.ocular_epoch, 0.5, 4) > 0.9
    assert _mean_share(signals.clean_epoch, 0.5, 4) < 0.2


def test_clean_epochs_have_an_alpha_peak():
    peaks = [peak_frequency(signals.clean_epoch(512, 256.0, seed=seed), 256.0, 1, 40) for seed in range(10)]
    assert all(8.5 <= peak <= 11.5 for peak in peaks)


@pytest.mark.parametrize("set_name", signals.BONN_SETS)
def test_bonn_segments_are_4097_integer_samples_in_the_12_bit_range(set_name):
    x = signals.bonn_segment(set_name, seed=2)
    assert x.shape == (4097,) and x.dtype.kind == "i"
    assert x.min() >= -2048 and x.max() <= 2047


def test_bonn_ictal_segments_are_rhythmic_and_much_larger_than_normal_ones():
    rms = {name: np.mean([np.std(signals.bonn_segment(name, seed=seed)) for seed in range(5)])
           for name in ("Z", "O", "S")}
    assert rms["S"] > 4 * max(rms["Z"], rms["O"])
    for seed in range(5):
        assert 3.0 <= peak_frequency(signals.bonn_segment("S", seed=seed), 173.61, 1, 30) <= 9.5
        assert 9.0 <= peak_frequency(signals.bonn_segment("O", seed=seed), 173.61, 1, 30) <= 11.0


# ---------------------------------------------------------------------------------------------
# Seizures and artifacts in bipolar recordings (T5)


def test_ictal_discharge_is_rhythmic_in_its_frequency_range():
    sfreq = 256.0
    x = signals.ictal_discharge(int(60 * sfreq), sfreq, seed=8, freq_start=6.0, freq_end=6.0, amplitude_uv=300.0)
    assert 5.0 <= peak_frequency(x, sfreq, 1, 30) <= 7.0
    lag = int(round(sfreq / 6.0))
    centred = x - x.mean()
    autocorrelation = np.dot(centred[:-lag], centred[lag:]) / np.dot(centred, centred)
    assert autocorrelation > 0.6
    assert 0.9 * 300.0 <= np.ptp(x[int(30 * sfreq):int(40 * sfreq)]) <= 1.1 * 300.0


LABELS = ("FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP1-F3", "F3-C3", "C3-P3", "P3-O1",
          "FP2-F4", "F4-C4", "C4-P4", "P4-O2", "FZ-CZ", "CZ-PZ", "-", "T8-P8", "T8-P8")


@pytest.fixture(scope="module")
def recording():
    return signals.seizure_recording(LABELS, 300.0, 256.0, [(120.0, 180.0)], seed=9)


def test_seizures_are_high_amplitude_and_rhythmic_in_bipolar_channels(recording):
    sfreq = 256
    before, during = recording[:, 30 * sfreq:90 * sfreq], recording[:, 125 * sfreq:175 * sfreq]
    ratio = during.std(axis=1)[[i for i, label in enumerate(LABELS) if label != "-"]] / \
        before.std(axis=1)[[i for i, label in enumerate(LABELS) if label != "-"]]
    assert ratio.max() > 4 and np.median(ratio) > 1.5
    strongest = during[np.argmax(during.std(axis=1))]
    assert 2.0 <= peak_frequency(strongest, sfreq, 1, 30) <= 9.5


def test_bipolar_channels_keep_the_duplicate_and_the_dummy_of_chbmit(recording):
    np.testing.assert_array_equal(recording[LABELS.index("-")], 0.0)
    np.testing.assert_array_equal(recording[15], recording[16])


def test_blinks_are_slow_frontopolar_deflections(recording):
    sfreq = 256
    background = recording[:, 10 * sfreq:110 * sfreq]
    slow = {label: band_power(background[LABELS.index(label)], sfreq, 0.5, 3) for label in ("FP1-F3", "P3-O1")}
    assert slow["FP1-F3"] > 3 * slow["P3-O1"]


# ---------------------------------------------------------------------------------------------
# Sleep (T6)

STAGES = ("W", "1", "2", "3", "4", "R")


@pytest.fixture(scope="module")
def night():
    stages = np.repeat(STAGES, 20)
    return stages, signals.sleep_night(stages, seed=6)


def _stage(night, channel, stage):
    stages, channels = night
    per_epoch = int(signals.EPOCH_SEC * (SLEEP_SFREQ if channels[channel].size == stages.size * 3000 else 1))
    return channels[channel].reshape(-1, per_epoch)[stages == stage].ravel()


def test_sleep_night_channels_have_the_sleep_edf_rates(night):
    stages, channels = night
    fast = ("EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal")
    assert all(channels[name].shape == (stages.size * 3000,) for name in fast)
    assert all(channels[name].shape == (stages.size * 30,) for name in channels if name not in fast)


def test_wake_has_posterior_alpha_and_the_highest_chin_tone(night):
    alpha = {stage: relative_power(_stage(night, "EEG Pz-Oz", stage), SLEEP_SFREQ, 8, 12) for stage in STAGES}
    assert alpha["W"] > 0.5 and alpha["W"] > 3 * max(alpha[s] for s in STAGES if s != "W")
    emg = {stage: _stage(night, "EMG submental", stage).mean() for stage in STAGES}
    assert max(emg, key=emg.get) == "W"


def test_n1_is_theta_dominated_with_slow_eye_movements(night):
    theta = {stage: relative_power(_stage(night, "EEG Fpz-Cz", stage), SLEEP_SFREQ, 4, 8) for stage in STAGES}
    assert max(theta, key=theta.get) == "1"
    eog_slow = {stage: band_power(_stage(night, "EOG horizontal", stage), SLEEP_SFREQ, 0.1, 1.0) for stage in STAGES}
    assert eog_slow["1"] > 3 * eog_slow["2"]


def test_n2_has_spindles_in_the_sigma_band(night):
    sigma = {stage: band_power(_stage(night, "EEG Pz-Oz", stage), SLEEP_SFREQ, 12, 15) for stage in STAGES}
    assert sigma["2"] > 3 * max(sigma["1"], sigma["R"]) and sigma["2"] > 2 * sigma["4"]


def test_n2_has_k_complexes(night):
    n2, n1 = _stage(night, "EEG Fpz-Cz", "2"), _stage(night, "EEG Fpz-Cz", "1")
    assert n2.min() < -80 and n1.min() > -80


def test_n3_is_delta_dominant(night):
    delta = {stage: relative_power(_stage(night, "EEG Fpz-Cz", stage), SLEEP_SFREQ, 0.5, 4) for stage in STAGES}
    assert delta["3"] > 0.85 and delta["4"] > delta["3"]
    assert min(delta["3"], delta["4"]) > max(delta[s] for s in ("W", "1", "2", "R"))


def test_rem_has_sawtooth_theta_rapid_eye_movements_and_the_lowest_chin_tone(night):
    theta = relative_power(_stage(night, "EEG Fpz-Cz", "R"), SLEEP_SFREQ, 2, 6)
    assert theta > relative_power(_stage(night, "EEG Fpz-Cz", "2"), SLEEP_SFREQ, 2, 6)
    eog_rms = {stage: np.std(_stage(night, "EOG horizontal", stage)) for stage in ("2", "R")}
    assert eog_rms["R"] > 2 * eog_rms["2"]
    emg = {stage: _stage(night, "EMG submental", stage).mean() for stage in STAGES}
    assert min(emg, key=emg.get) == "R"


def test_hypnogram_is_a_plausible_night():
    stages = signals.hypnogram(1080, seed=0, sleep_onset_epochs=260, final_wake_epochs=160)
    assert set(stages) <= set(signals.SLEEP_STAGES)
    assert (stages[:260] == "W").all() and (stages[-160:] == "W").all()
    assert stages[260] != "W" and stages[-161] != "W"
    sleep = stages[260:-160]
    share = {stage: np.mean(np.isin(sleep, codes)) for stage, codes in
             {"N1": ["1"], "N2": ["2"], "N3": ["3", "4"], "REM": ["R"], "wake": ["W", "M"]}.items()}
    assert 0.01 < share["N1"] < 0.1 and 0.4 < share["N2"] < 0.7
    assert 0.1 < share["N3"] < 0.3 and 0.1 < share["REM"] < 0.3 and share["wake"] < 0.1
    half = sleep.size // 2
    assert np.isin(sleep[:half], ["3", "4"]).sum() > 2 * np.isin(sleep[half:], ["3", "4"]).sum()
    assert (sleep[half:] == "R").sum() > (sleep[:half] == "R").sum()
