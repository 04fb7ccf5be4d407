"""The ten EEG tools, with the official names, arguments, defaults, outputs and rounding.

Each tool takes the episode's recording and the agent's (type-checked) arguments and
returns a JSON-serialisable dict that starts with ``_meta``; a request it cannot serve
raises :class:`~tools_app.errors.ToolError`. The docstrings are what the agent reads: the
text before ``Parameters`` is the tool description, each parameter's text its description.
Upstream quirks that define the benchmark are kept and listed in ``docs/compatibility.md``.
"""
import math
from typing import TYPE_CHECKING, Annotated

import numpy as np

from tools_app import budget
from tools_app.errors import ErrorCode, ToolError
from tools_app.registry import Choices, tool
from tools_app.signal import noise, spatial, spectral, transients, windowed
from tools_app.signal.ranges import source_for
from tools_app.signal.rounding import round_value

if TYPE_CHECKING:
    from tools_app.recording import Recording

#: Longest window (samples) the multitaper option accepts: its tapers span the whole window.
MULTITAPER_MAX_SAMPLES = 1 << 20

_PLACEHOLDER = budget.PLACEHOLDER_NUMBER


# ---------------------------------------------------------------------- shared argument handling

def _channel_index(recording):
    return {name: index for index, name in enumerate(recording.ch_names)}


def _eeg_channels(recording):
    """The default channel set: every channel the file types as EEG (all channels of an EDF)."""
    return [recording.ch_names[index] for index in recording.eeg_picks]


def _channels_or_default(recording, channels):
    """Return the requested existing channels and their indices (defaults when none asked).

    An empty list means the default, as upstream; names that do not exist are dropped and
    repeated names are kept.

    Raises
    ------
    ToolError
        ``unknown_channel`` when none of the requested channels exists.
    """
    index = _channel_index(recording)
    requested = channels if channels else _eeg_channels(recording)
    valid = [name for name in requested if name in index]
    if not valid:
        names = recording.ch_names
        preview = ", ".join(names[:20]) + (" …" if len(names) > 20 else "")
        raise ToolError(
            ErrorCode.UNKNOWN_CHANNEL,
            f"None of the requested channels exist in this recording: {channels}. Available channels: {preview}",
        )
    return valid, [index[name] for name in valid]


def _sample(seconds, sfreq):
    """Return ``int(seconds * sfreq)``, refusing times too large to be a sample index."""
    product = seconds * sfreq
    if not math.isfinite(product):
        raise ToolError(ErrorCode.OUT_OF_RANGE, f"Time {seconds} s is far outside the recording.")
    return int(product)


def _check_order(tmin, tmax):
    if tmin is not None and tmax is not None and tmax <= tmin:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, f"tmax ({tmax}) must be greater than tmin ({tmin}).")
    if tmin is not None and tmin < 0:
        raise ToolError(
            ErrorCode.OUT_OF_RANGE,
            f"Requested time window [{tmin}, {tmax}] s starts before the recording; tmin must be >= 0.",
        )


def _window(recording, tmin, tmax, *, min_samples):
    """Return the sample range of ``[tmin, tmax]`` for the spectral and temporal tools.

    ``start = int(tmin * sfreq)`` and ``stop = int(tmax * sfreq)``, clipped to the recording;
    an end past the recording is accepted, as upstream.

    Raises
    ------
    ToolError
        ``invalid_argument`` for an inverted window or one inside the recording with fewer
        than ``min_samples`` samples; ``out_of_range`` for one that starts before or after
        the recording.
    """
    _check_order(tmin, tmax)
    sfreq, n_times = recording.sfreq, recording.n_times
    duration = n_times / sfreq
    start = _sample(tmin or 0.0, sfreq)
    stop = n_times if tmax is None else min(_sample(tmax, sfreq), n_times)
    count = stop - start
    if start >= n_times or count < min_samples:
        outside = start >= n_times or stop <= 0
        raise ToolError(
            ErrorCode.OUT_OF_RANGE if outside else ErrorCode.INVALID_ARGUMENT,
            f"Requested time window [{tmin}, {tmax}] s yields too few samples ({max(count, 0)}) within the "
            f"{duration:.2f}s recording. Choose a window inside [0, {duration:.2f}] s.",
        )
    return start, stop


