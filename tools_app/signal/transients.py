"""Transient candidates of ``detect_transients``: band-passed peaks and their morphology.

The detector is the official one: a zero-phase 4th-order Butterworth band-pass, peaks of
the filtered signal and of its negation above an amplitude threshold and at least 70 ms
apart, ranked by rounded amplitude. Morphology (half-amplitude width, steepest slope nearby)
is measured only for the candidates a channel keeps, since only those are reported, and for
all of them at once: a channel may keep every one of its peaks (a million on a long record).
"""
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import maximum_filter1d
from scipy.signal import butter, find_peaks, sosfiltfilt

from tools_app.signal.rounding import round_value, round_values

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


def count_above(filtered, *, min_amplitude_uv):
    """Return how many samples of ``filtered`` reach the threshold in either polarity.

    A bound on what :func:`find_candidates` must keep at least 70 ms apart, its costly step:
    at most every other such sample is a local maximum of ``filtered`` or of its negation.

    Parameters
    ----------
    filtered : ndarray, shape (n_times,), V
    min_amplitude_uv : float
        ≤ 0 counts every sample.
    """
    height = _height(min_amplitude_uv)
    return len(filtered) if height is None else int(np.count_nonzero(np.abs(filtered) >= height))


def _height(min_amplitude_uv):
    threshold_v = min_amplitude_uv * 1e-6
    return threshold_v if threshold_v > 0 else None


def find_candidates(filtered, sfreq, *, min_amplitude_uv):
    """Return the peaks of a filtered channel at or above the threshold, positive ones first.

    Parameters
    ----------
    filtered : ndarray, shape (n_times,), V
        The output of :func:`bandpass` for one channel.
    sfreq : float
        Sampling rate, Hz.
    min_amplitude_uv : float
        Peaks below this amplitude (µV) are ignored; ≤ 0 disables the threshold.

    Returns
    -------
    peaks : ndarray of int, shape (n_peaks,)
        Samples of the positive peaks, then of the negative ones, each in time order.
    positive : ndarray of bool, shape (n_peaks,)
    amplitudes : ndarray, shape (n_peaks,), µV
        ``|filtered[peaks]|``, unrounded.
    """
    distance = max(1, int(sfreq * PEAK_DISTANCE_SEC))
    height = _height(min_amplitude_uv)
    positive, _ = find_peaks(filtered, height=height, distance=distance)
    negative, _ = find_peaks(-filtered, height=height, distance=distance)
    peaks = np.concatenate([positive, negative])
    is_positive = np.arange(len(peaks)) < len(positive)
    amplitudes = np.abs(filtered[peaks]) * 1e6
    if min_amplitude_uv > 0:
        above = ~(amplitudes < min_amplitude_uv)
        peaks, is_positive, amplitudes = peaks[above], is_positive[above], amplitudes[above]
    return peaks, is_positive, amplitudes


@dataclass(frozen=True)
class Candidates:
    """One channel's kept candidates, largest first, and its background statistics.

    The arrays have one element per kept candidate, ranked by amplitude rounded to 0.1 µV
    with ties in detection order (as a stable descending sort ranks them); the values are
    rounded as the tool reports them (1 dp).
    """

    background_rms_uv: float
    background_peak_to_peak_uv: float
    n_detected: int
    samples: np.ndarray
    positive: np.ndarray
    amplitude_uv: np.ndarray
    width_ms: np.ndarray
    sharpness_uv_s: np.ndarray

    def row(self, index, *, channel, sfreq, time_offset):
        """Return kept candidate ``index`` as the tool lists it."""
        return {
            "channel": channel,
            "time_sec": round_value(float(self.samples[index] / sfreq) + time_offset, 2),
            "width_ms": float(self.width_ms[index]),
            "amplitude_uv": float(self.amplitude_uv[index]),
            "sharpness_uv_s": float(self.sharpness_uv_s[index]),
            "polarity": "positive" if self.positive[index] else "negative",
        }


