"""Seeded generators of synthetic EEG for the demo release (pure numpy, no Django).

Every signal is built from two kinds of parts:

- *stochastic rhythms*: Gaussian noise shaped in the frequency domain, so a 1/f background, an
  alpha rhythm (a narrow spectral peak, which waxes and wanes by itself) or a delta band is one
  call of :func:`shaped_noise` with a different gain curve;
- *events*: short waveforms (blinks, saccades, spindles, K-complexes, saw-tooth waves, spikes)
  placed at inhomogeneous-Poisson onsets, all in one vectorised scatter-add.

The dataset-level generators combine them into what each task needs: single-channel artifact epochs
(T2), Bonn-like segments (T3), cohort resting-state EEG (T4), bipolar long-term recordings with
evolving seizures (T5) and whole polysomnography nights along a generated hypnogram (T6).

All amplitudes are in µV (except where a docstring says otherwise), sampling rates in Hz, times in
seconds. Every function that draws random numbers takes ``seed`` (an int, or a
``numpy.random.Generator`` to continue one stream) and passes it through ``np.random.default_rng``;
nothing touches global random state, so the same seed gives the same signal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

SeedLike = int | np.random.Generator

#: Electrode positions on a flattened head: x from left (-1) to right (+1), y from the occiput (-1)
#: to the forehead (+1). Both old (T3-T6) and new (T7/T8/P7/P8) 10-20 names are listed; lookups are
#: case-insensitive because CHB-MIT writes ``FP1`` and ``FZ``.
ELECTRODE_POSITIONS: Mapping[str, tuple[float, float]] = {
    "FP1": (-0.3, 0.95), "FPZ": (0.0, 1.0), "FP2": (0.3, 0.95),
    "F7": (-0.8, 0.6), "F3": (-0.4, 0.55), "FZ": (0.0, 0.5), "F4": (0.4, 0.55), "F8": (0.8, 0.6),
    "FT9": (-1.0, 0.3), "FT10": (1.0, 0.3),
    "T3": (-0.95, 0.0), "T7": (-0.95, 0.0), "C3": (-0.5, 0.0), "CZ": (0.0, 0.0),
    "C4": (0.5, 0.0), "T4": (0.95, 0.0), "T8": (0.95, 0.0),
    "T5": (-0.8, -0.6), "P7": (-0.8, -0.6), "P3": (-0.4, -0.55), "PZ": (0.0, -0.5),
    "P4": (0.4, -0.55), "T6": (0.8, -0.6), "P8": (0.8, -0.6),
    "O1": (-0.3, -0.95), "OZ": (0.0, -1.0), "O2": (0.3, -0.95),
    "A1": (-1.1, 0.0), "A2": (1.1, 0.0),
}

#: R&K stage codes of Sleep-EDF hypnograms: wake, stages 1-4, REM, movement time, not scored.
SLEEP_STAGES = ("W", "1", "2", "3", "4", "R", "M", "?")

EPOCH_SEC = 30.0


# --------------------------------------------------------------------------------------------
# Checks


def _rng(seed: SeedLike) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer, np.random.Generator)):
        raise TypeError(f"seed must be an int or a numpy.random.Generator, not {type(seed).__name__}")
    return np.random.default_rng(seed)


def _check_length(n_times, sfreq) -> tuple[int, float]:
    if isinstance(n_times, bool) or not isinstance(n_times, (int, np.integer)) or n_times < 1:
        raise ValueError(f"n_times must be a positive whole number of samples, got {n_times!r}")
    sfreq = float(sfreq)
    if not np.isfinite(sfreq) or sfreq <= 0:
        raise ValueError(f"sfreq must be a positive sampling rate in Hz, got {sfreq!r}")
    return int(n_times), sfreq


def electrode_position(name: str) -> tuple[float, float]:
    """The flattened-head position ``(x, y)`` of a 10-20 electrode name (case-insensitive).

    Raises ``ValueError`` naming the electrode if it is not in :data:`ELECTRODE_POSITIONS`.
    """
    key = name.strip().upper()
    if key.startswith("EEG "):
        key = key[4:]
    try:
        return ELECTRODE_POSITIONS[key]
    except KeyError:
        raise ValueError(f"unknown electrode {name!r}; known: {', '.join(sorted(ELECTRODE_POSITIONS))}") from None


def _positions(electrodes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    xy = np.array([electrode_position(name) for name in electrodes], dtype=float).reshape(-1, 2)
    return xy[:, 0], xy[:, 1]


def posterior_weight(y):
    """Share of a posterior (occipito-parietal) source seen at head position ``y``, in [0, 1]."""
    return 1.0 / (1.0 + np.exp((np.asarray(y, dtype=float) + 0.3) / 0.2))


def frontal_weight(y):
    """Share of a frontal source seen at head position ``y``, in [0, 1]."""
    return 1.0 / (1.0 + np.exp(-(np.asarray(y, dtype=float) - 0.2) / 0.2))


# --------------------------------------------------------------------------------------------
# Stochastic rhythms


def _fast_length(n: int) -> int:
    """The smallest 5-smooth number >= n (FFT lengths with only factors 2, 3 and 5 are fast)."""
    best = 1 << max(0, (n - 1).bit_length())
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            length = power35
            while length < n:
                length *= 2
            best = min(best, length)
            power35 *= 3
        power5 *= 5
    return best


def pink_gain(exponent: float = 1.0, *, f_low: float = 0.5) -> Callable[[np.ndarray], np.ndarray]:
    """Amplitude gain of a 1/f^exponent power spectrum, flattened below ``f_low`` Hz (no DC)."""
    return lambda freqs: (freqs**2 + f_low**2) ** (-exponent / 4.0)


def peak_gain(freq: float, width: float) -> Callable[[np.ndarray], np.ndarray]:
    """Amplitude gain of a Gaussian spectral peak at ``freq`` Hz with standard deviation ``width`` Hz."""
    return lambda freqs: np.exp(-0.25 * ((freqs - freq) / width) ** 2)


def highpass_gain(f_cut: float, *, order: int = 4) -> Callable[[np.ndarray], np.ndarray]:
    """Amplitude gain of a smooth high-pass at ``f_cut`` Hz (Butterworth-like magnitude)."""
    return lambda freqs: 1.0 / np.sqrt(1.0 + (f_cut / np.maximum(freqs, 1e-9)) ** (2 * order))


def shaped_noise(n_times, sfreq, gain, *, seed: SeedLike, n_channels: int = 1, dtype=np.float64):
    """Independent Gaussian noise channels whose amplitude spectrum follows ``gain``.

    Parameters
    ----------
    n_times : int
        Number of samples.
    sfreq : float
        Sampling rate, Hz.
    gain : callable
        Maps an array of frequencies (Hz) to amplitude gains of the same shape.
    seed : int or numpy.random.Generator
        Random state.
    n_channels : int
        Number of independent channels.
    dtype : numpy dtype
        Dtype of the result (float32 halves the memory of hour-long recordings).

    Returns
    -------
    ndarray, shape (n_channels, n_times)
        Each channel has zero mean and unit RMS (unitless; scale to µV by the caller).
    """
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    n_fft = _fast_length(n_times)
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sfreq)
    weights = np.asarray(gain(freqs), dtype=float)
    weights[0] = 0.0
    out = np.empty((n_channels, n_times), dtype=dtype)
    for channel in range(n_channels):
        spectrum = rng.standard_normal((2, freqs.size))
        waveform = np.fft.irfft((spectrum[0] + 1j * spectrum[1]) * weights, n=n_fft)[:n_times]
        waveform -= waveform.mean()
        rms = np.sqrt(np.mean(waveform**2))
        out[channel] = waveform / rms if rms > 0 else waveform
    return out


def pink_noise(n_times, sfreq, *, seed: SeedLike, n_channels: int = 1, exponent: float = 1.0, dtype=np.float64):
    """1/f^exponent background, shape (n_channels, n_times), unit RMS per channel (see :func:`shaped_noise`)."""
    return shaped_noise(n_times, sfreq, pink_gain(exponent), seed=seed, n_channels=n_channels, dtype=dtype)


def rhythm(n_times, sfreq, freq, *, seed: SeedLike, width: float = 0.6, n_channels: int = 1, dtype=np.float64):
    """A waxing and waning rhythm: narrow-band noise around ``freq`` Hz (spectral SD ``width`` Hz).

    Returns an array of shape (n_channels, n_times) with unit RMS per channel.
    """
    return shaped_noise(n_times, sfreq, peak_gain(freq, width), seed=seed, n_channels=n_channels, dtype=dtype)


# --------------------------------------------------------------------------------------------
# Events


def event_onsets(rate, sfreq, *, seed: SeedLike, n_times: int | None = None) -> np.ndarray:
    """Sample indices of an inhomogeneous Poisson process.

    Parameters
    ----------
    rate : float or ndarray, shape (n_times,)
        Event rate in events per second, constant or per sample.
    sfreq : float
        Sampling rate, Hz.
    seed : int or numpy.random.Generator
        Random state.
    n_times : int, optional
        Number of samples; required when ``rate`` is a constant.

    Returns
    -------
    ndarray of int, shape (n_events,)
        Sorted onset sample indices.
    """
    rng = _rng(seed)
    rate = np.asarray(rate, dtype=float)
    if rate.ndim == 0:
        if n_times is None:
            raise ValueError("n_times is required when rate is a constant")
        rate = np.full(int(n_times), float(rate))
    if np.any(rate < 0) or not np.all(np.isfinite(rate)):
        raise ValueError("rate must be finite and non-negative (events per second)")
    expected = rate.sum() / float(sfreq)
    count = int(rng.poisson(expected)) if expected > 0 else 0
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(rng.choice(rate.size, size=count, p=rate / rate.sum()))


def place_events(n_times: int, onsets, templates) -> np.ndarray:
    """Sum of event waveforms placed at their onsets.

    Parameters
    ----------
    n_times : int
        Length of the output, samples.
    onsets : ndarray of int, shape (n_events,)
        First sample of each event.
    templates : ndarray, shape (n_events, n_template)
        One waveform per event (µV); the parts past the end of the output are dropped.

    Returns
    -------
    ndarray, shape (n_times,)
    """
    out = np.zeros(int(n_times))
    onsets = np.asarray(onsets, dtype=np.int64)
    templates = np.asarray(templates, dtype=float)
    if onsets.size == 0:
        return out
    index = onsets[:, None] + np.arange(templates.shape[1])[None, :]
    inside = index < n_times
    np.add.at(out, index[inside], templates[inside])
    return out


def _template_time(n_events: int, duration: float, sfreq: float) -> np.ndarray:
    return np.broadcast_to(np.arange(int(round(duration * sfreq))) / sfreq, (n_events, int(round(duration * sfreq))))


def blink_templates(n_events: int, sfreq, *, seed: SeedLike, amplitude_uv=(80.0, 200.0)) -> np.ndarray:
    """Eye blinks: monophasic raised-cosine deflections of 0.25-0.45 s, shape (n_events, n_template), µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 0.5, sfreq)
    length = rng.uniform(0.25, 0.45, (n_events, 1))
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1))
    return amplitude * np.where(t < length, np.sin(np.pi * t / length) ** 2, 0.0)