def _clipped_window(recording, tmin, tmax):
    """Return the sample range of ``[tmin, tmax]`` for the correlation and windowed tools.

    These check only the order of tmin/tmax and that 2 samples remain, as upstream.
    """
    _check_order(tmin, tmax)
    sfreq, n_times = recording.sfreq, recording.n_times
    start = min(0 if tmin is None else _sample(tmin, sfreq), n_times)
    stop = n_times if tmax is None else min(max(_sample(tmax, sfreq), 0), n_times)
    count = max(stop - start, 0)
    if count < 2:
        raise ToolError(
            ErrorCode.OUT_OF_RANGE if start >= n_times or stop <= 0 else ErrorCode.INVALID_ARGUMENT,
            f"Too few samples ({count}) in the requested time window. Ensure tmin/tmax fall within the "
            f"recording duration.",
        )
    return start, stop


def _spectral_min_samples(recording):
    return max(8, int(recording.sfreq // 2))


def _check_rows(header, names, fields):
    """Apply the output budget to a result with one row of ``fields`` per channel name."""
    rows = [{"channel": name, **fields} for name in names]
    budget.check_channel_rows(header, rows)


def _placeholders(keys):
    return dict.fromkeys(keys, _PLACEHOLDER)


def _python(value):
    """Return ``value`` with numpy scalars turned into Python ones (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------- Data Overview

@tool(category="Data Overview")
def get_recording_info(recording: "Recording", record_id: str) -> dict:
    """Describe the recording: sampling rate, duration, channels, filters and reference flag.

    Returns the sampling rate (Hz), duration (s), number of channels and of channels typed
    as EEG, all channel names, the high- and low-pass settings stored in the file (Hz), the
    file's custom-reference flag (`reference`: 0/false when no re-referencing was applied,
    not a description of the montage) and the subject's age and sex when the file stores
    them (usually null). Takes no channel or time arguments; the output is small.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    """
    subject = recording.subject_info or {}
    body = {
        "record_id": record_id,
        "sampling_rate": round_value(recording.sfreq, 1),
        "duration_sec": round_value(recording.duration_sec, 1),
        "n_channels": len(recording.ch_names),
        "n_eeg_channels": len(recording.eeg_picks),
        "channel_names": list(recording.ch_names),
        "reference": _python(recording.custom_ref_applied),
        "highpass_hz": round_value(recording.highpass or 0, 2),
        "lowpass_hz": round_value(recording.lowpass or 0, 2),
        "age": _python(subject.get("age")),
        "sex": _python(subject.get("sex")),
    }
    return budget.attach_meta(body, n_rows=1)


@tool(category="Data Overview")
def get_channel_list(recording: "Recording", record_id: str) -> dict:
    """List every channel with its type, hemisphere, brain region and bad-channel flag.

    Hemisphere is L, R, M (midline) or unknown and region one of frontal, temporal,
    central, parietal, occipital or unknown, from the 10-20 electrode in the name (an
    "EEG " prefix is ignored and a bipolar name such as Fpz-Cz is placed by its first
    electrode; the lookup is case-sensitive, so upper-case names such as FP1 are unknown).
    The type is the one the file declares: EDF files type every channel as EEG, including
    EOG, EMG and other polygraphic channels. Works for any recording, including
    single-channel ones; one row per channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    """
    bads = set(recording.bads)
    channels = [
        {
            "name": name,
            "type": channel_type,
            "hemisphere": spatial.hemisphere_of(name),
            "region": spatial.region_of(name),
            "marked_bad_in_file": name in bads,
        }
        for name, channel_type in zip(recording.ch_names, recording.ch_types)
    ]
    body = {"record_id": record_id, "n_channels": len(channels), "channels": channels,
            "file_header_bads": sorted(bads)}
    return budget.attach_meta(body, n_rows=len(channels))


# ---------------------------------------------------------------------- Noise Metrics

_NOISE_FIELDS = ("rms_uv", "flat_line_ratio", "saturation_ratio", "line_noise_ratio", "hf_noise_ratio")


@tool(category="Noise Metrics")
def compute_noise_metrics(
    recording: "Recording", record_id: str, channels: list[str] | None = None, line_freq: float = 50
) -> dict:
    """Measure signal quality per channel over the whole recording.

    For each channel: RMS amplitude (µV); flat-line ratio (share of sample-to-sample steps
    below 0.1 µV); saturation ratio (share of samples at the channel's minimum or maximum,
    1 for a constant channel); line-noise ratio (mean power within ±2 Hz of the mains
    frequency over the mean power from 1 Hz to Nyquist − 1 Hz); and high-frequency ratio
    (power above 40 Hz over the power from 1 Hz to Nyquist − 1 Hz). Always covers the
    whole recording (no time arguments). Works for any number of channels; requested
    channels that do not exist are skipped, and an error is returned when none exists.
    One row per channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to assess. If omitted, every channel typed as EEG is used.
    line_freq : float
        Mains frequency in Hz (50 or 60).
    """
    names, picks = _channels_or_default(recording, channels)
    _check_rows({"record_id": record_id, "line_freq_hz": line_freq, "n_channels": 0, "channels": []},
                names, _placeholders(_NOISE_FIELDS))
    source = source_for(recording)
    amplitude = source.noise_features(picks)
    freqs, psd = source.welch(picks, 0, recording.n_times)
    sfreq = recording.sfreq
    rows = [
        {
            "channel": name,
            "rms_uv": round_value(amplitude["rms_uv"][row], 1),
            "flat_line_ratio": round_value(amplitude["flat_line_ratio"][row], 4),
            "saturation_ratio": round_value(amplitude["saturation_ratio"][row], 4),
            "line_noise_ratio": round_value(noise.line_noise_ratio(freqs, psd[row], sfreq, line_freq), 2),
            "hf_noise_ratio": round_value(noise.high_frequency_ratio(freqs, psd[row], sfreq), 3),
        }
        for row, name in enumerate(names)
    ]
    body = {"record_id": record_id, "line_freq_hz": line_freq, "n_channels": len(rows), "channels": rows}
    return budget.attach_meta(body, n_rows=len(rows))


# ---------------------------------------------------------------------- Spectral Analysis

@tool(category="Spectral Analysis")
def compute_psd(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
    method: Annotated[str, Choices("welch", "multitaper")] = "welch",
    fmin: float = 0.5,
    fmax: float = 45,
) -> dict:
    """Summarise the power spectrum of each channel over a time window.

    Per channel: the alpha peak (frequency in Hz and power in µV²/Hz of the largest bin in
    8–13 Hz), the dominant frequency (largest bin in [fmin, fmax]), the total power in
    [fmin, fmax] (µV²) and the power of each band inside [fmin, fmax] (delta 1–4, theta
    4–8, alpha 8–13, beta 13–30, gamma 30–45 Hz; band edges are inclusive, so a bin on an
    edge counts in both bands). Also the alpha peak of the channel-averaged spectrum.
    Spectra are Welch estimates with 2-s Hann segments and 50% overlap (0.5 Hz bins for windows of 2 s or more).

    Output size: about 7 numbers per channel; the spectrum itself is not returned, so
    call again per window when you need time resolution.

    Applicability: any number of channels; the window needs at least half a second of
    data (and at least 8 samples). Unknown channels or an empty or too-short window give an
    error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to analyse. If omitted, every channel typed as EEG is used.
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    method : str
        Spectral estimator: "welch", or "multitaper" (the average of Welch spectra of 7
        DPSS-tapered copies of the window, for windows up to 2^20 samples).
    fmin : float
        Lowest frequency reported, Hz.
    fmax : float
        Highest frequency reported, Hz.
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=_spectral_min_samples(recording))
    band_fields = _placeholders(spectral.DEFAULT_BANDS)
    _check_rows(
        {"record_id": record_id, "method": method, "time_window": [tmin, tmax], "freq_range_hz": [fmin, fmax],
         "n_channels": 0, "global_alpha_peak_hz": _PLACEHOLDER, "channels": []},
        names,
        {**_placeholders(("alpha_peak_freq_hz", "alpha_peak_power_uv2hz", "dominant_freq_hz", "total_power_uv2")),
         "band_powers_uv2": band_fields},
    )
    source = source_for(recording)
    if method == "multitaper":
        if stop - start > MULTITAPER_MAX_SAMPLES:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"method 'multitaper' accepts windows of at most {MULTITAPER_MAX_SAMPLES} samples "
                f"({MULTITAPER_MAX_SAMPLES / recording.sfreq:.1f} s here); the window has {stop - start}. "
                f"Use a shorter tmin/tmax window or method 'welch'.",
            )
        freqs, psd = source.multitaper(picks, start, stop)
    else:
        freqs, psd = source.welch(picks, start, stop)
    inside = (freqs >= fmin) & (freqs <= fmax)
    if not inside.any():
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"No spectral bins in [fmin, fmax] = [{fmin}, {fmax}] Hz: the spectrum has bins every "
            f"{freqs[1] - freqs[0]:.4g} Hz from 0 to {freqs[-1]:.4g} Hz. Widen or move the range.",
        )
    freqs, psd = freqs[inside], np.ascontiguousarray(psd[:, inside])
    band_power = spectral.band_powers(freqs, psd)
    total_power = spectral.integrate(psd, freqs)
    rows = []
    for row, name in enumerate(names):
        peak_freq, peak_power = spectral.peak_frequency(freqs, psd[row], spectral.ALPHA_RANGE)
        has_alpha_peak = peak_power is not None and peak_power > 0
        rows.append({
            "channel": name,
            "alpha_peak_freq_hz": round_value(peak_freq) if has_alpha_peak else None,
            "alpha_peak_power_uv2hz": round_value(peak_power * 1e12) if has_alpha_peak else None,
            "dominant_freq_hz": round_value(freqs[np.argmax(psd[row])]),
            "total_power_uv2": round_value(float(total_power[row]) * 1e12),
            "band_powers_uv2": {band: round_value(float(power[row]) * 1e12) for band, power in band_power.items()},
        })
    global_peak, _ = spectral.peak_frequency(freqs, np.mean(psd, axis=0), spectral.ALPHA_RANGE)
    body = {
        "record_id": record_id,
        "method": method,
        "time_window": [tmin, tmax],
        "freq_range_hz": [fmin, fmax],
        "n_channels": len(rows),
        "global_alpha_peak_hz": None if global_peak is None else round_value(global_peak),
        "channels": rows,
    }
    return budget.attach_meta(body, n_rows=len(rows))


