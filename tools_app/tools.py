"""The ten EEG tools, with the official names, arguments, defaults, outputs and rounding.

Each tool takes the episode's recording and the agent's (type-checked) arguments and
returns a JSON-serialisable dict that starts with ``_meta``; a request it cannot serve
raises :class:`~tools_app.errors.ToolError`. The docstrings are what the agent reads: the
text before ``Parameters`` is the tool description, each parameter's text its description.
Upstream quirks that define the benchmark are kept and listed in ``docs/compatibility.md``.
"""
import math
from collections import Counter
from typing import TYPE_CHECKING, Annotated

import numpy as np

from tools_app import budget, workload
from tools_app.errors import ErrorCode, ToolError
from tools_app.registry import Choices, shown, tool
from tools_app.signal import costs, noise, spatial, spectral, transients, windowed
from tools_app.signal.ranges import source_for
from tools_app.signal.rounding import round_value
from tools_app.spans import DEFAULT_WINDOW_SEC

if TYPE_CHECKING:
    from tools_app.recording import Recording

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
            f"None of the requested channels exist in this recording: {_listed(channels)}. "
            f"Available channels: {preview}",
        )
    return valid, [index[name] for name in valid]


#: Most requested channel names an error message repeats.
_LISTED_NAMES = 20


def _listed(names):
    """Return ``names`` as Python prints a list (the official text), the first 20 when there are more.

    A longer list, or a very long name, is shortened so that the error stays small.
    """
    text = str(names)
    if len(names) <= _LISTED_NAMES and len(text) <= 40 * _LISTED_NAMES:
        return text
    leading = ", ".join(shown(name, 40) for name in names[:_LISTED_NAMES])
    return f"[{leading}, …] ({len(names)} names)"


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


def _check_work(recording, cost, picks, start, stop, hint="", min_channels=1):
    """Refuse a call whose work, ``cost(picks, start, stop)`` in ns, is too much for one call."""
    workload.check(cost(picks, start, stop), _span_refusal(recording, cost, picks, start, stop, hint=hint,
                                                           min_channels=min_channels))


def _span_refusal(recording, cost, picks, start, stop, **options):
    distinct = list(dict.fromkeys(picks))
    upsampled = source_for(recording).upsampled
    costly = [recording.ch_names[pick] for pick in distinct if pick in upsampled]
    return workload.span_refusal(cost, picks=picks, start=start, stop=stop, sfreq=recording.sfreq,
                                 costly=costly if len(costly) < len(distinct) else (), **options)


def _placeholders(keys):
    return dict.fromkeys(keys, _PLACEHOLDER)