def saccade_templates(n_events: int, sfreq, *, seed: SeedLike, amplitude_uv=(60.0, 160.0)) -> np.ndarray:
    """Rapid eye movements: a 20-40 ms step of either sign that relaxes over ~0.5 s, µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 1.5, sfreq)
    rise = rng.uniform(0.02, 0.04, (n_events, 1))
    relax = rng.uniform(0.3, 0.7, (n_events, 1))
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1)) * rng.choice([-1.0, 1.0], (n_events, 1))
    return amplitude * (1.0 - np.exp(-t / rise)) * np.exp(-t / relax)


def spindle_templates(n_events: int, sfreq, *, seed: SeedLike, freq_hz=(11.5, 15.0), amplitude_uv=(20.0, 45.0)):
    """Sleep spindles: Gaussian-windowed 11.5-15 Hz bursts lasting about 0.5-2 s, µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 2.4, sfreq) - 1.2
    width = rng.uniform(0.12, 0.35, (n_events, 1))
    freq = rng.uniform(*freq_hz, (n_events, 1))
    phase = rng.uniform(0, 2 * np.pi, (n_events, 1))
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1))
    return amplitude * np.exp(-0.5 * (t / width) ** 2) * np.cos(2 * np.pi * freq * t + phase)


def k_complex_templates(n_events: int, sfreq, *, seed: SeedLike, amplitude_uv=(90.0, 150.0)) -> np.ndarray:
    """K-complexes: a sharp negative wave followed by a slower positive one, ~1 s in all, µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 1.6, sfreq)
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1))
    negative = np.exp(-0.5 * ((t - 0.3) / rng.uniform(0.07, 0.1, (n_events, 1))) ** 2)
    positive = np.exp(-0.5 * ((t - 0.75) / rng.uniform(0.15, 0.22, (n_events, 1))) ** 2)
    return amplitude * (-negative + 0.6 * positive)


def sawtooth_templates(n_events: int, sfreq, *, seed: SeedLike, freq_hz=(2.5, 5.0), amplitude_uv=(20.0, 40.0)):
    """REM saw-tooth waves: trains of 2.5-5 Hz ramps with a sharp reset, under a ~1-s envelope, µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 2.0, sfreq)
    freq = rng.uniform(*freq_hz, (n_events, 1))
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1))
    ramp = 2.0 * ((freq * t) % 1.0) - 1.0
    return amplitude * ramp * np.sin(np.pi * t / 2.0) ** 2