_RATIOS = ("theta_alpha_ratio", "delta_alpha_ratio", "slow_fast_ratio")


@tool(category="Spectral Analysis")
def compute_band_power(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Give each channel's absolute and relative band power and the usual band ratios.

    Bands: delta 1–4, theta 4–8, alpha 8–13, beta 13–30, gamma 30–45 Hz, edges inclusive
    (a bin on an edge counts in both bands). Absolute power is in µV² (trapezoid
    integral of a Welch spectrum with 2-s Hann segments); relative power is each band's
    share of the sum of these five bands; the ratios are theta/alpha, delta/alpha and
    slow/fast = (delta + theta) / (alpha + beta).

    Output size: 13 numbers per channel, aggregated over the whole [tmin, tmax] window; call
    once per epoch, or use compute_windowed_features, for time resolution.

    Applicability: any number of channels; the window needs at least half a second of data.
    Unknown channels or an empty or too-short window give an error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to analyse. If omitted, every channel typed as EEG is used.
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=_spectral_min_samples(recording))
    bands = _placeholders(spectral.DEFAULT_BANDS)
    _check_rows({"record_id": record_id, "time_window": [tmin, tmax], "n_channels": 0, "channels": []}, names,
                {"absolute_power_uv2": bands, "relative_power": bands, "ratios": _placeholders(_RATIOS)})
    freqs, psd = source_for(recording).welch(picks, start, stop)
    present = spectral.band_powers(freqs, psd)
    rows = []
    for row, name in enumerate(names):
        absolute = {band: float(present[band][row]) * 1e12 if band in present else 0.0
                    for band in spectral.DEFAULT_BANDS}
        total = max(sum(absolute.values()), 1e-20)
        alpha = max(absolute["alpha"], 1e-20)
        rows.append({
            "channel": name,
            "absolute_power_uv2": {band: round_value(power) for band, power in absolute.items()},
            "relative_power": {band: round_value(power / total, 4) for band, power in absolute.items()},
            "ratios": {
                "theta_alpha_ratio": round_value(absolute["theta"] / alpha),
                "delta_alpha_ratio": round_value(absolute["delta"] / alpha),
                "slow_fast_ratio": round_value(
                    (absolute["delta"] + absolute["theta"]) / max(alpha + absolute["beta"], 1e-20)),
            },
        })
    body = {"record_id": record_id, "time_window": [tmin, tmax], "n_channels": len(rows), "channels": rows}
    return budget.attach_meta(body, n_rows=len(rows))


