"""T2 builder: semi-synthetic artifact epochs mixed from EEGdenoiseNet (paper §6.9, Eq. 10-11).

Raw layout: the three arrays of the EEGdenoiseNet repository's ``data/`` folder,
one 2-s epoch per row, in µV: ``EEG_all_epochs.npy`` (4514 × 512),
``EOG_all_epochs.npy`` (3400 × 512) and ``EMG_all_epochs.npy`` (5598 × 512), all
at 256 Hz. The EMG epochs were recorded at 2048 Hz and cut at 512 Hz by the
publishers; the repository's ``EMG_all_epochs.npy`` is their 256-Hz version,
and the 512-Hz one (5598 × 1024) is distributed separately on G-Node GIN. An EMG
array with 1024 columns is taken to be that 512-Hz version and resampled to
256 Hz (polyphase, factor 1/2); the official release was built from the 256-Hz
file, so only that input reproduces its signals.

Construction (the official one, step for step, so the same arrays and seed give
the same 300 signals):

- epochs with a non-finite value or an RMS below 1e-12 are left out;
- with ``rng = numpy.random.default_rng(seed)``, draw in this order a
  permutation of the usable EEG rows (the first 300 are the clean bases, each
  used once), of the EOG rows (first 100) and of the EMG rows (first 100);
- 100 clean epochs take bases 0-99; then EOG, then EMG, for each SNR from -7 to
  +2 dB and 10 epochs per SNR, take the next base and the next artifact and mix
  ``x = eeg + λ·art`` with ``λ = RMS(eeg) / (RMS(art)·10^(SNR/10))``;
- signals are computed in float64 and stored as float32 µV ``.npy`` (512 samples).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

from benchmark.builders.base import BuildError, Candidate

TASK_ID = "T2"
SEED = 20260622
SAMPLING_RATE = 256.0
EPOCH_SAMPLES = 512
SNR_GRID_DB = tuple(range(-7, 3))
N_CLEAN = 100
PER_SNR = 10
RMS_FLOOR = 1e-12
LABEL_SPACE = ("clean", "ocular_contaminated", "muscle_contaminated")
SOURCE_FILES = {"EEG": "EEG_all_epochs.npy", "EOG": "EOG_all_epochs.npy", "EMG": "EMG_all_epochs.npy"}
_ARTIFACTS = (("EOG", "eog", "ocular_contaminated"), ("EMG", "emg", "muscle_contaminated"))

METADATA = {
    "sampling_rate": SAMPLING_RATE,
    "channels": 1,
    "channel_names": ["EEG"],
    "n_samples": EPOCH_SAMPLES,
    "duration_sec": EPOCH_SAMPLES / SAMPLING_RATE,
}
CLINICAL_CONTEXT = (
    f"A single-channel EEG epoch of about {EPOCH_SAMPLES / SAMPLING_RATE:g} s, sampled at "
    f"{SAMPLING_RATE:g} Hz. The task is to judge its signal quality."
)
QUESTION = (
    "Decide whether this epoch is clean, contaminated by ocular (EOG) artifact or contaminated by "
    "muscle (EMG) artifact. Measure it with the tools before you decide."
)


def rms(x: np.ndarray) -> float:
    """Root mean square of a 1-D signal, in its own unit."""
    return float(np.sqrt(np.mean(np.square(x))))


def mixing_factor(eeg: np.ndarray, artifact: np.ndarray, snr_db: float) -> float:
    """λ of Eq. 11: the artifact scale that puts ``eeg`` at ``snr_db`` over it.

    Parameters
    ----------
    eeg, artifact : ndarray, shape (n_times,), µV
        A clean epoch and an artifact epoch of the same length.
    snr_db : float
        Target SNR, 10·log10(RMS(eeg) / RMS(λ·artifact)).
    """
    return rms(eeg) / (max(rms(artifact), RMS_FLOOR) * 10.0 ** (snr_db / 10.0))


def snr_tag(snr_db: int) -> str:
    """``m7`` for -7 dB, ``p0`` for 0 dB, ``p2`` for +2 dB (the official id spelling)."""
    return f"m{-snr_db}" if snr_db < 0 else f"p{snr_db}"


def _load(raw_dir: Path, kind: str) -> np.ndarray:
    path = raw_dir / SOURCE_FILES[kind]
    if not path.is_file():
        raise BuildError(f"{path}: missing; the raw folder needs {', '.join(SOURCE_FILES.values())}")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path}: not a readable .npy array ({exc})") from None
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise BuildError(f"{path}: expected a 2-D numeric array (epochs × samples), "
                         f"got shape {array.shape} of {array.dtype}")
    array = array.astype(np.float64)
    if kind == "EMG" and array.shape[1] == 2 * EPOCH_SAMPLES:
        array = resample_poly(array, 1, 2, axis=1)
    if array.shape[1] != EPOCH_SAMPLES:
        expected = f"{EPOCH_SAMPLES} (2 s at 256 Hz)" + (" or 1024 (2 s at 512 Hz)" if kind == "EMG" else "")
        raise BuildError(f"{path}: epochs have {array.shape[1]} samples; expected {expected}")
    return array


def usable_rows(epochs: np.ndarray) -> np.ndarray:
    """Indices of epochs that are finite everywhere and not flat (RMS ≥ 1e-12)."""
    finite = np.all(np.isfinite(epochs), axis=1)
    return np.array([index for index in np.flatnonzero(finite) if rms(epochs[index]) >= RMS_FLOOR], dtype=int)


def _draw(rng: np.random.Generator, rows: np.ndarray, needed: int, path: Path) -> list[int]:
    picked = rng.permutation(rows)[:needed].tolist()
    if len(picked) < needed:
        raise BuildError(f"{path}: {len(rows)} usable epochs, but the design needs {needed}")
    return picked


def _writer(signal: np.ndarray) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        np.save(path, signal)
    return write


def _candidate(record_name: str, label: str, source: str | None, snr_db: int | None,
               signal: np.ndarray) -> Candidate:
    return Candidate(
        task_id=TASK_ID,
        scenario_id=f"c2_artifact:{record_name}",
        label=label,
        gold={"label": label, "artifact_source": source, "snr_db": snr_db},
        metadata=dict(METADATA),
        input={"clinical_context": CLINICAL_CONTEXT, "question": QUESTION, "label_space": list(LABEL_SPACE)},
        data_name=f"eegdenoisenet/signals/{record_name}.npy",
        write=_writer(signal.astype(np.float32)),
    )


def collect(raw_dir: Path, *, seed: int = SEED) -> list[Candidate]:
    """The 300 T2 epochs: 100 clean, then EOG and EMG at 10 per SNR from -7 to +2 dB."""
    raw_dir = Path(raw_dir)
    arrays = {kind: _load(raw_dir, kind) for kind in SOURCE_FILES}
    per_artifact = PER_SNR * len(SNR_GRID_DB)
    rng = np.random.default_rng(seed)
    picks = {
        "EEG": _draw(rng, usable_rows(arrays["EEG"]), N_CLEAN + 2 * per_artifact, raw_dir / SOURCE_FILES["EEG"]),
        **{kind: _draw(rng, usable_rows(arrays[kind]), per_artifact, raw_dir / SOURCE_FILES[kind])
           for kind in ("EOG", "EMG")},
    }
    eeg = arrays["EEG"]
    bases = iter(picks["EEG"])
    candidates = [
        _candidate(f"edn_clean_{sequence:04d}", "clean", None, None, eeg[next(bases)])
        for sequence in range(N_CLEAN)
    ]
    for kind, tag, label in _ARTIFACTS:
        artifacts = iter(picks[kind])
        for snr_db in SNR_GRID_DB:
            for sequence in range(PER_SNR):
                base, artifact = eeg[next(bases)], arrays[kind][next(artifacts)]
                mixed = base + mixing_factor(base, artifact, snr_db) * artifact
                candidates.append(_candidate(f"edn_{tag}_{snr_tag(snr_db)}_{sequence:04d}", label, kind,
                                             snr_db, mixed))
    return candidates
