"""Per-window features of ``compute_windowed_features``, computed for all windows at once.

A window's features are the official ones: time-domain statistics of the window and a
Welch PSD of the window integrated over six bands (sigma included), with relative powers
taken over those six. Windows are strided views of the signal, so a batch of windows costs
one FFT call rather than one per window.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tools_app.signal import spectral, temporal

TIME_FEATURES = (
    "rms_uv",
    "std_uv",
    "kurtosis",
    "peak_to_peak_uv",
    "line_length_uv_s",
    "hjorth_mobility",
    "zero_crossing_rate_hz",
)
BAND_POWER_FEATURES = tuple(f"{band}_power" for band in spectral.WINDOWED_BANDS)
RELATIVE_FEATURES = tuple(f"{band}_relative" for band in spectral.WINDOWED_BANDS)
RATIO_FEATURES = ("theta_alpha_ratio", "slow_fast_ratio")
SPECTRAL_FEATURES = BAND_POWER_FEATURES + RELATIVE_FEATURES + RATIO_FEATURES

#: All 21 features, in the order the official tool writes them into a window's row.
FEATURES = TIME_FEATURES + SPECTRAL_FEATURES

DEFAULT_FEATURES = (
    "rms_uv",
    "kurtosis",
    "delta_relative",
    "theta_relative",
    "alpha_relative",
    "beta_relative",
    "gamma_relative",
)

#: Decimal places of each feature in the tool's output.
DECIMALS = {
    "rms_uv": 2,
    "std_uv": 2,
    "kurtosis": 3,
    "peak_to_peak_uv": 1,
    "line_length_uv_s": 1,
    "hjorth_mobility": 4,
    "zero_crossing_rate_hz": 2,
    **dict.fromkeys(SPECTRAL_FEATURES, 4),
}

#: The shortest window (samples) and the shortest Welch segment the tool accepts.
MIN_WINDOW_SAMPLES = 4
MIN_SPECTRAL_NPERSEG = 4

#: Windows are processed in batches of about this many samples, to bound memory.
_BATCH_SAMPLES = 1 << 22


def window_starts(n_times, window_samples, step_samples):
    """Return the window start samples and the window length, by the official rule.

    Windows start at ``range(0, n_times - window_samples + 1, step_samples)``; when no full
    window fits there is a single window over the whole signal.

    Returns
    -------
    starts : ndarray of int, shape (n_windows,)
    window_samples : int
    """
    starts = np.arange(0, n_times - window_samples + 1, step_samples, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros(1, dtype=np.int64), min(window_samples, n_times)
    return starts, window_samples


def window_count(n_times, window_samples, step_samples):
    """Return how many windows :func:`window_starts` gives, and their length, without listing them."""
    if n_times < window_samples:
        return 1, n_times
    return (n_times - window_samples) // step_samples + 1, window_samples


def ordered(features):
    """Return the requested feature names in output order (unknown names dropped)."""
    requested = set(features)
    return [name for name in FEATURES if name in requested]


def window_features(data, sfreq, starts, window_samples, features):
    """Return each requested feature for every window of every channel.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), V
    sfreq : float
        Sampling rate, Hz.
    starts : ndarray of int, shape (n_windows,)
        First sample of each window.
    window_samples : int
        Window length, samples; every window must fit in ``data``.
    features : iterable of str
        Names from :data:`FEATURES`.

    Returns
    -------
    values : dict of str to ndarray, shape (n_channels, n_windows)
        Unrounded values in the units the names give (µV, µV², Hz, ratios).
    """
    features = ordered(features)
    n_channels = data.shape[0]
    per_batch = max(1, _BATCH_SAMPLES // max(1, n_channels * window_samples))
    views = sliding_window_view(data, window_samples, axis=-1)
    batches = [
        _batch_features(np.ascontiguousarray(views[:, starts[first : first + per_batch]]), sfreq, features)
        for first in range(0, len(starts), per_batch)
    ]
    return {name: np.concatenate([batch[name] for batch in batches], axis=-1) for name in features}


def _batch_features(windows, sfreq, features):
    """Return the features of a (n_channels, n_windows, n_samples) batch of windows."""
    wanted = set(features)
    values = {}
    n_samples = windows.shape[-1]
    duration = max(temporal.duration_sec(n_samples, sfreq), temporal.DURATION_FLOOR_SEC)
    windows_uv = windows * 1e6
    if "rms_uv" in wanted:
        values["rms_uv"] = np.sqrt(np.mean(windows_uv**2, axis=-1))
    if "std_uv" in wanted:
        values["std_uv"] = np.std(windows_uv, axis=-1)
    if "kurtosis" in wanted:
        values["kurtosis"] = temporal.kurtosis(windows_uv)
    if "peak_to_peak_uv" in wanted:
        values["peak_to_peak_uv"] = np.ptp(windows_uv, axis=-1)
    if "line_length_uv_s" in wanted:
        values["line_length_uv_s"] = np.sum(np.abs(np.diff(windows_uv, axis=-1)), axis=-1) / duration
    if "hjorth_mobility" in wanted:
        values["hjorth_mobility"] = temporal.hjorth_mobility(windows)
    if "zero_crossing_rate_hz" in wanted:
        values["zero_crossing_rate_hz"] = temporal.zero_crossing_count(windows) / duration
    if wanted & set(SPECTRAL_FEATURES):
        nperseg = spectral.welch_nperseg(sfreq, n_samples)
        if nperseg < MIN_SPECTRAL_NPERSEG:
            band_uv2 = None
        else:
            freqs, psd = spectral.welch_psd(windows, sfreq, nperseg=nperseg)
            present = spectral.band_powers(freqs, psd, spectral.WINDOWED_BANDS)
            band_uv2 = {
                band: present[band] * 1e12 if band in present else np.zeros(windows.shape[:-1])
                for band in spectral.WINDOWED_BANDS
            }
        values.update(spectral_features(band_uv2, features, windows.shape[:-1]))
    return values


def spectral_features(band_uv2, features, shape):
    """Return the requested spectral features from the six band powers.

    Parameters
    ----------
    band_uv2 : dict of str to ndarray, or None
        Absolute power per band of :data:`spectral.WINDOWED_BANDS`, µV². None means the
        window was too short for a spectrum, and every spectral feature is 0.0.
    features : iterable of str
    shape : tuple of int
        Shape of each output array.

    Returns
    -------
    values : dict of str to ndarray
    """
    wanted = [name for name in features if name in SPECTRAL_FEATURES]
    if band_uv2 is None:
        return {name: np.zeros(shape) for name in wanted}
    total = np.maximum(sum(band_uv2.values()), 1e-20)
    alpha = np.maximum(band_uv2["alpha"], 1e-20)
    derived = {
        "theta_alpha_ratio": lambda: band_uv2["theta"] / alpha,
        "slow_fast_ratio": lambda: (band_uv2["delta"] + band_uv2["theta"])
        / np.maximum(band_uv2["alpha"] + band_uv2["beta"], 1e-20),
    }
    values = {}
    for name in wanted:
        band, _, kind = name.rpartition("_")
        if kind == "power":
            values[name] = band_uv2[band]
        elif kind == "relative":
            values[name] = band_uv2[band] / total
        else:
            values[name] = derived[name]()
    return values