# ---------------------------------------------------------------------- Transient Detection

_SUMMARY_FIELDS = (
    "n_candidates", "amplitude_mean_uv", "amplitude_max_uv", "width_mean_ms", "sharpness_mean_uv_s",
    "background_rms_uv", "background_peak_to_peak_uv", "amplitude_to_rms_ratio_mean", "amplitude_to_rms_ratio_max",
)
_CANDIDATE_FIELDS = ("time_sec", "width_ms", "amplitude_uv", "sharpness_uv_s")
_TOP_CANDIDATES = 5


@tool(category="Transient Detection", version="0.2.0", aliases={"max_events_per_channel": "max_candidates_per_channel"})
def detect_transients(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
    min_amplitude_uv: float = 70,
    max_candidates_per_channel: int = 20,
) -> dict:
    """Find candidate transient peaks and measure their shape.

    Each channel is band-passed (1–70 Hz, zero-phase 4th-order Butterworth; the upper edge
    drops to Nyquist − 1 Hz at low sampling rates) and its positive and negative peaks
    above min_amplitude_uv, at least 70 ms apart, become candidates: time (s), width at
    half amplitude (ms), amplitude (µV), steepest slope within ±70 ms (µV/s) and polarity.
    Each channel keeps its largest candidates; per channel you get their count, mean and
    maximum amplitude, mean width and slope, and the background RMS and peak-to-peak of the
    filtered signal with the candidates' amplitude-to-RMS ratios; the five largest
    candidates overall are listed. These are raw peaks, not classified events: whether
    they are spikes, sharp waves or artefacts is for you to judge.

    Output size: one summary row per channel with candidates plus 5 candidates; lowering
    min_amplitude_uv finds more candidates before the per-channel cap applies
    (`_meta.truncated` says when the cap dropped some).

    Applicability: any number of channels; the window needs at least 64 samples. Unknown
    channels or an empty or too-short window give an error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to scan. If omitted, every channel typed as EEG is used.
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    min_amplitude_uv : float
        Smallest peak amplitude, µV, of the band-passed signal; 0 or less keeps every peak.
    max_candidates_per_channel : int
        How many of the largest candidates each channel keeps.
    """
    if max_candidates_per_channel < 0:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "max_candidates_per_channel must be 0 or more.")
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=transients.MIN_SAMPLES)
    candidate = {"channel": "", **_placeholders(_CANDIDATE_FIELDS), "polarity": "negative"}
    _check_rows(_transient_body(record_id, tmin, tmax, min_amplitude_uv, max_candidates_per_channel, 0, 0, [],
                                [candidate] * _TOP_CANDIDATES),
                names, _placeholders(_SUMMARY_FIELDS))

    sfreq = recording.sfreq
    source = source_for(recording)
    offset = tmin if tmin is not None else 0.0
    detected, kept, background = 0, [], {}
    if transients.filter_band(sfreq) is not None:
        for name, pick in zip(names, picks):
            filtered = transients.bandpass(source.read([pick], start, stop)[0], sfreq)
            found = transients.detect_channel(
                filtered, sfreq, channel=name, min_amplitude_uv=min_amplitude_uv,
                max_candidates=max_candidates_per_channel, time_offset=offset,
            )
            background[name] = found
            detected += found["n_detected"]
            kept.extend(found["candidates"])

    summary = {}
    for candidate in kept:
        summary.setdefault(candidate["channel"], []).append(candidate)
    channel_summary = [_transient_summary(name, found, background[name]) for name, found in summary.items()]
    top = sorted(kept, key=lambda candidate: candidate["amplitude_uv"], reverse=True)[:_TOP_CANDIDATES]
    body = _transient_body(record_id, tmin, tmax, min_amplitude_uv, max_candidates_per_channel, detected,
                           len(kept), channel_summary, top)
    truncated = detected > len(kept)
    return budget.attach_meta(
        body,
        n_rows=len(kept),
        truncated=truncated,
        truncated_reason=(f"per-channel top-{max_candidates_per_channel} cap ({detected} detected -> {len(kept)} kept)"
                          if truncated else None),
    )