def spike_templates(n_events: int, sfreq, *, seed: SeedLike, amplitude_uv=(80.0, 250.0)) -> np.ndarray:
    """Interictal spike-and-slow-wave complexes: a 20-70 ms spike and a ~200-ms after-going wave, µV."""
    rng = _rng(seed)
    t = _template_time(n_events, 0.5, sfreq)
    amplitude = rng.uniform(*amplitude_uv, (n_events, 1)) * rng.choice([-1.0, 1.0], (n_events, 1))
    spike = np.exp(-0.5 * ((t - 0.05) / rng.uniform(0.008, 0.02, (n_events, 1))) ** 2)
    slow = np.exp(-0.5 * ((t - 0.18) / rng.uniform(0.05, 0.08, (n_events, 1))) ** 2)
    return amplitude * (spike - 0.4 * slow)


def events(n_times, sfreq, rate, make_templates, *, seed: SeedLike) -> tuple[np.ndarray, np.ndarray]:
    """Events of one kind at Poisson onsets: ``(signal, onsets)``.

    Parameters
    ----------
    n_times : int
        Length, samples.
    sfreq : float
        Sampling rate, Hz.
    rate : float or ndarray, shape (n_times,)
        Events per second, constant or per sample.
    make_templates : callable
        One of the ``*_templates`` functions: ``(n_events, sfreq, *, seed) -> (n_events, n_template)``.
    seed : int or numpy.random.Generator
        Random state.

    Returns
    -------
    signal : ndarray, shape (n_times,), µV
    onsets : ndarray of int, shape (n_events,), samples
    """
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    onsets = event_onsets(rate, sfreq, seed=rng, n_times=n_times)
    return place_events(n_times, onsets, make_templates(onsets.size, sfreq, seed=rng)), onsets


def muscle_bursts(n_times, sfreq, *, seed: SeedLike, rate_hz: float = 0.5, amplitude_uv: float = 40.0,
                  duration_s=(0.2, 1.5), f_low: float = 20.0) -> np.ndarray:
    """Muscle artifact: broadband noise above ``f_low`` Hz, gated by bursts of 0.2-1.5 s.

    Returns an array of shape (n_times,) in µV; inside a burst its RMS is about ``amplitude_uv``.
    """
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    carrier = shaped_noise(n_times, sfreq, highpass_gain(min(f_low, 0.4 * sfreq)), seed=rng)[0]
    onsets = event_onsets(rate_hz, sfreq, seed=rng, n_times=n_times)
    lengths = (rng.uniform(*duration_s, onsets.size) * sfreq).astype(np.int64)
    gate = np.zeros(n_times + 1)
    np.add.at(gate, onsets, 1.0)
    np.add.at(gate, np.minimum(onsets + lengths, n_times), -1.0)
    envelope = _smooth(np.minimum(np.cumsum(gate)[:n_times], 1.0), int(0.05 * sfreq))
    return amplitude_uv * carrier * envelope


def _smooth(x: np.ndarray, width: int) -> np.ndarray:
    """Moving average over ``width`` samples along the last axis (O(n), edges padded with the edge value)."""
    if width <= 1:
        return np.asarray(x, dtype=float)
    x = np.asarray(x, dtype=float)
    left, right = width // 2, width - 1 - width // 2
    padded = np.concatenate([np.repeat(x[..., :1], left, axis=-1), x, np.repeat(x[..., -1:], right, axis=-1)], axis=-1)
    cumulative = np.cumsum(padded, axis=-1)
    cumulative = np.concatenate([np.zeros(x.shape[:-1] + (1,)), cumulative], axis=-1)
    return (cumulative[..., width:] - cumulative[..., :-width]) / width