def _python(value):
    """Return ``value`` with numpy scalars turned into Python ones (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------- Data Overview

@tool(category="Data Overview")
def get_recording_info(recording: "Recording", record_id: str) -> dict:
    """Give a recording's basic metadata: sampling rate, duration, channel count, reference
    scheme, montage, subject demographics and whether the data are available. Works for any
    recording and takes only ``record_id`` (no channel or time arguments); the output is a small
    dict of fixed size.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.

    Notes
    -----
    The fields are the official tool's: sampling rate (Hz), duration (s, the last sample's
    time), number of channels and of channels typed as EEG, all channel names, the high- and
    low-pass settings stored in the file (Hz), the file's custom-reference flag (``reference``:
    0 when no re-referencing was applied; MNE's named constant, so the model reads
    ``0 (FIFFV_MNE_CUSTOM_REF_OFF)``, see ``tools_app.views``), and the subject's age and sex
    when the file stores them (usually null). Neither a montage nor an availability status is
    returned, although the official description names them.
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
    """Give the recording's channels, each with its type (EEG, EOG, EMG, ...), hemisphere (L, R or
    M), brain region (frontal, temporal, central, parietal or occipital) and whether the file
    marks it bad. Works for any recording, single-channel ones included; takes only
    ``record_id``. The output is bounded: one row per channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.

    Notes
    -----
    Hemisphere and region come from the 10-20 electrode in the name ("unknown" when there is
    none): an "EEG " prefix is ignored, a bipolar name such as Fpz-Cz is placed by its first
    electrode, and the lookup is case-sensitive, so upper-case names such as CHB-MIT's FP1 are
    unknown. The type is the one the file declares: EDF files type every channel as EEG,
    EOG, EMG and other polygraphic channels included.
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
    """Measure noise per channel: RMS amplitude (µV), flat-line ratio, saturation ratio,
    line-noise ratio (power at the mains frequency against the broadband power) and
    high-frequency noise ratio (power above 40 Hz against the broadband power). Works for any
    number of channels, a single one included, and covers the whole recording (no time
    arguments). Asking for channels that do not exist gives a clear error. The output is
    bounded: one row per channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to assess. If omitted, all EEG channels.
    line_freq : float
        Mains frequency in Hz (50 or 60).

    Notes
    -----
    Flat-line ratio: the share of sample-to-sample steps below 0.1 µV. Saturation ratio: the
    share of samples at the channel's minimum or maximum (1 for a constant channel). Line-noise
    ratio: mean power within ±2 Hz of ``line_freq`` over the mean power from 1 Hz to
    Nyquist − 1 Hz. High-frequency ratio: power above 40 Hz over the power from 1 Hz to
    Nyquist − 1 Hz. Requested channels that do not exist are skipped; the error comes only
    when none exists (as upstream).
    """
    names, picks = _channels_or_default(recording, channels)
    budget.check_channel_rows({"record_id": record_id, "line_freq_hz": line_freq, "n_channels": 0, "channels": []},
                              names, _placeholders(_NOISE_FIELDS))
    source = source_for(recording)
    _check_work(recording, lambda picks, start, stop: source.noise_cost(picks), picks, 0, recording.n_times)
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
    """Summarise the power spectral density (PSD) of the chosen channels. Per channel it gives
    scalars: the alpha peak (frequency and power), the dominant frequency, the total power and
    a dict of the power in five bands (delta, theta, alpha, beta, gamma). Welch and multitaper
    estimates are available.

    ## Output size
    Bounded: about 7 scalar fields per channel; even a dense 64-channel montage stays under
    2 KB (< 0.5k tokens). The full PSD array is not returned: the band_powers_uv2 dict gives
    the energy per band, and another call per time window gives temporal resolution.

    ## Applicability
    Any number of channels, a single one included; the window needs about 0.5 s or more for a
    usable spectral resolution. Unknown channels or an empty or too-short window give a clear
    error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to summarise. If omitted, all EEG channels.
    tmin : float, optional
        Start time in seconds. If omitted, the start of the recording.
    tmax : float, optional
        End time in seconds. If omitted, the end of the recording.
    method : str
        How the PSD is estimated.
    fmin : float
        Lowest frequency, Hz.
    fmax : float
        Highest frequency, Hz.

    Notes
    -----
    Alpha peak: frequency (Hz) and power (µV²/Hz) of the largest bin in 8–13 Hz; dominant
    frequency: the largest bin in [fmin, fmax]; total power (µV²) and band powers inside
    [fmin, fmax], bands delta 1–4, theta 4–8, alpha 8–13, beta 13–30, gamma 30–45 Hz with
    inclusive edges (a bin on an edge counts in both bands); also the alpha peak of the
    channel-averaged spectrum. Welch: 2-s Hann segments, 50 % overlap (0.5 Hz bins for windows
    of 2 s or more). Multitaper (the official one): the average of Welch spectra of 7
    DPSS-tapered copies of the window (whose tapers cost enough that the work limit of
    ``tools_app.workload`` refuses long windows); any other method name runs Welch. The window
    needs max(8, sfreq // 2) samples.
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=_spectral_min_samples(recording))
    band_fields = _placeholders(spectral.DEFAULT_BANDS)
    budget.check_channel_rows(
        {"record_id": record_id, "method": method, "time_window": [tmin, tmax], "freq_range_hz": [fmin, fmax],
         "n_channels": 0, "global_alpha_peak_hz": _PLACEHOLDER, "channels": []},
        names,
        {**_placeholders(("alpha_peak_freq_hz", "alpha_peak_power_uv2hz", "dominant_freq_hz", "total_power_uv2")),
         "band_powers_uv2": band_fields},
    )
    source = source_for(recording)
    if method == "multitaper":
        _check_work(recording, source.multitaper_cost, picks, start, stop, hint="use method 'welch'")
        freqs, psd = source.multitaper(picks, start, stop)
    else:
        _check_welch(recording, picks, start, stop)
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


def _check_welch(recording, picks, start, stop):
    """Refuse a Welch PSD too long to compute; suggest the nearest start the kept statistics serve."""
    source = source_for(recording)
    aligned = source.kept_welch_start(start, stop)
    hint = "" if aligned is None else (
        f"start the window at tmin={aligned / recording.sfreq:g} s instead, which is answered from "
        f"precomputed statistics")
    _check_work(recording, source.welch_cost, picks, start, stop, hint=hint)