def _transient_body(record_id, tmin, tmax, min_amplitude_uv, cap, detected, returned, channel_summary, top):
    return {
        "record_id": record_id,
        "time_window": [tmin or 0, tmax],
        "min_amplitude_uv": min_amplitude_uv,
        "peak_distance_ms": round_value(transients.PEAK_DISTANCE_SEC * 1000, 1),
        "filter_band_hz": list(transients.FILTER_BAND_HZ),
        "max_candidates_per_channel": cap,
        "candidate_sort_key": "amplitude_descending",
        "n_candidates_detected": detected,
        "n_candidates_returned": returned,
        "channel_summary": channel_summary,
        "top_candidates": top,
    }


def _transient_summary(name, candidates, background):
    """Return a channel's summary row; the means are of the rounded candidate values."""
    amplitudes = [candidate["amplitude_uv"] for candidate in candidates]
    mean_amplitude, max_amplitude = float(np.mean(amplitudes)), float(np.max(amplitudes))
    rms = background["background_rms_uv"]
    return {
        "channel": name,
        "n_candidates": len(candidates),
        "amplitude_mean_uv": round_value(mean_amplitude, 1),
        "amplitude_max_uv": round_value(max_amplitude, 1),
        "width_mean_ms": round_value(float(np.mean([candidate["width_ms"] for candidate in candidates])), 1),
        "sharpness_mean_uv_s": round_value(float(np.mean([candidate["sharpness_uv_s"] for candidate in candidates])), 1),
        "background_rms_uv": rms,
        "background_peak_to_peak_uv": background["background_peak_to_peak_uv"],
        "amplitude_to_rms_ratio_mean": round_value(mean_amplitude / rms, 2) if rms > 0 else None,
        "amplitude_to_rms_ratio_max": round_value(max_amplitude / rms, 2) if rms > 0 else None,
    }