def keep_candidates(filtered, sfreq, peaks, positive, amplitudes, *, max_candidates):
    """Return a channel's ``max_candidates`` largest candidates, measured, and its background.

    Parameters
    ----------
    filtered : ndarray, shape (n_times,), V
    sfreq : float
        Sampling rate, Hz.
    peaks, positive, amplitudes : ndarray
        What :func:`find_candidates` returned.
    max_candidates : int
        How many of the largest candidates to keep (≥ 0).

    Returns
    -------
    candidates : Candidates
        With each kept candidate's width at half amplitude (ms) and steepest slope within
        ±70 ms (µV/s), and the RMS and peak-to-peak of the filtered signal (µV, 1 dp).
    """
    kept = _largest_by_rounded_amplitude(amplitudes, max_candidates)
    samples = peaks[kept]
    left, right = half_amplitude_spans(np.abs(filtered), samples)
    return Candidates(
        background_rms_uv=round_value(float(np.sqrt(np.mean(filtered**2))) * 1e6, 1),
        background_peak_to_peak_uv=round_value(float(np.max(filtered) - np.min(filtered)) * 1e6, 1),
        n_detected=len(peaks),
        samples=samples,
        positive=positive[kept],
        amplitude_uv=round_values(amplitudes[kept], 1),
        width_ms=round_values((right - left) / sfreq * 1000, 1),
        sharpness_uv_s=round_values(steepest_slopes(filtered, sfreq, samples) * 1e6, 1),
    )


def _largest_by_rounded_amplitude(amplitudes, count):
    """Return the positions of the ``count`` largest amplitudes after 1-dp rounding, largest first.

    Only amplitudes that could reach the top after rounding are ranked, so a channel with
    many thousands of peaks and a small cap stays cheap.
    """
    if count <= 0 or len(amplitudes) == 0:
        return np.zeros(0, dtype=np.int64)
    if count < len(amplitudes):
        threshold = np.partition(amplitudes, len(amplitudes) - count)[len(amplitudes) - count]
        contenders = np.flatnonzero(amplitudes >= threshold - 0.1)
    else:
        contenders = np.arange(len(amplitudes))
    rounded = round_values(amplitudes[contenders], 1)
    return contenders[np.argsort(-rounded, kind="stable")[:count]]


def steepest_slopes(filtered, sfreq, peaks):
    """Return each peak's steepest slope: the largest ``|dx/dt|`` of the steps near it, V/s.

    Parameters
    ----------
    filtered : ndarray, shape (n_times,), V
    sfreq : float
        Sampling rate, Hz.
    peaks : ndarray of int

    Returns
    -------
    slopes : ndarray, shape (len(peaks),), V/s
        The maximum over the steps ``[peak - reach, peak + reach)`` with ``reach =
        int(0.07 * sfreq)``, cut to ``[0, n_times - 2)`` (the official code leaves out the
        last step at the end of the signal); 0 when that is empty.
    """
    slope = np.abs(np.diff(filtered) * sfreq)
    reach = int(sfreq * PEAK_DISTANCE_SEC)
    first = np.maximum(peaks - reach, 0)
    last = np.minimum(peaks + reach, len(slope) - 1)
    steepest = np.zeros(len(peaks))
    inside = np.flatnonzero((peaks - reach >= 0) & (peaks + reach <= len(slope) - 1))
    if reach > 0 and len(inside):
        if len(inside) * 2 * reach > len(slope):  # so many peaks that one pass over the signal is cheaper
            forward = maximum_filter1d(slope, 2 * reach, origin=-reach, mode="constant", cval=0.0)
            steepest[inside] = forward[first[inside]]
        else:
            steepest[inside] = slope[first[inside, np.newaxis] + np.arange(2 * reach)].max(axis=1)
    edges = last > first
    edges[inside] = False
    for index in np.flatnonzero(edges):
        steepest[index] = np.max(slope[first[index] : last[index]])
    return steepest


