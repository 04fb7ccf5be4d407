"""Transient candidates of ``detect_transients``: band-passed peaks and their morphology.

The detector is the official one: a zero-phase 4th-order Butterworth band-pass, peaks of
the filtered signal and of its negation above an amplitude threshold and at least 70 ms
apart, ranked by rounded amplitude. Morphology (half-amplitude width, steepest slope nearby)
is measured only for the candidates a channel keeps, since only those are reported.
"""
import numpy as np
from scipy.signal import butter, find_peaks, sosfiltfilt

from tools_app.signal.rounding import round_value

#: The nominal band-pass, Hz. The upper edge is capped at ``sfreq / 2 - 1``.
FILTER_BAND_HZ = (1.0, 70.0)
#: Minimum distance between peaks, and half-width of the slope search around a peak, s.
PEAK_DISTANCE_SEC = 0.07
#: Shortest window the zero-phase filter accepts here, samples.
MIN_SAMPLES = 64


def filter_band(sfreq):
    """Return the band-pass edges used at ``sfreq``, or None when the band is empty."""
    low, high = FILTER_BAND_HZ
    high = min(high, sfreq / 2 - 1)
    return None if high <= low else (low, high)


def bandpass(data, sfreq):
    """Return ``data`` band-passed with the detector's zero-phase filter.

    Parameters
    ----------
    data : ndarray, shape (..., n_times), V
        At least :data:`MIN_SAMPLES` samples.
    sfreq : float
        Sampling rate, Hz; :func:`filter_band` must not be None.

    Returns
    -------
    filtered : ndarray, shape (..., n_times), V
    """
    sos = butter(4, list(filter_band(sfreq)), btype="band", fs=sfreq, output="sos")
    return sosfiltfilt(sos, data, axis=-1)


def detect_channel(filtered, sfreq, *, channel, min_amplitude_uv, max_candidates, time_offset):
    """Return one channel's candidates, ranked, and its background statistics.

    Parameters
    ----------
    filtered : ndarray, shape (n_times,), V
        The output of :func:`bandpass` for one channel.
    sfreq : float
        Sampling rate, Hz.
    channel : str
        Channel name, copied into each candidate.
    min_amplitude_uv : float
        Peaks below this amplitude (µV) are ignored; ≤ 0 disables the threshold.
    max_candidates : int
        How many of the largest candidates to keep (≥ 0).
    time_offset : float
        Seconds added to ``sample / sfreq`` to give each candidate's time.

    Returns
    -------
    result : dict
        ``background_rms_uv`` and ``background_peak_to_peak_uv`` (1 dp), ``n_detected``
        (candidates before the cap) and ``candidates``: the kept ones, largest first, each
        ``{channel, time_sec, width_ms, amplitude_uv, sharpness_uv_s, polarity}``.
    """
    background = {
        "background_rms_uv": round_value(float(np.sqrt(np.mean(filtered**2))) * 1e6, 1),
        "background_peak_to_peak_uv": round_value(float(np.max(filtered) - np.min(filtered)) * 1e6, 1),
    }
    distance = max(1, int(sfreq * PEAK_DISTANCE_SEC))
    threshold_v = min_amplitude_uv * 1e-6
    height = threshold_v if threshold_v > 0 else None
    positive, _ = find_peaks(filtered, height=height, distance=distance)
    negative, _ = find_peaks(-filtered, height=height, distance=distance)
    peaks = np.concatenate([positive, negative])
    is_positive = np.arange(len(peaks)) < len(positive)
    amplitudes = np.abs(filtered[peaks]) * 1e6
    if min_amplitude_uv > 0:
        above = ~(amplitudes < min_amplitude_uv)
        peaks, is_positive, amplitudes = peaks[above], is_positive[above], amplitudes[above]

    kept = _largest_by_rounded_amplitude(amplitudes, max_candidates)
    absolute = np.abs(filtered)
    slope = np.abs(np.diff(filtered) * sfreq)
    reach = int(sfreq * PEAK_DISTANCE_SEC)
    candidates = []
    for position in kept:
        peak = int(peaks[position])
        left, right = _half_amplitude_span(absolute, peak)
        first, last = max(0, peak - reach), min(len(slope) - 1, peak + reach)
        sharpness = float(np.max(slope[first:last])) * 1e6 if last > first else 0
        candidates.append(
            {
                "channel": channel,
                "time_sec": round_value(float(peaks[position] / sfreq) + time_offset, 2),
                "width_ms": round_value(float((right - left) / sfreq * 1000), 1),
                "amplitude_uv": round_value(amplitudes[position], 1),
                "sharpness_uv_s": round_value(sharpness, 1),
                "polarity": "positive" if is_positive[position] else "negative",
            }
        )
    return {**background, "n_detected": len(peaks), "candidates": candidates}


def _largest_by_rounded_amplitude(amplitudes, count):
    """Return the positions of the ``count`` largest amplitudes after 1-dp rounding.

    Ties keep their original order (positive peaks first, each polarity in time order), as a
    stable descending sort does. Only amplitudes that could reach the top after rounding are
    rounded exactly, so a channel with many thousands of peaks stays cheap.
    """
    if count <= 0 or len(amplitudes) == 0:
        return []
    if count < len(amplitudes):
        threshold = np.partition(amplitudes, len(amplitudes) - count)[len(amplitudes) - count]
        contenders = np.flatnonzero(amplitudes >= threshold - 0.1)
    else:
        contenders = np.arange(len(amplitudes))
    rounded = {int(position): round_value(amplitudes[position], 1) for position in contenders}
    ranked = sorted(rounded, key=rounded.__getitem__, reverse=True)
    return ranked[:count]


def _half_amplitude_span(absolute, peak):
    """Return the samples left and right of ``peak`` where |x| first falls to half its peak.

    Walks outwards from the peak; when the signal never falls that low the walk stops at the
    first or last sample.
    """
    half = absolute[peak] / 2
    left = peak
    reach = 32
    while left > 0:
        start = max(0, left - reach)
        low = np.flatnonzero(absolute[start : left + 1] <= half)
        if len(low):
            left = start + int(low[-1])
            break
        left, reach = start, reach * 2
    right = peak
    reach = 32
    last = len(absolute) - 1
    while right < last:
        stop = min(last, right + reach)
        low = np.flatnonzero(absolute[right : stop + 1] <= half)
        if len(low):
            right = right + int(low[0])
            break
        right, reach = stop, reach * 2
    return left, right
