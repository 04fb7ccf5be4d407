"""T2 builder: EEGdenoiseNet mixing (Eq. 10-11) on small arrays whose answers are known.

Each clean EEG row carries a fingerprint, a 10-Hz sine (bin 20 of a 2-s epoch)
whose amplitude is its row number + 1, over noise in 12-20 Hz; ocular
artifacts live in 0.5-3 Hz and muscle artifacts in 30-100 Hz, so bin 20 of any
stored signal tells which clean base it was built on, and subtracting that
base leaves exactly the scaled artifact.
"""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchmark.builders import build, eegdenoisenet
from benchmark.builders.base import BuildError

N_TIMES = 512
TIMES = np.arange(N_TIMES) / 256.0


def band_noise(rng, n_rows, low_bin, high_bin, n_times=N_TIMES):
    spectrum = np.zeros((n_rows, n_times // 2 + 1), dtype=complex)
    spectrum[:, low_bin:high_bin] = rng.normal(size=(n_rows, high_bin - low_bin)) + 1j * rng.normal(
        size=(n_rows, high_bin - low_bin))
    return np.fft.irfft(spectrum, n=n_times, axis=1) * 100.0


def raw_arrays(n_eeg=310, n_artifact=105, seed=1):
    rng = np.random.default_rng(seed)
    fingerprints = (np.arange(n_eeg)[:, None] + 1.0) * np.sin(2 * np.pi * 10.0 * TIMES)[None, :]
    return {
        "EEG": fingerprints + band_noise(rng, n_eeg, 24, 41),
        "EOG": band_noise(rng, n_artifact, 1, 6) * 5,
        "EMG": band_noise(rng, n_artifact, 60, 200),
    }


def write_raw(directory: Path, arrays: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for kind, array in arrays.items():
        np.save(directory / eegdenoisenet.SOURCE_FILES[kind], array)
    return directory


def base_row(signal) -> int:
    amplitude = np.abs(np.fft.rfft(signal)[20]) * 2 / N_TIMES
    return int(round(amplitude)) - 1


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("edn")
    arrays = raw_arrays()
    raw = write_raw(root / "raw", arrays)
    build("eegdenoisenet", raw, root / "release")
    return arrays, root / "release"


def test_design_has_the_official_ids_golds_and_counts(tmp_path):
    candidates = eegdenoisenet.collect(write_raw(tmp_path, raw_arrays()))
    assert len(candidates) == 300
    assert Counter(c.label for c in candidates) == {"clean": 100, "ocular_contaminated": 100,
                                                   "muscle_contaminated": 100}
    assert candidates[0].scenario_id == "c2_artifact:edn_clean_0000"
    assert candidates[100].scenario_id == "c2_artifact:edn_eog_m7_0000"
    assert candidates[199].scenario_id == "c2_artifact:edn_eog_p2_0009"
    assert candidates[235].scenario_id == "c2_artifact:edn_emg_m4_0005"
    assert candidates[235].gold == {"label": "muscle_contaminated", "artifact_source": "EMG", "snr_db": -4}
    assert candidates[0].gold == {"label": "clean", "artifact_source": None, "snr_db": None}
    assert candidates[0].data_name == "eegdenoisenet/signals/edn_clean_0000.npy"
    assert candidates[0].input["label_space"] == ["clean", "ocular_contaminated", "muscle_contaminated"]
    assert candidates[0].metadata == {"sampling_rate": 256.0, "channels": 1, "channel_names": ["EEG"],
                                      "n_samples": 512, "duration_sec": 2.0}


def test_every_record_uses_a_distinct_clean_base_and_is_stored_as_float32(built):
    arrays, release = built
    signals = sorted((release / "data" / "eegdenoisenet" / "signals").glob("*.npy"))
    assert len(signals) == 300
    bases = []
    for path in signals:
        signal = np.load(path)
        assert signal.dtype == np.float32 and signal.shape == (N_TIMES,)
        bases.append(base_row(signal))
    assert len(set(bases)) == 300 and all(0 <= row < len(arrays["EEG"]) for row in bases)


@pytest.mark.parametrize("name,snr_db", [("edn_eog_m7_0003", -7), ("edn_eog_p0_0000", 0),
                                         ("edn_emg_m1_0009", -1), ("edn_emg_p2_0004", 2)])
def test_contaminated_epochs_have_their_snr(built, name, snr_db):
    arrays, release = built
    signal = np.load(release / "data" / "eegdenoisenet" / "signals" / f"{name}.npy").astype(np.float64)
    base = arrays["EEG"][base_row(signal)]
    added = signal - base
    achieved = 10 * np.log10(eegdenoisenet.rms(base) / eegdenoisenet.rms(added))
    np.testing.assert_allclose(achieved, snr_db, atol=1e-3)


def test_clean_epochs_are_their_base_unchanged(built):
    arrays, release = built
    signal = np.load(release / "data" / "eegdenoisenet" / "signals" / "edn_clean_0042.npy")
    np.testing.assert_array_equal(signal, arrays["EEG"][base_row(signal)].astype(np.float32))


def test_mixing_factor_follows_eq_11():
    eeg, artifact = np.full(8, 2.0), np.full(8, 4.0)
    np.testing.assert_allclose(eegdenoisenet.mixing_factor(eeg, artifact, 0.0), 0.5)
    np.testing.assert_allclose(eegdenoisenet.mixing_factor(eeg, artifact, 10.0), 0.05)


def test_same_seed_same_signals_other_seed_other_draw(tmp_path):
    raw = write_raw(tmp_path, raw_arrays())
    first = eegdenoisenet.collect(raw)
    second = eegdenoisenet.collect(raw)
    other = eegdenoisenet.collect(raw, seed=7)
    for candidate in (first, second, other):
        candidate[150].write(tmp_path / f"{id(candidate)}.npy")
    load = lambda run: np.load(tmp_path / f"{id(run)}.npy")  # noqa: E731
    np.testing.assert_array_equal(load(first), load(second))
    assert not np.array_equal(load(first), load(other))


def test_unusable_epochs_are_left_out(tmp_path):
    arrays = raw_arrays(n_eeg=303)
    arrays["EEG"][[0, 1]] = np.nan
    arrays["EEG"][2] = 0.0
    candidates = eegdenoisenet.collect(write_raw(tmp_path, arrays))
    rows = []
    for index, candidate in enumerate(candidates):
        candidate.write(tmp_path / f"{index}.npy")
        rows.append(base_row(np.load(tmp_path / f"{index}.npy")))
    assert sorted(rows) == list(range(3, 303))


@pytest.mark.parametrize("kind,shape,message", [
    ("EEG", (310, 500), r"EEG_all_epochs.npy: epochs have 500 samples; expected 512"),
    ("EOG", (105,), r"EOG_all_epochs.npy: expected a 2-D numeric array"),
    ("EMG", (105, 700), r"EMG_all_epochs.npy: epochs have 700 samples; expected 512 .* or 1024"),
])
def test_wrong_shapes_say_which_file_and_what_is_wrong(tmp_path, kind, shape, message):
    arrays = raw_arrays()
    arrays[kind] = np.zeros(shape)
    write_raw(tmp_path / "raw", arrays)
    with pytest.raises(BuildError, match=message):
        build("eegdenoisenet", tmp_path / "raw", tmp_path / "release")
    assert not (tmp_path / "release").exists()


def test_too_few_epochs_for_the_design(tmp_path):
    with pytest.raises(BuildError, match=r"EOG_all_epochs.npy: 50 usable epochs, but the design needs 100"):
        eegdenoisenet.collect(write_raw(tmp_path, raw_arrays(n_artifact=50)))


def test_a_missing_array_is_named(tmp_path):
    arrays = raw_arrays()
    del arrays["EMG"]
    with pytest.raises(BuildError, match="EMG_all_epochs.npy: missing"):
        eegdenoisenet.collect(write_raw(tmp_path, arrays))


def test_emg_at_512_hz_is_resampled_to_256_hz(tmp_path):
    arrays = raw_arrays()
    rng = np.random.default_rng(3)
    arrays["EMG"] = band_noise(rng, 105, 60, 200, n_times=2 * N_TIMES)  # 30-100 Hz, sampled at 512 Hz
    candidates = eegdenoisenet.collect(write_raw(tmp_path, arrays))
    candidates[250].write(tmp_path / "emg.npy")
    signal = np.load(tmp_path / "emg.npy").astype(np.float64)
    added = signal - arrays["EEG"][base_row(signal)]
    spectrum = np.abs(np.fft.rfft(added)) ** 2
    assert signal.shape == (N_TIMES,)
    assert spectrum[60:200].sum() > 0.99 * spectrum.sum()