def ictal_discharge(n_times, sfreq, *, seed: SeedLike, freq_start: float = 7.0, freq_end: float = 3.0,
                    amplitude_uv: float = 250.0, sharpness: float = 4.0) -> np.ndarray:
    """An evolving rhythmic seizure discharge.

    The frequency glides from ``freq_start`` to ``freq_end`` Hz with a slow random wobble; each cycle
    is a sharp spike (a von Mises pulse) followed by a slow wave; the amplitude builds up over the
    first third, then the discharge ends over the last tenth.

    Parameters
    ----------
    n_times : int
        Length of the discharge, samples.
    sfreq : float
        Sampling rate, Hz.
    seed : int or numpy.random.Generator
        Random state.
    freq_start, freq_end : float
        Discharge frequency at the start and at the end, Hz.
    amplitude_uv : float
        Peak-to-peak amplitude at full build-up, µV.
    sharpness : float
        Concentration of the spike (larger is sharper).

    Returns
    -------
    ndarray, shape (n_times,), µV
    """
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    progress = np.arange(n_times) / max(n_times - 1, 1)
    wobble = 0.3 * shaped_noise(n_times, sfreq, peak_gain(0.0, 0.2), seed=rng)[0]
    freq = np.maximum(freq_start + (freq_end - freq_start) * progress**0.8 + wobble, 0.5)
    phase = 2 * np.pi * np.cumsum(freq) / sfreq + rng.uniform(0, 2 * np.pi)
    spike = np.exp(sharpness * (np.cos(phase) - 1.0))
    wave = spike - spike.mean() - 0.35 * np.cos(phase - 2.2)
    wave /= np.ptp(wave) or 1.0
    build_up = 0.35 + 0.65 * np.minimum(progress / 0.33, 1.0)
    ending = np.clip((1.0 - progress) / 0.1, 0.0, 1.0)
    return amplitude_uv * wave * build_up * ending


# --------------------------------------------------------------------------------------------
# Resting-state EEG with a cohort's spectrum (T4) and bipolar long-term EEG with seizures (T5)


@dataclass(frozen=True)
class RestingProfile:
    """Spectral make-up of resting eyes-closed EEG; amplitudes are RMS in µV where the source is strongest."""

    background_uv: float = 9.0
    exponent: float = 1.0
    alpha_hz: float = 10.0
    alpha_uv: float = 22.0
    alpha_width_hz: float = 0.6
    theta_hz: float = 6.0
    theta_uv: float = 4.0
    theta_frontal: float = 0.0   # 0: diffuse theta and delta, 1: all of it frontal
    delta_uv: float = 3.0
    beta_uv: float = 3.0

    def jittered(self, seed: SeedLike) -> RestingProfile:
        """The same profile for another subject: peak frequency ± 0.3 Hz, amplitudes × 0.85-1.15."""
        rng = _rng(seed)

        def scale(value: float) -> float:
            return value * rng.uniform(0.85, 1.15)

        return replace(
            self,
            alpha_hz=self.alpha_hz + rng.uniform(-0.3, 0.3),
            alpha_uv=scale(self.alpha_uv), theta_uv=scale(self.theta_uv),
            delta_uv=scale(self.delta_uv), background_uv=scale(self.background_uv),
        )


#: Group profiles of the ds004504 cohorts: healthy controls have a clean ~10-Hz posterior alpha peak;
#: Alzheimer's disease slows and weakens alpha and raises diffuse theta and delta; frontotemporal
#: dementia keeps a near-normal posterior alpha but adds frontal theta and delta.
COHORT_PROFILES: Mapping[str, RestingProfile] = {
    "HC": RestingProfile(),
    "AD": RestingProfile(alpha_hz=7.9, alpha_uv=11.0, alpha_width_hz=0.9, theta_hz=6.0, theta_uv=12.0,
                         delta_uv=8.0, beta_uv=2.0),
    "FTD": RestingProfile(alpha_hz=9.4, alpha_uv=16.0, alpha_width_hz=0.7, theta_hz=5.5, theta_uv=13.0,
                          theta_frontal=1.0, delta_uv=11.0, beta_uv=3.0),
}

#: Children's EEG as in CHB-MIT (ages 1.5-22): a slower posterior rhythm and more theta.
PEDIATRIC_PROFILE = RestingProfile(background_uv=12.0, alpha_hz=8.5, alpha_uv=14.0, alpha_width_hz=0.8,
                                   theta_uv=8.0, delta_uv=6.0, beta_uv=3.0)


def _mixture_gain(gains, amplitudes) -> Callable[[np.ndarray], np.ndarray]:
    """Gain of a sum of independent shaped noises: band ``k`` at RMS ``amplitudes[k]`` with shape ``gains[k]``.

    Independent Gaussian noises add in power, so their sum is one shaped noise with this gain; one
    FFT then serves every band of a channel.
    """
    def gain(freqs):
        power = np.zeros_like(freqs, dtype=float)
        for shape, amplitude in zip(gains, amplitudes):
            values = shape(freqs)
            power += amplitude**2 * values**2 / np.sum(values[1:] ** 2)
        return np.sqrt(power)
    return gain