_RATIOS = ("theta_alpha_ratio", "delta_alpha_ratio", "slow_fast_ratio")


@tool(category="Spectral Analysis")
def compute_band_power(
    recording: "Recording",
    record_id: str,
    channels: list[str] | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Give each channel's absolute power (µV²), relative power and the standard ratios for the
    delta, theta, alpha, beta and gamma bands. The ratios are theta/alpha, delta/alpha and
    slow/fast ((delta + theta) / (alpha + beta)).

    ## Output size
    Bounded: one row per channel, with 5 absolute, 5 relative and 3 ratio scalars; even
    64-channel montages stay under 3 KB (< 1k tokens). Aggregates over the whole [tmin, tmax]
    window: call once per epoch for temporal resolution (or use compute_windowed_features).

    ## Applicability
    Any number of channels, a single one included; the window needs about 0.5 s or more.
    Unknown channels or an empty or too-short window give a clear error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to analyse. If omitted, all EEG channels.
    tmin : float, optional
        Start time in seconds.
    tmax : float, optional
        End time in seconds.

    Notes
    -----
    Bands delta 1–4, theta 4–8, alpha 8–13, beta 13–30, gamma 30–45 Hz with inclusive edges (a
    bin on an edge counts in both bands). Absolute power: trapezoid integral of a Welch
    spectrum with 2-s Hann segments; relative power: each band's share of the sum of these
    five bands (compute_windowed_features uses six, so its relative powers differ).
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=_spectral_min_samples(recording))
    bands = _placeholders(spectral.DEFAULT_BANDS)
    budget.check_channel_rows({"record_id": record_id, "time_window": [tmin, tmax], "n_channels": 0, "channels": []},
                              names, {"absolute_power_uv2": bands, "relative_power": bands,
                                      "ratios": _placeholders(_RATIOS)})
    _check_welch(recording, picks, start, stop)
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
    """Detect candidate transient amplitude peaks and measure their morphology: peak time, width
    at half amplitude (ms), peak amplitude (µV), sharpness (µV/s) and polarity. Candidates come
    ranked by amplitude, with background statistics per channel (RMS, peak-to-peak). It is a
    raw signal-level peak detector: interpreting the candidates' morphology is up to the
    analyst.

    ## Output size
    Bounded by max_candidates_per_channel × n_channels (20 × n_channels by default): a summary
    per channel (about 10 fields) and the 5 largest candidates overall. Even 64 channels at the
    default cap stay under about 30 KB (~8k tokens). A lower min_amplitude_uv finds more
    candidates before the cap applies.

    ## Applicability
    Any number of channels, a single one included; the window needs about 64 samples or more
    (zero-phase band-pass). Unknown channels or an empty or too-short window give a clear
    error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to scan. If omitted, all EEG channels.
    tmin : float, optional
        Start time in seconds.
    tmax : float, optional
        End time in seconds.
    min_amplitude_uv : float
        Smallest peak amplitude in µV; only candidates above it are returned.
    max_candidates_per_channel : int
        Most candidate peaks returned per channel, largest amplitude first.

    Notes
    -----
    Each channel is band-passed (1–70 Hz, zero-phase 4th-order Butterworth; the upper edge drops
    to Nyquist − 1 Hz at low sampling rates) and its positive and negative peaks above
    min_amplitude_uv, at least 70 ms apart, become candidates: time (s), width at half amplitude
    (ms), amplitude (µV), steepest slope within ±70 ms (µV/s) and polarity. Each channel keeps
    its largest candidates; its summary has their count, mean and maximum amplitude, mean width
    and slope, and the background RMS and peak-to-peak of the filtered signal with the
    candidates' amplitude-to-RMS ratios. ``_meta.truncated`` says when the cap dropped some;
    min_amplitude_uv of 0 or less keeps every peak (as upstream).
    """
    if max_candidates_per_channel < 0:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "max_candidates_per_channel must be 0 or more.")
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=transients.MIN_SAMPLES)
    candidate = {"channel": "", **_placeholders(_CANDIDATE_FIELDS), "polarity": "negative"}
    budget.check_channel_rows(_transient_body(record_id, tmin, tmax, min_amplitude_uv, max_candidates_per_channel, 0, 0,
                                              [], [candidate] * _TOP_CANDIDATES),
                              names, _placeholders(_SUMMARY_FIELDS))

    sfreq = recording.sfreq
    found = {}  # per channel name, computed once however often it is asked for
    if transients.filter_band(sfreq) is not None:
        found = _find_transients(recording, dict(zip(names, picks)), start, stop, min_amplitude_uv,
                                 max_candidates_per_channel)
    # Upstream handles a repeated channel as often as it is named: its candidates count (and
    # are listed) that many times, in one summary row.
    occurrences = [name for name in names if name in found]
    detected = sum(found[name].n_detected for name in occurrences)
    returned = sum(len(found[name].samples) for name in occurrences)
    repeats = Counter(occurrences)
    channel_summary = [_transient_summary(name, found[name], repeats[name])
                       for name in repeats if len(found[name].samples)]
    offset = tmin if tmin is not None else 0.0
    leading = [(float(found[name].amplitude_uv[index]), name, index)
               for name in occurrences for index in range(min(_TOP_CANDIDATES, len(found[name].samples)))]
    leading.sort(key=lambda entry: entry[0], reverse=True)
    top = [found[name].row(index, channel=name, sfreq=sfreq, time_offset=offset)
           for _, name, index in leading[:_TOP_CANDIDATES]]
    body = _transient_body(record_id, tmin, tmax, min_amplitude_uv, max_candidates_per_channel, detected,
                           returned, channel_summary, top)
    truncated = detected > returned
    return budget.attach_meta(
        body,
        n_rows=returned,
        truncated=truncated,
        truncated_reason=(f"per-channel top-{max_candidates_per_channel} cap ({detected} detected -> {returned} kept)"
                          if truncated else None),
    )