# ---------------------------------------------------------------------- Temporal & Spatial Features

_TEMPORAL_DECIMALS = {
    "mean_uv": 2, "std_uv": 2, "rms_uv": 2, "peak_to_peak_uv": 1, "skewness": 3, "kurtosis": 3,
    "hjorth_activity": 4, "hjorth_mobility": 4, "hjorth_complexity": 4, "line_length_uv_s": 1,
    "zero_crossing_rate_hz": 2,
}


@tool(category="Temporal & Spatial Features")
def compute_temporal_features(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Compute time-domain statistics of each channel over a time window.

    Per channel: mean, standard deviation and RMS (µV), peak-to-peak amplitude (µV),
    skewness and excess kurtosis, the Hjorth parameters (activity in µV², mobility,
    complexity), line length (summed absolute sample-to-sample change per second, µV/s)
    and zero-crossing rate of the mean-removed signal (Hz). Aggregates over [tmin, tmax],
    the whole recording if omitted. Works for any number of channels; the window needs at
    least 3 samples. One row per channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to analyse. If omitted, every channel typed as EEG is used.
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=3)
    _check_rows({"record_id": record_id, "time_window": [tmin, tmax], "n_channels": 0, "channels": []}, names,
                _placeholders(_TEMPORAL_DECIMALS))
    features = source_for(recording).temporal_features(picks, start, stop)
    features["hjorth_activity"] = features["hjorth_activity"] * 1e12
    rows = [
        {"channel": name, **{field: round_value(features[field][row], decimals)
                             for field, decimals in _TEMPORAL_DECIMALS.items()}}
        for row, name in enumerate(names)
    ]
    body = {"record_id": record_id, "time_window": [tmin, tmax], "n_channels": len(rows), "channels": rows}
    return budget.attach_meta(body, n_rows=len(rows))


_ASYMMETRY_FEATURES = ("band_power", "amplitude", "all")


