"""Time-domain features with the official definitions, vectorised along the last axis.

Amplitudes come in volts and go out in µV where the feature name says so. Each function
accepts ``(..., n_times)`` arrays, so one call covers many channels or many windows.
"""
import warnings

import numpy as np
import scipy.stats

#: Floors the official code uses to avoid dividing by zero.
# scipy warns (warnings.warn, which np.errstate does not cover) that the moments of a nearly
# constant signal lose precision; the official tools report what it returns all the same. A
# filter set once is safe under threads, as catch_warnings around each call is not.
warnings.filterwarnings("ignore", message="Precision loss occurred in moment calculation", category=RuntimeWarning)

VARIANCE_FLOOR = 1e-30
DURATION_FLOOR_SEC = 1e-6


def mean_std_rms_uv(data):
    """Return the mean, standard deviation and RMS of ``data`` in µV.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V

    Returns
    -------
    mean, std, rms : ndarray, shape (...), µV
        Computed from ``data * 1e6``; std has no degrees-of-freedom correction.
    """
    data_uv = np.asarray(data) * 1e6
    return data_uv.mean(axis=-1), data_uv.std(axis=-1), np.sqrt(np.mean(data_uv**2, axis=-1))


def rms_uv(data):
    """Return the RMS of ``data`` (V), in µV, computed in volts then scaled."""
    return np.sqrt(np.mean(np.asarray(data) ** 2, axis=-1)) * 1e6


def peak_to_peak_uv(data):
    """Return ``max - min`` of ``data`` (V) in µV, shape (...)."""
    data_uv = np.asarray(data) * 1e6
    return np.ptp(data_uv, axis=-1)


def skewness_kurtosis(data_uv):
    """Return scipy's biased skewness and Fisher (excess) kurtosis along the last axis.

    Parameters
    ----------
    data_uv : ndarray, shape (n_rows, n_times), µV

    Returns
    -------
    skewness, kurtosis : ndarray, shape (n_rows,)
        NaN for a constant signal, as scipy gives. The skewness is computed one row at a
        time: scipy's vectorised ``m2 ** 1.5`` can differ in the last bit from the scalar one
        the official per-channel loop uses.
    """
    data_uv = np.asarray(data_uv)
    with np.errstate(all="ignore"):
        skewness = np.array([scipy.stats.skew(row) for row in data_uv])
    return skewness, kurtosis(data_uv)


def kurtosis(data_uv):
    """Return scipy's Fisher kurtosis along the last axis (NaN for a constant signal)."""
    with np.errstate(all="ignore"):
        return scipy.stats.kurtosis(data_uv, axis=-1)


def hjorth(data):
    """Return the Hjorth activity, mobility and complexity.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
        At least 3 samples.

    Returns
    -------
    activity : ndarray, shape (...), V²
        ``var(x)``.
    mobility : ndarray, shape (...)
        ``sqrt(var(dx) / var(x))``, with var(x) floored at 1e-30.
    complexity : ndarray, shape (...)
        ``sqrt(var(ddx) / var(dx)) / mobility``, with both denominators floored.
    """
    data = np.asarray(data)
    first = np.diff(data, axis=-1)
    second = np.diff(first, axis=-1)
    activity = np.var(data, axis=-1)
    return hjorth_from_variances(activity, np.var(first, axis=-1), np.var(second, axis=-1))


def hjorth_from_variances(activity, first_variance, second_variance):
    """Return (activity, mobility, complexity) from the variances of x, dx and ddx."""
    mobility = np.sqrt(first_variance / np.maximum(activity, VARIANCE_FLOOR))
    complexity = np.sqrt(second_variance / np.maximum(first_variance, VARIANCE_FLOOR)) / np.maximum(
        mobility, VARIANCE_FLOOR
    )
    return activity, mobility, complexity


def hjorth_mobility(data):
    """Return ``sqrt(var(dx) / max(var(x), 1e-30))`` along the last axis (data in V)."""
    data = np.asarray(data)
    return np.sqrt(np.var(np.diff(data, axis=-1), axis=-1) / np.maximum(np.var(data, axis=-1), VARIANCE_FLOOR))


def duration_sec(n_times, sfreq):
    """Return the duration the official features divide by, ``n_times / sfreq`` seconds."""
    return n_times / sfreq


def line_length_uv_s(data, sfreq, *, differentiate_in_uv=False):
    """Return the line length, ``sum |dx| / duration``, in µV/s.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
    sfreq : float
        Sampling rate, Hz.
    differentiate_in_uv : bool
        The windowed tool differences the µV signal; the temporal tool differences volts and
        scales the sum. Both are kept so each tool matches its own official definition.

    Returns
    -------
    line_length : ndarray, shape (...), µV/s
    """
    data = np.asarray(data)
    duration = max(duration_sec(data.shape[-1], sfreq), DURATION_FLOOR_SEC)
    if differentiate_in_uv:
        return np.sum(np.abs(np.diff(data * 1e6, axis=-1)), axis=-1) / duration
    return np.sum(np.abs(np.diff(data, axis=-1)), axis=-1) * 1e6 / duration


def zero_crossing_count(data, mean=None):
    """Return how many times the demeaned signal changes sign along the last axis.

    A change into or out of exactly zero counts, as ``diff(sign(x - mean)) != 0`` does.

    Parameters
    ----------
    data : ndarray, shape (..., n_times)
    mean : ndarray, shape (...), optional
        The mean to subtract; defaults to the mean of ``data``.

    Returns
    -------
    count : ndarray of int, shape (...)
    """
    data = np.asarray(data)
    if mean is None:
        mean = data.mean(axis=-1)
    mean = np.asarray(mean)[..., np.newaxis]
    side = (data > mean).view(np.int8) - (data < mean).view(np.int8)
    return np.count_nonzero(side[..., 1:] != side[..., :-1], axis=-1)


def zero_crossing_rate_hz(data, sfreq):
    """Return the zero-crossing rate of the demeaned signal in Hz (data in any unit)."""
    data = np.asarray(data)
    duration = max(duration_sec(data.shape[-1], sfreq), DURATION_FLOOR_SEC)
    return zero_crossing_count(data) / duration