def _find_transients(recording, picks, start, stop, min_amplitude_uv, max_candidates):
    """Return each channel's :class:`~tools_app.signal.transients.Candidates`, the work checked as it becomes known.

    Filtering and finding the local maxima cost what the range does, known at once; keeping
    the maxima apart costs what their number does, and measuring the candidates what theirs
    does, each known once a channel is filtered.
    """
    sfreq = recording.sfreq
    source = source_for(recording)
    meter = workload.WorkMeter()

    def scan(picks, start, stop):
        per_sample = (costs.BANDPASS_NS + costs.MAXIMA_NS) * len(picks)
        return source.read_cost(picks, stop - start) + per_sample * (stop - start)

    channels = list(picks.values())
    meter.charge(scan(channels, start, stop), _span_refusal(recording, scan, channels, start, stop))
    found = {}
    for name, pick in picks.items():
        filtered = transients.bandpass(source.read([pick], start, stop)[0], sfreq)
        above = transients.count_above(filtered, min_amplitude_uv=min_amplitude_uv)
        meter.charge(above * costs.PEAK_SPACING_NS, _too_many_peaks(name, above, min_amplitude_uv, ranked=True))
        peaks, positive, amplitudes = transients.find_candidates(filtered, sfreq, min_amplitude_uv=min_amplitude_uv)
        kept = min(len(peaks), max_candidates)
        meter.charge(kept * costs.CANDIDATE_NS, _too_many_peaks(name, kept, min_amplitude_uv, ranked=False))
        found[name] = transients.keep_candidates(filtered, sfreq, peaks, positive, amplitudes,
                                                 max_candidates=max_candidates)
    return found


def _too_many_peaks(name, count, min_amplitude_uv, *, ranked):
    """Return the refusal of a transient scan with too many peaks (to space out when ``ranked``, else to measure)."""
    if ranked:
        work = f"spacing out the peaks of {name} ({count} samples at or above min_amplitude_uv {min_amplitude_uv})"
        rescope = "(a) raise min_amplitude_uv; or (b) use fewer channels or a shorter time range via tmin/tmax"
    else:
        work = f"measuring the {count} candidates kept on {name}, with those of the channels before it"
        rescope = ("(a) lower max_candidates_per_channel (only kept candidates are measured); or (b) raise "
                   "min_amplitude_uv; or (c) use fewer channels or a shorter time range via tmin/tmax")
    return lambda total_ns: workload.refusal(total_ns, work=work, rescope=rescope)


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