@tool(category="Temporal & Spatial Features")
def compute_asymmetry(
    recording: "Recording",
    record_id: str,
    feature: Annotated[str, Choices(*_ASYMMETRY_FEATURES)] = "all",
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Compare homologous left and right electrodes: asymmetry index (L − R) / (L + R).

    Pairs: Fp1-Fp2, F3-F4, C3-C4, P3-P4, O1-O2, F7-F8, T3-T4, T5-T6 (matched by exact
    name or with an "EEG " prefix). For each pair present: the amplitude asymmetry of the
    RMS (with both RMS values in µV), the asymmetry of each band's power (delta, theta,
    alpha, beta, gamma, edges inclusive) and of the total spectral power. Positive values
    mean left > right.

    Applicability: needs monopolar 10-20 channels; when no pair is present (single-channel
    data, bipolar montages such as CHB-MIT's, Sleep-EDF's Fpz-Cz) it answers
    `applicable: false` with the reason and the available channels rather than numbers.
    The window needs at least half a second of data. At most 8 rows.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    feature : str
        What to compare: "amplitude", "band_power" or "all".
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    """
    if feature not in _ASYMMETRY_FEATURES:
        raise ToolError(ErrorCode.UNKNOWN_FEATURE,
                        f"Unknown feature {feature!r}. Allowed: {sorted(_ASYMMETRY_FEATURES)}")
    start, stop = _window(recording, tmin, tmax, min_samples=_spectral_min_samples(recording))
    pairs = spatial.homologous_pairs(recording.ch_names)
    if not pairs:
        body = {
            "record_id": record_id,
            "applicable": False,
            "n_pairs_analyzed": 0,
            "pairs": [],
            "reason": (
                "This recording has no homologous left/right pair of 10-20 electrodes (Fp1/Fp2, F3/F4, ...), "
                "so hemispheric asymmetry does not apply: the tool needs monopolar 10-20 channels, and this "
                "montage is single-channel, bipolar or not 10-20."
            ),
            "available_channels": list(recording.ch_names),
        }
        return budget.attach_meta(body, n_rows=0)

    source = source_for(recording)
    index = _channel_index(recording)
    rows = []
    for left, right, left_channel, right_channel in pairs:
        picks = [index[left_channel], index[right_channel]]
        row = {"left": left, "right": right}
        if feature in ("amplitude", "all"):
            left_rms, right_rms = (float(value) for value in source.rms_uv(picks, start, stop))
            row["amplitude_asymmetry"] = round_value(spatial.asymmetry_index(left_rms, right_rms, floor=1e-10), 4)
            row["left_rms_uv"] = round_value(left_rms, 2)
            row["right_rms_uv"] = round_value(right_rms, 2)
        if feature in ("band_power", "all"):
            freqs, psd = source.welch(picks, start, stop)
            row["band_power_asymmetry"] = {
                band: round_value(spatial.asymmetry_index(float(power[0]), float(power[1]), floor=1e-30), 4)
                for band, power in spectral.band_powers(freqs, psd).items()
            }
            total_left, total_right = (float(value) for value in spectral.integrate(psd, freqs))
            row["total_power_asymmetry"] = round_value(spatial.asymmetry_index(total_left, total_right, floor=1e-30), 4)
        rows.append(row)
    body = {"record_id": record_id, "applicable": True, "time_window": [tmin, tmax],
            "n_pairs_analyzed": len(rows), "pairs": rows}
    return budget.attach_meta(body, n_rows=len(rows))


@tool(category="Temporal & Spatial Features")
def compute_channel_correlation(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Correlate channels pairwise (Pearson r) over a time window.

    Returns r for every pair of the requested channels (the upper triangle of the
    correlation matrix) and, per channel, its mean |r| with all the others. Channels that
    are constant in the window get r = 0 and are listed under `constant_channels`.
    Useful to tell synchronous frontal eye artefacts (high Fp1-Fp2 r) from focal muscle
    activity or a loose electrode (low r with neighbours).

    Output size: n × (n − 1) / 2 rows for n channels (about 3k tokens for 19 channels); it
    grows with the square of the channel count, so pass a focused subset. A call whose
    output would exceed 8000 tokens is refused with the largest channel count that fits.

    Applicability: needs at least 2 existing channels and 2 samples in the window;
    single-channel data, unknown channels or an empty or inverted window give an error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to correlate. If omitted, every channel typed as EEG is used; a focused
        subset (e.g. the frontal channels) keeps the output small.
    tmin : float, optional
        Window start in seconds. If omitted, the recording's start.
    tmax : float, optional
        Window end in seconds. If omitted, the recording's end.
    """
    index = _channel_index(recording)
    requested = _eeg_channels(recording) if channels is None else channels
    names = [name for name in requested if name in index]
    if len(names) < 2:
        raise ToolError(
            ErrorCode.UNKNOWN_CHANNEL if not names and requested else ErrorCode.INVALID_ARGUMENT,
            f"Need at least 2 valid channels for correlation. Found: {names}",
        )
    start, stop = _clipped_window(recording, tmin, tmax)
    budget.check_correlation(names)
    correlation, constant = source_for(recording).correlation([index[name] for name in names], start, stop)
    pairs = [
        {"channel_a": names[first], "channel_b": names[second], "correlation": round_value(correlation[first, second], 4)}
        for first in range(len(names))
        for second in range(first + 1, len(names))
    ]
    mean_absolute = spatial.mean_absolute_correlation(correlation)
    body = {
        "record_id": record_id,
        "time_window": [tmin, tmax],
        "n_channels": len(names),
        "channel_names": names,
        "n_pairs": len(pairs),
        "pairs": pairs,
        "channel_summary": [{"channel": name, "mean_abs_correlation": round_value(mean_absolute[row], 4)}
                            for row, name in enumerate(names)],
    }
    if constant.any():
        body["constant_channels"] = [name for name, flat in zip(names, constant) if flat]
    return budget.attach_meta(body, n_rows=len(pairs))


# ---------------------------------------------------------------------- Windowed / Time-Series Analysis