def resting_state(electrodes: Sequence[str], n_times, sfreq, *, seed: SeedLike,
                  profile: RestingProfile = COHORT_PROFILES["HC"], dtype=np.float64) -> np.ndarray:
    """Referential resting-state EEG at the given electrodes.

    Each band comes from a shared source projected with a spatial weight (alpha posterior; theta and
    delta diffuse or frontal; beta mostly frontal) plus an independent part per electrode, so
    neighbouring channels are correlated but not identical.

    Parameters
    ----------
    electrodes : sequence of str
        10-20 electrode names (see :data:`ELECTRODE_POSITIONS`).
    n_times : int
        Number of samples.
    sfreq : float
        Sampling rate, Hz.
    seed : int or numpy.random.Generator
        Random state.
    profile : RestingProfile
        Spectral make-up, e.g. ``COHORT_PROFILES["AD"]``.
    dtype : numpy dtype
        Dtype of the result.

    Returns
    -------
    ndarray, shape (n_electrodes, n_times), µV
    """
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    _, y = _positions(electrodes)
    posterior, frontal = posterior_weight(y), frontal_weight(y)
    slow_weight = (1 - profile.theta_frontal) * 0.8 + profile.theta_frontal * frontal
    n = len(electrodes)
    bands = (  # (spectral shape, RMS in µV, spatial weight, share of the power that is independent)
        (pink_gain(profile.exponent), profile.background_uv, np.ones(n), 0.8),
        (peak_gain(profile.alpha_hz, profile.alpha_width_hz), profile.alpha_uv, 0.1 + posterior, 0.1),
        (peak_gain(profile.theta_hz, 1.0), profile.theta_uv, slow_weight, 0.2),
        (peak_gain(1.8, 0.8), profile.delta_uv, slow_weight, 0.2),
        (peak_gain(19.0, 4.0), profile.beta_uv, 0.5 + 0.5 * frontal, 0.4),
    )
    out = np.zeros((n, n_times), dtype=dtype)
    for shape, amplitude_uv, weight, independent in bands:
        shared = shaped_noise(n_times, sfreq, shape, seed=rng, dtype=dtype)[0]
        out += (amplitude_uv * np.sqrt(1 - independent) * weight)[:, None].astype(dtype) * shared
    shapes = [band[0] for band in bands]
    for electrode in range(n):
        amplitudes = [amplitude_uv * weight[electrode] * np.sqrt(independent)
                      for _, amplitude_uv, weight, independent in bands]
        total = float(np.sqrt(np.sum(np.square(amplitudes))))
        gain = _mixture_gain(shapes, amplitudes)
        out[electrode] += total * shaped_noise(n_times, sfreq, gain, seed=rng, dtype=dtype)[0]
    return out


def bipolar_electrodes(label: str) -> tuple[str, str] | None:
    """The two electrodes of a bipolar label such as ``FP1-F7``, or None for a dummy channel (``-``)."""
    first, sep, second = label.strip().partition("-")
    if not sep or not first or not second:
        return None
    return first, second


def seizure_recording(labels: Sequence[str], duration_s: float, sfreq, seizures: Sequence[tuple[float, float]], *,
                      seed: SeedLike, profile: RestingProfile = PEDIATRIC_PROFILE, dtype=np.float32) -> np.ndarray:
    """A bipolar long-term recording with evolving focal-to-widespread seizures and artifacts.

    Referential EEG is generated at every electrode the labels name, then each bipolar channel is the
    difference of its two electrodes (a repeated label, like CHB-MIT's second ``T8-P8``, is an exact
    copy; a dummy ``-`` channel is flat zero). Each seizure is an :func:`ictal_discharge` that starts
    at a random focus and spreads over the head as it evolves, with post-ictal slowing after it.
    Blinks appear on the frontopolar electrodes and muscle bursts temporally throughout.

    Parameters
    ----------
    labels : sequence of str
        Channel labels, e.g. CHB-MIT's ``FP1-F7`` ... ``T8-P8``.
    duration_s : float
        Duration, seconds.
    sfreq : float
        Sampling rate, Hz.
    seizures : sequence of (onset, offset)
        Seizure intervals, seconds from the start.
    seed : int or numpy.random.Generator
        Random state.
    profile : RestingProfile
        Background make-up.
    dtype : numpy dtype
        Dtype of the result.

    Returns
    -------
    ndarray, shape (n_channels, n_times), µV
    """
    n_times, sfreq = _check_length(int(round(duration_s * sfreq)), sfreq)
    rng = _rng(seed)
    pairs = [bipolar_electrodes(label) for label in labels]
    electrodes = sorted({name.upper() for pair in pairs if pair for name in pair})
    index = {name: i for i, name in enumerate(electrodes)}
    x, y = _positions(electrodes)
    referential = resting_state(electrodes, n_times, sfreq, seed=rng, profile=profile.jittered(rng), dtype=dtype)

    blinks, _ = events(n_times, sfreq, 0.2, blink_templates, seed=rng)
    ocular_field = np.exp((y - 1.0) / 0.15)  # steep fall-off from the eyes: frontopolar only
    referential += ocular_field[:, None].astype(dtype) * blinks.astype(dtype)
    temporal = np.flatnonzero(np.abs(x) >= 0.8)
    chewing = muscle_bursts(n_times, sfreq, seed=rng, rate_hz=0.02, amplitude_uv=30.0).astype(dtype)
    referential[temporal] += rng.uniform(0.5, 1.0, (temporal.size, 1)).astype(dtype) * chewing

    lag_per_unit = int(0.05 * sfreq)  # the discharge reaches far electrodes up to ~50 ms later
    for onset_s, offset_s in seizures:
        start, stop = int(onset_s * sfreq), min(int(offset_s * sfreq), n_times)
        if stop <= start:
            raise ValueError(f"seizure ({onset_s}, {offset_s}) s is empty or outside the {duration_s} s recording")
        fx, fy = electrode_position(electrodes[rng.integers(len(electrodes))])
        distance = np.hypot(x - fx, y - fy)
        focal = np.exp(-0.5 * (distance / 0.35) ** 2)
        reach = rng.uniform(0.3, 0.9, len(electrodes)) * (1 - focal)
        lags = np.round(distance * lag_per_unit).astype(int)
        length = stop - start
        spread = 0.1 + 0.9 * np.minimum(np.arange(length) / (0.4 * length), 1.0)
        discharge = ictal_discharge(length + lags.max(), sfreq, seed=rng, freq_start=rng.uniform(6.0, 9.0),
                                    freq_end=rng.uniform(2.5, 4.0), amplitude_uv=rng.uniform(300.0, 450.0))
        for i in range(len(electrodes)):
            lagged = discharge[lags.max() - lags[i]:lags.max() - lags[i] + length]
            referential[i, start:stop] += ((focal[i] + reach[i] * spread) * lagged).astype(dtype)
        muscle = muscle_bursts(length, sfreq, seed=rng, rate_hz=0.5, amplitude_uv=25.0).astype(dtype)
        referential[np.abs(x) >= 0.8, start:stop] += muscle
        post_stop = min(stop + int(60 * sfreq), n_times)
        if post_stop > stop:
            fade = np.linspace(1.0, 0.0, post_stop - stop)
            slowing = 40.0 * rhythm(post_stop - stop, sfreq, 1.5, seed=rng, width=0.6)[0] * fade
            referential[:, stop:post_stop] *= (1 - 0.5 * fade).astype(dtype)
            referential[:, stop:post_stop] += (focal[:, None] * slowing).astype(dtype)

    out = np.zeros((len(labels), n_times), dtype=dtype)
    for channel, pair in enumerate(pairs):
        if pair:
            out[channel] = referential[index[pair[0].upper()]] - referential[index[pair[1].upper()]]
    return out


