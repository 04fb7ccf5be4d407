"""Welch power spectra with the official tool settings, and band integration.

Every spectral number the tools report comes from here: a Welch PSD with a Hann window,
``nperseg = min(int(2 * sfreq), n_times)``, 50 % overlap, constant detrending and density
scaling (scipy's defaults), integrated over bands with the trapezoid rule and *inclusive*
band edges. The per-segment periodograms are exposed too, so that a long recording's
spectrum can be accumulated segment by segment (see :mod:`tools_app.signal.ranges`).
"""
import functools
from collections.abc import Mapping

import numpy as np
import scipy.fft
from numpy.lib.stride_tricks import sliding_window_view
from scipy.signal import get_window
from scipy.signal.windows import dpss

from tools_app.signal.workspace import Workspace, scratch

#: The five bands of ``compute_psd``, ``compute_band_power`` and ``compute_asymmetry`` (Hz).
DEFAULT_BANDS: Mapping[str, tuple[float, float]] = {
    "delta": (1.0, 4.0),
    "theta": (4.0, 8.0),
    "alpha": (8.0, 13.0),
    "beta": (13.0, 30.0),
    "gamma": (30.0, 45.0),
}

#: The six bands of ``compute_windowed_features``: the five above plus sigma, which overlaps
#: alpha and beta. Relative powers in that tool are shares of the sum of these six.
WINDOWED_BANDS: Mapping[str, tuple[float, float]] = {
    "delta": (1.0, 4.0),
    "theta": (4.0, 8.0),
    "alpha": (8.0, 13.0),
    "sigma": (11.0, 16.0),
    "beta": (13.0, 30.0),
    "gamma": (30.0, 45.0),
}

#: The alpha range searched for a peak frequency (Hz, inclusive).
ALPHA_RANGE = (8.0, 13.0)

#: Segments are transformed in batches of this many, to bound memory. The batch size does not
#: depend on how many signals are transformed together, so each signal's spectrum is the
#: same whether it is computed alone or with others.
_SEGMENTS_PER_BATCH = 512


#: Tapers of the official "multitaper" estimate.
MULTITAPER_TAPERS = 7


def welch_nperseg(sfreq, n_times):
    """Return the official Welch segment length, ``min(int(2 * sfreq), n_times)`` samples."""
    return min(int(sfreq * 2), int(n_times))


def welch_step(nperseg):
    """Return the hop between Welch segments in samples (scipy's default 50 % overlap)."""
    return nperseg - nperseg // 2