def half_amplitude_spans(absolute, peaks):
    """Return the samples left and right of each peak where ``|x|`` first falls to half its peak.

    Parameters
    ----------
    absolute : ndarray, shape (n_times,)
        ``|x|`` of the filtered signal.
    peaks : ndarray of int

    Returns
    -------
    left, right : ndarray of int, shape (len(peaks),)
        Walking outwards from the peak, the first sample with ``|x| <= |x[peak]| / 2``; the
        first or last sample when the signal never falls that low.

    Notes
    -----
    Most walks are a few samples long: every peak takes its first :data:`_SHARED_STEPS`
    steps together, one array operation a step. The peaks still walking then (a peak of
    nearly zero amplitude may walk to the end of the record) skip through minima of blocks of
    :data:`_FANOUT` samples, of blocks of as many blocks, and so on: up to the first block on
    the way that holds a low enough sample, then down into it, a few dozen comparisons
    however far they walk.
    """
    half = absolute[peaks] / 2
    minima = None
    spans = []
    for direction, end in ((-1, 0), (1, len(absolute) - 1)):
        position = np.array(peaks, dtype=np.int64)
        walking = np.flatnonzero((position != end) & (absolute[position] > half))
        for _ in range(_SHARED_STEPS):
            if not len(walking):
                break
            position[walking] += direction
            at = position[walking]
            walking = walking[(at != end) & (absolute[at] > half[walking])]
        if len(walking):
            minima = _block_minima(absolute) if minima is None else minima
            beyond = _nearest_at_most(minima, position[walking], half[walking], direction)
            position[walking] = np.clip(beyond, 0, len(absolute) - 1)
        spans.append(position)
    return spans[0], spans[1]


#: Steps of the half-amplitude walk that all peaks take together.
_SHARED_STEPS = 8
#: Samples per block, and blocks per block of the next level, in the half-amplitude search.
_FANOUT = 16


def _block_minima(values):
    """Return ``values`` and the minima of its blocks of :data:`_FANOUT`, of their blocks, ..., up to one block."""
    levels = [values]
    while len(levels[-1]) > _FANOUT:
        level = levels[-1]
        padded = np.full(-(-len(level) // _FANOUT) * _FANOUT, np.inf)
        padded[: len(level)] = level
        levels.append(padded.reshape(-1, _FANOUT).min(axis=1))
    return levels


def _nearest_at_most(levels, positions, limits, direction):
    """Return, for each position, the nearest sample beyond it in ``direction`` whose value is at most its limit.

    ``direction`` is -1 (left) or 1 (right); where there is none the answer is -1 or ``n``.
    """
    n_levels = len(levels)
    children = np.arange(_FANOUT)
    found_level = np.full(len(positions), -1)
    node = positions.copy()
    searching = np.arange(len(positions))
    for depth in range(n_levels):  # up: the nearest node beyond, under the same parent, low enough
        if not len(searching):
            break
        level, current = levels[depth], node[searching]
        first = current - current % _FANOUT
        candidates = first[:, np.newaxis] + children
        beyond = candidates < current[:, np.newaxis] if direction < 0 else candidates > current[:, np.newaxis]
        low = beyond & (candidates < len(level))
        low &= level[np.minimum(candidates, len(level) - 1)] <= limits[searching, np.newaxis]
        hit = low.any(axis=1)
        chosen = _FANOUT - 1 - np.argmax(low[:, ::-1], axis=1) if direction < 0 else np.argmax(low, axis=1)
        found = searching[hit]
        found_level[found] = depth
        node[found] = first[hit] + chosen[hit]
        searching = searching[~hit]
        node[searching] = current[~hit] // _FANOUT
    for depth in range(n_levels - 1, 0, -1):  # down: into the nearest low enough child, level by level
        descending = np.flatnonzero(found_level == depth)
        if not len(descending):
            continue
        below = levels[depth - 1]
        candidates = node[descending, np.newaxis] * _FANOUT + children
        low = (candidates < len(below)) & (below[np.minimum(candidates, len(below) - 1)] <= limits[descending, np.newaxis])
        chosen = _FANOUT - 1 - np.argmax(low[:, ::-1], axis=1) if direction < 0 else np.argmax(low, axis=1)
        node[descending] = candidates[np.arange(len(descending)), chosen]
        found_level[descending] = depth - 1
    return np.where(found_level == 0, node, -1 if direction < 0 else len(levels[0]))