# --------------------------------------------------------------------------------------------
# Short single-channel segments: EEGdenoiseNet epochs (T2) and Bonn segments (T3)


def clean_epoch(n_times, sfreq, *, seed: SeedLike) -> np.ndarray:
    """A clean single-channel EEG epoch: 1/f background, posterior alpha and some beta; µV, shape (n_times,)."""
    rng = _rng(seed)
    profile = COHORT_PROFILES["HC"].jittered(rng)
    return resting_state(["O1"], n_times, sfreq, seed=rng, profile=profile)[0]


def ocular_epoch(n_times, sfreq, *, seed: SeedLike) -> np.ndarray:
    """An EOG epoch: slow frontal deflections (< 1 Hz) with blinks riding on them, µV, shape (n_times,)."""
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    slow = 60.0 * shaped_noise(n_times, sfreq, peak_gain(0.0, 0.6), seed=rng)[0]
    rate = rng.uniform(0.3, 1.0)
    blinks, onsets = events(n_times, sfreq, rate, blink_templates, seed=rng)
    if onsets.size == 0:
        blinks = place_events(n_times, [rng.integers(0, max(1, n_times - int(0.5 * sfreq)))],
                              blink_templates(1, sfreq, seed=rng))
    return slow + blinks


def muscle_epoch(n_times, sfreq, *, seed: SeedLike) -> np.ndarray:
    """An EMG epoch: broadband activity above 20 Hz in one or more bursts, µV, shape (n_times,)."""
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    tonic = 8.0 * shaped_noise(n_times, sfreq, highpass_gain(min(20.0, 0.4 * sfreq)), seed=rng)[0]
    return tonic + muscle_bursts(n_times, sfreq, seed=rng, rate_hz=1.5, amplitude_uv=50.0)


#: The five Bonn sets: Z healthy eyes open, O healthy eyes closed (surface); N and F interictal
#: (intracranial, opposite hemisphere and epileptogenic zone); S ictal.
BONN_SETS = ("Z", "O", "N", "F", "S")


def bonn_segment(set_name: str, *, seed: SeedLike, n_times: int = 4097, sfreq: float = 173.61) -> np.ndarray:
    """A Bonn-like single-channel segment of one set, as integer A/D values (µV), shape (n_times,).

    Z: 1/f background with weak alpha and some muscle; O: a strong ~10-Hz alpha; N: slower
    intracranial background; F: the same with interictal spikes; S: a high-amplitude evolving
    rhythmic discharge throughout, clipped at the 12-bit ceiling (±2047) like the real set.
    """
    if set_name not in BONN_SETS:
        raise ValueError(f"unknown Bonn set {set_name!r}; expected one of {', '.join(BONN_SETS)}")
    n_times, sfreq = _check_length(n_times, sfreq)
    rng = _rng(seed)
    if set_name in ("Z", "O"):
        profile = replace(COHORT_PROFILES["HC"], background_uv=30.0,
                          alpha_uv=12.0 if set_name == "Z" else 45.0, beta_uv=8.0 if set_name == "Z" else 4.0)
        signal = resting_state(["O1"], n_times, sfreq, seed=rng, profile=profile.jittered(rng))[0]
        if set_name == "Z":
            signal += muscle_bursts(n_times, sfreq, seed=rng, rate_hz=0.1, amplitude_uv=20.0)
    elif set_name in ("N", "F"):
        signal = 45.0 * pink_noise(n_times, sfreq, seed=rng, exponent=1.6)[0]
        spike_rate = 0.05 if set_name == "N" else 0.3
        signal += events(n_times, sfreq, spike_rate, spike_templates, seed=rng)[0]
    else:
        signal = 40.0 * pink_noise(n_times, sfreq, seed=rng)[0] + ictal_discharge(
            n_times, sfreq, seed=rng, freq_start=rng.uniform(5.0, 9.0), freq_end=rng.uniform(3.0, 5.0),
            amplitude_uv=rng.uniform(700.0, 1800.0), sharpness=rng.uniform(2.0, 6.0))
    return np.clip(np.round(signal), -2048, 2047).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Sleep (T6)


#: Brief stage shifts that fragment a generated night: the stages an epoch of each stage may turn into.
_STAGE_SHIFTS: Mapping[str, tuple[str, ...]] = {
    "1": ("2", "W"), "2": ("1", "1", "W", "3"), "3": ("4", "2"), "4": ("3",), "R": ("1", "W", "2"),
}