def n_welch_segments(n_times, nperseg):
    """Return how many Welch segments scipy fits into ``n_times`` samples."""
    return (n_times - nperseg // 2) // welch_step(nperseg)


def welch_frequencies(sfreq, nperseg):
    """Return the one-sided frequency grid of a Welch PSD, shape (nperseg // 2 + 1,), Hz."""
    return scipy.fft.rfftfreq(nperseg, 1.0 / sfreq)


def segment_periodograms(data, sfreq, nperseg, *, workspace=None):
    """Return the density-scaled one-sided periodogram of every Welch segment.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
        Signals; segments are taken along the last axis, starting at sample 0.
    sfreq : float
        Sampling rate, Hz.
    nperseg : int
        Segment length, samples (at most ``n_times``).
    workspace : Workspace, optional
        Scratch memory for the intermediate arrays and the result, which then stays valid
        only until the workspace's next use (the numbers are the same without it).

    Returns
    -------
    periodograms : ndarray, shape (..., n_segments, nperseg // 2 + 1), V²/Hz
        The mean over the segment axis is scipy's ``welch`` with the same settings.
    """
    data = np.asarray(data, dtype=np.float64)
    window = _hann(nperseg)
    segments = sliding_window_view(data, nperseg, axis=-1)[..., :: welch_step(nperseg), :]
    centred = scratch(workspace, "centred", segments.shape)
    np.subtract(segments, segments.mean(axis=-1, keepdims=True), out=centred)
    centred *= window
    spectrum = scipy.fft.rfft(centred, axis=-1, overwrite_x=True)
    power = np.square(spectrum.real, out=scratch(workspace, "power", spectrum.shape))
    power += np.square(spectrum.imag, out=scratch(workspace, "imaginary_power", spectrum.shape))
    power *= _one_sided_scale(nperseg, 1.0 / (sfreq * np.sum(window * window)))
    return power


@functools.lru_cache(maxsize=16)
def _hann(nperseg):
    """Return scipy's periodic Hann window of ``nperseg`` samples (read-only: it is shared)."""
    window = get_window("hann", nperseg)
    window.flags.writeable = False
    return window


def _one_sided_scale(nperseg, scale):
    """Return the density scale per bin, doubled for every bin but DC (and Nyquist, if any).

    Doubling is exact in binary floating point, so this equals scaling and then doubling.
    """
    factor = np.full(nperseg // 2 + 1, 2.0 * scale)
    factor[0] = scale
    if nperseg % 2 == 0:
        factor[-1] = scale
    return factor


def segment_periodogram_sum(data, sfreq, nperseg):
    """Return the sum over segments of :func:`segment_periodograms`, computed in batches.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
    sfreq : float
        Sampling rate, Hz.
    nperseg : int
        Segment length, samples.

    Returns
    -------
    total : ndarray, shape (..., nperseg // 2 + 1), V²/Hz
    n_segments : int
    """
    data = np.asarray(data, dtype=np.float64)
    n_times = data.shape[-1]
    step = welch_step(nperseg)
    n_segments = n_welch_segments(n_times, nperseg)
    total = np.zeros(data.shape[:-1] + (nperseg // 2 + 1,))
    workspace = Workspace()
    for first in range(0, n_segments, _SEGMENTS_PER_BATCH):
        last = min(n_segments, first + _SEGMENTS_PER_BATCH)
        chunk = data[..., first * step : (last - 1) * step + nperseg]
        total += segment_periodograms(chunk, sfreq, nperseg, workspace=workspace).sum(axis=-2)
    return total, n_segments


def welch_psd(data, sfreq, *, nperseg=None):
    """Return the Welch PSD with the official settings.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
    sfreq : float
        Sampling rate, Hz.
    nperseg : int, optional
        Segment length; defaults to :func:`welch_nperseg`.

    Returns
    -------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (..., n_freqs), V²/Hz
    """
    data = np.asarray(data, dtype=np.float64)
    if nperseg is None:
        nperseg = welch_nperseg(sfreq, data.shape[-1])
    total, n_segments = segment_periodogram_sum(data, sfreq, nperseg)
    return welch_frequencies(sfreq, nperseg), total / n_segments


def official_multitaper_psd(data, sfreq, *, nperseg=None):
    """Return the official tool's "multitaper" PSD, which is not the textbook estimator.

    It multiplies the whole window by each of 7 DPSS tapers (NW = 4, tapers as long as the
    window), takes the Welch PSD of each tapered copy with the usual settings, and averages
    the 7 spectra.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), V
    sfreq : float
        Sampling rate, Hz.
    nperseg : int, optional
        Welch segment length; defaults to :func:`welch_nperseg`.

    Returns
    -------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (n_channels, n_freqs), V²/Hz
    """
    data = np.asarray(data, dtype=np.float64)
    n_times = data.shape[-1]
    if nperseg is None:
        nperseg = welch_nperseg(sfreq, n_times)
    tapers = dpss(n_times, 4, Kmax=MULTITAPER_TAPERS)
    total = np.zeros(data.shape[:-1] + (nperseg // 2 + 1,))
    for taper in tapers:
        total += welch_psd(data * taper, sfreq, nperseg=nperseg)[1]
    return welch_frequencies(sfreq, nperseg), total / len(tapers)


def band_mask(freqs, band):
    """Return the boolean mask of the bins inside ``band = (low, high)``, edges included."""
    low, high = band
    return (freqs >= low) & (freqs <= high)


def integrate(psd, freqs):
    """Return the trapezoid integral of ``psd`` over ``freqs`` along the last axis.

    Parameters
    ----------
    psd : ndarray, shape (..., n_freqs), V²/Hz
    freqs : ndarray, shape (n_freqs,), Hz

    Returns
    -------
    power : ndarray, shape (...), V² (0.0 for a single bin)
        Each row's integral is bit-for-bit the one-dimensional ``numpy.trapezoid``.
    """
    return np.trapezoid(np.ascontiguousarray(psd), freqs, axis=-1)


def band_powers(freqs, psd, bands=DEFAULT_BANDS):
    """Return the power in each band that has at least one bin.

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (..., n_freqs), V²/Hz
    bands : mapping of str to (float, float)
        Band edges in Hz, both inclusive.

    Returns
    -------
    powers : dict of str to ndarray, shape (...), V²
        Bands without bins are absent; callers decide whether that means 0 or "omit".
    """
    powers = {}
    for name, band in bands.items():
        mask = band_mask(freqs, band)
        if mask.any():
            powers[name] = integrate(psd[..., mask], freqs[mask])
    return powers


def band_weights(freqs, bands):
    """Return the matrix that maps a PSD to its trapezoid band integrals.

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,), Hz
    bands : mapping of str to (float, float)

    Returns
    -------
    weights : ndarray, shape (n_freqs, n_bands), Hz
        ``psd @ weights`` equals :func:`integrate` over each band's bins (0 for bands
        without bins), up to floating-point summation order.
    """
    weights = np.zeros((len(freqs), len(bands)))
    for column, band in enumerate(bands.values()):
        index = np.flatnonzero(band_mask(freqs, band))
        if len(index) > 1:
            half_widths = np.diff(freqs[index]) / 2.0
            weights[index[:-1], column] += half_widths
            weights[index[1:], column] += half_widths
    return weights


def peak_frequency(freqs, psd, band):
    """Return the frequency and power of the largest bin inside ``band`` (edges included).

    Parameters
    ----------
    freqs : ndarray, shape (n_freqs,), Hz
    psd : ndarray, shape (n_freqs,), V²/Hz
    band : (float, float)

    Returns
    -------
    frequency : float or None
        None when the band has no bins.
    power : float or None
    """
    mask = band_mask(freqs, band)
    if not mask.any():
        return None, None
    index = int(np.argmax(psd[mask]))
    return float(freqs[mask][index]), float(psd[mask][index])
