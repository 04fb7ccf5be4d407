"""Signal-quality indicators of ``compute_noise_metrics``, with the official definitions.

The amplitude ratios need only counts, so they can be accumulated chunk by chunk; the two
spectral ratios take a Welch PSD of the whole signal.
"""
import numpy as np

#: A sample-to-sample step smaller than this (V) counts as flat.
FLAT_STEP_V = 1e-7
#: Line noise is the mean PSD within this many Hz of the mains frequency.
LINE_HALF_WIDTH_HZ = 2.0
#: The high-frequency ratio counts power strictly above this frequency (Hz).
HIGH_FREQUENCY_HZ = 40.0
#: The broadband reference runs from this frequency (Hz) to ``sfreq / 2 - 1``.
BROADBAND_LOW_HZ = 1.0


def flat_line_ratio(data):
    """Return the share of sample-to-sample steps smaller than 1e-7 V.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V

    Returns
    -------
    ratio : ndarray, shape (...), in [0, 1] (NaN for a single sample)
    """
    with np.errstate(all="ignore"):
        return np.mean(np.abs(np.diff(data, axis=-1)) < FLAT_STEP_V, axis=-1)


def saturation_ratio(data):
    """Return the share of samples equal to the signal's minimum or maximum.

    Parameters
    ----------
    data : ndarray, shape (n_times,), V

    Returns
    -------
    ratio : float in [0, 1]
        1.0 for a constant signal.
    """
    high, low = data.max(), data.min()
    if high == low:
        return 1.0
    return float(np.mean((data == high) | (data == low)))


def broadband_mask(freqs, sfreq):
    """Return the mask of the broadband reference bins, ``1 <= f <= sfreq / 2 - 1`` Hz."""
    return (freqs >= BROADBAND_LOW_HZ) & (freqs <= sfreq / 2 - 1)


def line_noise_ratio(freqs, psd, sfreq, line_freq):
    """Return the mean PSD within ±2 Hz of ``line_freq`` over the mean broadband PSD.

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (n_freqs,), V²/Hz
    sfreq : float
        Sampling rate, Hz.
    line_freq : float
        Mains frequency, Hz.

    Returns
    -------
    ratio : float, ≥ 0 (0 when no bin is near ``line_freq``)
    """
    line = (freqs >= line_freq - LINE_HALF_WIDTH_HZ) & (freqs <= line_freq + LINE_HALF_WIDTH_HZ)
    broad = broadband_mask(freqs, sfreq)
    line_power = float(np.mean(psd[line])) if line.any() else 0
    broad_power = float(np.mean(psd[broad])) if broad.any() else 1e-20
    return line_power / broad_power if broad_power > 0 else 0


def high_frequency_ratio(freqs, psd, sfreq):
    """Return the PSD summed above 40 Hz over the PSD summed over the broadband bins.

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (n_freqs,), V²/Hz
    sfreq : float
        Sampling rate, Hz.

    Returns
    -------
    ratio : float, ≥ 0
        Not bounded by 1: the numerator reaches up to Nyquist, the denominator stops 1 Hz short.
    """
    high = freqs > HIGH_FREQUENCY_HZ
    broad = broadband_mask(freqs, sfreq)
    return float(np.sum(psd[high]) / (np.sum(psd[broad]) + 1e-20))