def hypnogram(n_epochs: int, *, seed: SeedLike, sleep_onset_epochs: int = 120, final_wake_epochs: int = 90,
              cycle_epochs: float = 180.0) -> np.ndarray:
    """A plausible R&K hypnogram, one stage code per 30-s epoch (see :data:`SLEEP_STAGES`).

    Wake until sleep onset, then ~90-min cycles of N1 → N2 → N3 (stage 3 then 4, most of it in the
    first two cycles) → N2 → REM (longer in later cycles), with brief awakenings and the odd
    movement-time epoch between cycles, then wake again for the last ``final_wake_epochs``.

    Parameters
    ----------
    n_epochs : int
        Total number of 30-s epochs.
    seed : int or numpy.random.Generator
        Random state.
    sleep_onset_epochs : int
        Epochs of wake before sleep onset.
    final_wake_epochs : int
        Epochs of wake after the final awakening.
    cycle_epochs : float
        Mean cycle length, epochs.

    Returns
    -------
    ndarray of str, shape (n_epochs,)
    """
    if n_epochs < sleep_onset_epochs + final_wake_epochs + 10:
        raise ValueError(
            f"n_epochs={n_epochs} leaves no room for sleep after {sleep_onset_epochs} + {final_wake_epochs} wake epochs"
        )
    rng = _rng(seed)
    sleep_period = n_epochs - sleep_onset_epochs - final_wake_epochs
    stages: list[str] = []
    cycle = 0
    while len(stages) < sleep_period:
        first = cycle == 0
        deep = max(0, int(rng.normal([60, 40, 20, 5][min(cycle, 3)], 6)))
        rem = max(3, int(rng.normal([18, 32, 45, 55][min(cycle, 3)], 5)))
        core = max(20, int(rng.normal(cycle_epochs, 15)) - deep - rem)
        stage3 = min(deep, int(rng.integers(4, 10)))
        segments = [
            ("1", int(rng.integers(4, 10)) if first else int(rng.integers(1, 4))),
            ("2", core // 2),
            ("3", stage3), ("4", deep - stage3), ("3", int(rng.integers(1, 4)) if deep else 0),
            ("2", core - core // 2),
            ("R", rem),
        ]
        if rng.random() < 0.5:
            segments.append(("W", int(rng.integers(1, 4))))
        if rng.random() < 0.5:
            segments.append(("M", 1))
        for stage, length in segments:
            stages.extend([stage] * length)
        cycle += 1
    stages = stages[:sleep_period]
    # Real nights are fragmented: brief shifts to a neighbouring stage interrupt the long runs.
    for position in np.flatnonzero(rng.random(len(stages)) < 0.04):
        options = _STAGE_SHIFTS.get(stages[position])
        if options:
            shifted = options[rng.integers(len(options))]
            for offset in range(int(rng.integers(1, 4))):
                if position + offset < len(stages):
                    stages[position + offset] = shifted
    while stages[-1] in ("W", "M"):  # the last sleep epoch ends the sleep period
        stages.pop()
    stages = ["W"] * sleep_onset_epochs + stages
    return np.array(stages + ["W"] * (n_epochs - len(stages)))


SLEEP_EEG_COMPONENTS = ("background", "alpha", "theta", "delta", "beta", "muscle")

#: Per-stage RMS amplitude (µV) of each EEG component at (Fpz-Cz, Pz-Oz).
SLEEP_EEG_GAINS: Mapping[str, Mapping[str, tuple[float, float]]] = {
    stage: dict(zip(SLEEP_EEG_COMPONENTS, row)) for stage, row in {
        #     background  alpha      theta    delta     beta        muscle
        "W": ((8, 8), (5, 18), (3, 3), (3, 2), (4, 3), (5, 1.5)),
        "1": ((8, 8), (2, 4), (11, 9), (5, 4), (2, 2), (1.5, 0.5)),
        "2": ((8, 8), (1.5, 2), (9, 7), (14, 10), (1.5, 1.5), (0.8, 0.3)),
        "3": ((8, 8), (1, 1.5), (8, 6), (38, 28), (1, 1), (0.6, 0.2)),
        "4": ((8, 8), (1, 1), (8, 6), (55, 40), (1, 1), (0.6, 0.2)),
        "R": ((7, 7), (2, 4), (9, 8), (5, 4), (2.5, 2.5), (0.2, 0.1)),
        "M": ((8, 8), (4, 10), (4, 4), (6, 4), (4, 3), (30, 12)),
        "?": ((8, 8), (5, 18), (3, 3), (3, 2), (4, 3), (5, 1.5)),
    }.items()
}

#: Per-stage event rates (events per second).
SLEEP_EVENT_RATES: Mapping[str, Mapping[str, float]] = {
    "W": {"blink": 0.25, "spindle": 0.0, "k_complex": 0.0, "sawtooth": 0.0, "saccade": 0.05},
    "1": {"blink": 0.02, "spindle": 0.0, "k_complex": 0.0, "sawtooth": 0.0, "saccade": 0.0},
    "2": {"blink": 0.0, "spindle": 0.12, "k_complex": 0.03, "sawtooth": 0.0, "saccade": 0.0},
    "3": {"blink": 0.0, "spindle": 0.03, "k_complex": 0.01, "sawtooth": 0.0, "saccade": 0.0},
    "4": {"blink": 0.0, "spindle": 0.01, "k_complex": 0.0, "sawtooth": 0.0, "saccade": 0.0},
    "R": {"blink": 0.0, "spindle": 0.0, "k_complex": 0.0, "sawtooth": 0.15, "saccade": 0.5},
    "M": {"blink": 0.3, "spindle": 0.0, "k_complex": 0.0, "sawtooth": 0.0, "saccade": 0.2},
    "?": {"blink": 0.25, "spindle": 0.0, "k_complex": 0.0, "sawtooth": 0.0, "saccade": 0.05},
}

#: Per-stage chin EMG envelope (µV), slow eye movement amplitude on the EOG (µV) and breathing rate (Hz).
SLEEP_TONE: Mapping[str, tuple[float, float, float]] = {
    "W": (3.5, 15.0, 0.28), "1": (2.0, 70.0, 0.26), "2": (1.4, 10.0, 0.25), "3": (1.2, 5.0, 0.24),
    "4": (1.2, 5.0, 0.24), "R": (0.3, 15.0, 0.30), "M": (4.8, 30.0, 0.30), "?": (3.5, 15.0, 0.28),
}

_SLEEP_EVENT_SHAPES = {
    "blink": blink_templates, "spindle": spindle_templates, "k_complex": k_complex_templates,
    "sawtooth": sawtooth_templates, "saccade": saccade_templates,
}


def _per_sample(stages: np.ndarray, values: Mapping[str, float], samples_per_epoch: int, smooth: int) -> np.ndarray:
    per_epoch = np.array([values[stage] for stage in stages], dtype=float)
    return _smooth(np.repeat(per_epoch, samples_per_epoch), smooth)


def sleep_night(stages: Sequence[str], *, seed: SeedLike, sfreq: float = 100.0, slow_sfreq: float = 1.0) -> dict:
    """A Sleep-EDF-like polysomnography night following a hypnogram.

    Wake: posterior alpha, blinks and high chin EMG; N1: theta, alpha drop-out and slow rolling eye
    movements; N2: spindles (11.5-15 Hz) and K-complexes on a theta/delta background; N3 (stages 3
    and 4): high-amplitude delta, frontally largest; REM: low-voltage mixed activity with saw-tooth
    theta, rapid eye movements and the lowest chin EMG. Stage amplitudes cross-fade over ~5 s.

    Parameters
    ----------
    stages : sequence of str
        One R&K stage code per 30-s epoch (see :data:`SLEEP_STAGES`).
    seed : int or numpy.random.Generator
        Random state.
    sfreq : float
        Rate of the EEG and EOG channels, Hz (Sleep-EDF: 100).
    slow_sfreq : float
        Rate of the respiration, chin EMG, temperature and marker channels, Hz (Sleep-EDF: 1).

    Returns
    -------
    dict
        ``{"EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal"}`` → ndarray, shape (n_epochs * 30 * sfreq,), µV;
        ``"Resp oro-nasal"`` (arbitrary units), ``"EMG submental"`` (µV envelope), ``"Temp rectal"``
        (°C) and ``"Event marker"`` → ndarray, shape (n_epochs * 30 * slow_sfreq,).
    """
    stages = np.asarray(stages)
    unknown = sorted(set(stages.tolist()) - set(SLEEP_STAGES))
    if unknown:
        raise ValueError(f"unknown sleep stage codes {unknown}; expected any of {SLEEP_STAGES}")
    rng = _rng(seed)
    per_epoch = int(round(EPOCH_SEC * sfreq))
    n_times = stages.size * per_epoch
    smooth = int(5 * sfreq)
    components = {  # name: (spectral gain, correlation between the two derivations)
        "background": (pink_gain(1.0), 0.3),
        "alpha": (peak_gain(10.0, 0.7), 0.5),
        "theta": (peak_gain(5.5, 1.2), 0.5),
        "delta": (peak_gain(0.9, 0.5), 0.7),
        "beta": (peak_gain(20.0, 4.0), 0.3),
        "muscle": (highpass_gain(25.0), 0.1),
    }
    eeg = np.zeros((2, n_times))
    for name, (spectral_gain, correlation) in components.items():
        noise = shaped_noise(n_times, sfreq, spectral_gain, seed=rng, n_channels=2, dtype=np.float32)
        noise[1] = correlation * noise[0] + np.sqrt(1 - correlation**2) * noise[1]
        for channel in range(2):
            gains = {stage: amplitudes[name][channel] for stage, amplitudes in SLEEP_EEG_GAINS.items()}
            eeg[channel] += _per_sample(stages, gains, per_epoch, smooth) * noise[channel]
    event_signals = {}
    for name, make_templates in _SLEEP_EVENT_SHAPES.items():
        rate = np.repeat([SLEEP_EVENT_RATES[stage][name] for stage in stages], per_epoch)
        event_signals[name] = events(n_times, sfreq, rate, make_templates, seed=rng)[0]
    eeg[0] += event_signals["spindle"] * 0.8 + event_signals["k_complex"] + event_signals["sawtooth"]
    eeg[1] += event_signals["spindle"] + event_signals["k_complex"] * 0.5 + event_signals["sawtooth"] * 0.6
    eeg[0] += 0.3 * event_signals["blink"]

    slow_eye = _per_sample(stages, {s: v[1] for s, v in SLEEP_TONE.items()}, per_epoch, smooth) * rhythm(
        n_times, sfreq, 0.3, seed=rng, width=0.15)[0]
    eog = 0.4 * eeg[0] + slow_eye + event_signals["saccade"] + 0.5 * event_signals["blink"]

    per_slow = int(round(EPOCH_SEC * slow_sfreq))
    n_slow = stages.size * per_slow
    emg_level = _per_sample(stages, {s: v[0] for s, v in SLEEP_TONE.items()}, per_slow, 3)
    emg = np.clip(emg_level * (1 + 0.15 * rng.standard_normal(n_slow)), 0.05, 4.95)
    breathing = _per_sample(stages, {s: v[2] for s, v in SLEEP_TONE.items()}, per_slow, 3)
    resp = 600.0 * np.sin(2 * np.pi * np.cumsum(breathing) / slow_sfreq) + 60.0 * rng.standard_normal(n_slow)
    hours = np.arange(n_slow) / slow_sfreq / 3600.0
    temp = 37.1 - 0.5 * np.sin(np.pi * np.clip(hours / max(hours[-1], 1e-9), 0, 1)) + 0.02 * rng.standard_normal(n_slow)
    return {
        "EEG Fpz-Cz": eeg[0],
        "EEG Pz-Oz": eeg[1],
        "EOG horizontal": eog,
        "Resp oro-nasal": resp,
        "EMG submental": emg,
        "Temp rectal": temp,
        "Event marker": np.full(n_slow, 886.0),
    }