def _transient_summary(name, candidates, repeats):
    """Return a channel's summary row; the means are of the rounded candidate values.

    ``repeats``: how often the channel was asked for; its candidates count that many times.
    """
    def each(values):
        return np.tile(values, repeats)

    amplitudes = each(candidates.amplitude_uv)
    mean_amplitude, max_amplitude = float(np.mean(amplitudes)), float(np.max(amplitudes))
    rms = candidates.background_rms_uv
    return {
        "channel": name,
        "n_candidates": len(amplitudes),
        "amplitude_mean_uv": round_value(mean_amplitude, 1),
        "amplitude_max_uv": round_value(max_amplitude, 1),
        "width_mean_ms": round_value(float(np.mean(each(candidates.width_ms))), 1),
        "sharpness_mean_uv_s": round_value(float(np.mean(each(candidates.sharpness_uv_s))), 1),
        "background_rms_uv": rms,
        "background_peak_to_peak_uv": candidates.background_peak_to_peak_uv,
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
    """Compute time-domain statistics of the chosen channels: mean, std, RMS (µV), peak-to-peak
    amplitude, skewness, kurtosis, the Hjorth parameters (activity, mobility, complexity), line
    length (µV/s) and zero-crossing rate (Hz). Works for any number of channels, a single one
    included; aggregates over [tmin, tmax] (the whole recording if omitted). Unknown channels
    or an empty or too-short window give a clear error. The output is bounded: one row per
    channel.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to analyse. If omitted, all EEG channels.
    tmin : float, optional
        Start time in seconds.
    tmax : float, optional
        End time in seconds.

    Notes
    -----
    Skewness and kurtosis are scipy's (Fisher excess, biased); Hjorth activity is in µV²; line
    length is the summed absolute sample-to-sample change per second; the zero-crossing rate
    is that of the mean-removed signal. The window needs at least 3 samples.
    """
    names, picks = _channels_or_default(recording, channels)
    start, stop = _window(recording, tmin, tmax, min_samples=3)
    budget.check_channel_rows({"record_id": record_id, "time_window": [tmin, tmax], "n_channels": 0, "channels": []},
                              names, _placeholders(_TEMPORAL_DECIMALS))
    source = source_for(recording)
    _check_work(recording, source.temporal_cost, picks, start, stop)
    features = source.temporal_features(picks, start, stop)
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
    """Compute the left–right hemispheric asymmetry index (L − R) / (L + R) for the standard
    10-20 homologous pairs (Fp1-Fp2, F3-F4, C3-C4, P3-P4, O1-O2, F7-F8, T3-T4, T5-T6), in band
    power, total power and amplitude. Positive values mean left > right. It needs standard
    10-20 homologous left/right pairs: where there are none (single-channel data, derivations
    that are not 10-20, say) it answers ``applicable: false`` with a message that it does not
    apply, rather than made-up values. An empty or too-short window gives a clear error. The
    output is bounded: one row per pair present.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    feature : str
        The feature whose asymmetry is computed.
    tmin : float, optional
        Start time in seconds.
    tmax : float, optional
        End time in seconds.

    Notes
    -----
    Pairs are matched by exact name, the official alias map, or with an "EEG " prefix (the
    official alias bug included: T7/T8/P7/P8 montages never match). Amplitude asymmetry is of
    the raw RMS (both RMS values in µV are given); band power asymmetry per band (edges
    inclusive) and of the total spectral power. Without pairs (single-channel Bonn, CHB-MIT's
    bipolar montage, Sleep-EDF's Fpz-Cz) the answer gives the reason and the available
    channels. The window needs at least half a second of data.
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
    paired = [index[channel] for _, _, *channels in pairs for channel in channels]

    def cost(picks, first, last):
        amplitude = source.rms_cost(picks, first, last) if feature in ("amplitude", "all") else 0.0
        return amplitude + (source.welch_cost(picks, first, last) if feature in ("band_power", "all") else 0.0)

    _check_work(recording, cost, paired, start, stop, min_channels=None)
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
    """Compute Pearson correlation coefficients between pairs of channels over a time window:
    the upper triangle of the correlation matrix of the requested channels, and each channel's
    mean absolute correlation.

    ## Output size
    n_rows = n_channels × (n_channels − 1) / 2 (upper triangle).
    - 19 channels -> 171 pairs, ~12 KB, ~3k tokens.
    - 64 channels -> 2016 pairs, ~140 KB, ~35k tokens.

    Tip: ask for a focused subset of channels to keep the output short; the matrix grows with
    the square of the channel count.

    ## Applicability
    Needs at least 2 valid channels and at least 2 samples in the window; single-channel data,
    unknown channels or an empty or inverted window give a clear error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels in the correlation matrix. If omitted, all EEG channels. Tip: a focused subset
        (the frontal channels, say) keeps the output short.
    tmin : float, optional
        Start time in seconds.
    tmax : float, optional
        End time in seconds.

    Notes
    -----
    Channels that are constant in the window get r = 0 and are listed under
    ``constant_channels``. A call whose output would exceed 8000 tokens is refused with the
    largest channel count that fits (a deviation: upstream returns it, ~35k tokens for 64
    channels; see docs/compatibility.md).
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
    picks = [index[name] for name in names]
    source = source_for(recording)
    _check_work(recording, source.correlation_cost, picks, start, stop, min_channels=2)
    correlation, constant = source.correlation(picks, start, stop)
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
    window_sec: float | None = None,
    step_sec: float | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
) -> dict:
    """Compute features in sliding windows over the recording: a time series of windows for each
    channel. Features: time-domain (rms_uv, std_uv, kurtosis, peak_to_peak_uv,
    line_length_uv_s, hjorth_mobility, zero_crossing_rate_hz), absolute spectral power
    (delta_power 1-4 Hz, theta_power 4-8 Hz, alpha_power 8-13 Hz, sigma_power 11-16 Hz,
    beta_power 13-30 Hz, gamma_power 30-45 Hz), relative spectral power (delta_relative ...
    gamma_relative) and ratios (theta_alpha_ratio, slow_fast_ratio). Each window is one row
    with t_start, t_end and the requested features.

    OUTPUT BUDGET: the response is capped at 8000 tokens. Its size is n_channels × n_windows
    rows (n_windows = (tmax - tmin) / step_sec; the whole recording when tmin/tmax are
    omitted), about 6-7 tokens per requested field per row. A call that would exceed 8000
    tokens is REFUSED with an error that suggests a smaller scope: nothing is computed, and
    nothing is silently truncated. Scope each call to fit: choose 1-3 channels, analyse a chunk
    of time with tmin/tmax, and/or use a coarser window_sec/step_sec.
    ``_meta.approx_response_tokens`` gives the real size of a successful answer.

    ## Applicability
    Any number of channels, a single one included. Unknown channels, an empty or inverted
    window, or a window or step too small for the sampling rate give a clear error.

    Parameters
    ----------
    record_id : str
        Identifier of the EEG record.
    channels : list of str, optional
        Channels to analyse. If omitted, ALL EEG channels, which multiplies the output size;
        prefer 1-3 channels.
    features : list of str, optional
        Feature names computed per window. If omitted: [rms_uv, kurtosis, delta_relative,
        theta_relative, alpha_relative, beta_relative, gamma_relative].
    window_sec : float, optional
        Window length in seconds. Default 5; a coarser window (30, say) returns far fewer rows.
    step_sec : float, optional
        Step between windows in seconds (sets the overlap). Default: window_sec (no overlap).
    tmin : float, optional
        Start time in seconds. Omitting tmin/tmax analyses the whole recording (large for long
        files).
    tmax : float, optional
        End time in seconds.

    Notes
    -----
    Absolute band power is in µV²; each relative power is a share of the sum of the six bands
    (sigma included), so it is not the relative power of compute_band_power. Unknown feature
    names are ignored. The window_sec default is not advertised in the schema, as upstream.
    """
    requested = sorted(set(windowed.DEFAULT_FEATURES if features is None else features) & set(windowed.FEATURES))
    if not requested:
        raise ToolError(ErrorCode.UNKNOWN_FEATURE,
                        f"No valid features requested. Allowed: {sorted(windowed.FEATURES)}")
    if window_sec is None:
        window_sec = DEFAULT_WINDOW_SEC
    if step_sec is None:
        step_sec = window_sec
    index = _channel_index(recording)
    requested_channels = _eeg_channels(recording) if channels is None else channels
    names = [name for name in requested_channels if name in index]
    if not names:
        raise ToolError(ErrorCode.UNKNOWN_CHANNEL, f"None of the requested channels exist: {_listed(channels)}")
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
    n_windows, _ = windowed.window_count(n_total, window_samples, step_samples)
    budget.check_windowed(n_channels=len(names), n_windows=n_windows, features=requested,
                          step_sec=step_sec, span_sec=span_sec, record_sec=recording.n_times / sfreq)
    picks = [index[name] for name in names]
    source = source_for(recording)
    def cost(picks, first, last):
        return source.windowed_cost(picks, first, last, window_samples, step_samples, requested)

    _check_work(recording, cost, picks, start, stop,
                hint="use a shorter window_sec or a coarser step_sec (each window is computed)")
    starts, used_samples, values = source.windowed_features(picks, start, stop, window_samples, step_samples, requested)
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