@tool(category="Windowed / Time-Series Analysis")
def compute_windowed_features(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    features: list[str] | None = None,
    window_sec: float = 5.0,
    step_sec: float | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Compute features in consecutive windows: a time series per channel.

    Features: time-domain rms_uv, std_uv, kurtosis, peak_to_peak_uv, line_length_uv_s,
    hjorth_mobility, zero_crossing_rate_hz; absolute band power delta_power (1–4 Hz),
    theta_power (4–8), alpha_power (8–13), sigma_power (11–16), beta_power (13–30),
    gamma_power (30–45), in µV²; relative power delta_relative ... gamma_relative, each a
    share of the sum of these six bands (so not the relative power of compute_band_power);
    and theta_alpha_ratio, slow_fast_ratio. Each window is one row with the requested
    features and its t_start and t_end in seconds of the recording. Unknown feature names
    are ignored.

    Output budget: a response may not exceed 8000 tokens. Its size is n_channels ×
    n_windows rows (n_windows ≈ (tmax − tmin) / step_sec, the whole recording if tmin/tmax
    are omitted), about 6–7 tokens per feature per row. A call that would exceed the budget
    is refused before anything is computed, with the channel count, window count and time
    span that would fit; nothing is silently truncated. Scope each call: pick 1–3 channels,
    analyse a chunk with tmin/tmax, or use a coarser window_sec/step_sec.
    `_meta.approx_response_tokens` reports the size of each answer.

    Applicability: any number of channels. Unknown channels, an empty or inverted window,
    or a window or step too small for the sampling rate give an error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record to analyse.
    channels : list of str, optional
        Channels to analyse. If omitted, every channel typed as EEG is used, which
        multiplies the output; prefer 1–3 channels.
    features : list of str, optional
        Feature names. If omitted: rms_uv, kurtosis, delta_relative, theta_relative,
        alpha_relative, beta_relative, gamma_relative.
    window_sec : float
        Window length in seconds; a longer window gives fewer rows.
    step_sec : float, optional
        Hop between window starts in seconds. If omitted, equal to window_sec (no overlap).
    tmin : float, optional
        Start of the analysed range in seconds. Omitting tmin/tmax analyses the whole
        recording, which is large for long recordings.
    tmax : float, optional
        End of the analysed range in seconds.
    """
    requested = sorted(set(windowed.DEFAULT_FEATURES if features is None else features) & set(windowed.FEATURES))
    if not requested:
        raise ToolError(ErrorCode.UNKNOWN_FEATURE,
                        f"No valid features requested. Allowed: {sorted(windowed.FEATURES)}")
    if step_sec is None:
        step_sec = window_sec
    index = _channel_index(recording)
    requested_channels = _eeg_channels(recording) if channels is None else channels
    names = [name for name in requested_channels if name in index]
    if not names:
        raise ToolError(ErrorCode.UNKNOWN_CHANNEL, f"None of the requested channels exist: {channels}")
    start, stop = _clipped_window(recording, tmin, tmax)
    sfreq = recording.sfreq
    n_total = stop - start
    span_sec = n_total / sfreq
    first_time = tmin if tmin is not None else 0.0
    if not math.isfinite(window_sec * sfreq) or not math.isfinite(step_sec * sfreq):
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "window_sec and step_sec must be durations in seconds.")
    window_samples, step_samples = int(window_sec * sfreq), int(step_sec * sfreq)
    if window_samples < windowed.MIN_WINDOW_SAMPLES or step_samples < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "Window or step too small for the sampling rate.")
    n_windows = len(windowed.window_starts(n_total, window_samples, step_samples)[0])
    budget.check_windowed(n_channels=len(names), n_windows=n_windows, features=requested,
                          step_sec=step_sec, span_sec=span_sec)

    starts, used_samples, values = source_for(recording).windowed_features(
        [index[name] for name in names], start, stop, window_samples, step_samples, requested)
    ordered = windowed.ordered(requested)
    times = [(round(first_time + int(begin) / sfreq, 2),
              round(first_time + min(int(begin) + used_samples, n_total) / sfreq, 2)) for begin in starts]
    channel_rows = []
    for row, name in enumerate(names):
        windows = [
            {**{feature: round_value(values[feature][row, column], windowed.DECIMALS[feature]) for feature in ordered},
             "t_start": t_start, "t_end": t_end}
            for column, (t_start, t_end) in enumerate(times)
        ]
        channel_rows.append({"channel": name, "n_windows": len(windows), "windows": windows})
    body = {
        "record_id": record_id,
        "window_sec": window_sec,
        "step_sec": step_sec,
        "time_range": [first_time, round(first_time + span_sec, 2)],
        "n_windows": len(starts),
        "features_computed": requested,
        "n_channels": len(names),
        "channels": channel_rows,
    }
    return budget.attach_meta(body, n_rows=len(names) * len(starts))
