"""The signal a tool call looked at, read back from its recording and decimated for plotting.

A signal tool call names channels and a time range (``channels``, ``tmin``, ``tmax``), with
the tools' defaults when they are omitted: every channel the file types as EEG (the homologous
10-20 pairs for ``compute_asymmetry``) and the whole record, its time range read as
``tools_app.spans`` reads it for the evidence coverage too. :func:`signal_window` turns a call's
arguments into that window, :func:`read_signal` reads it and keeps, per channel, the minimum
and the maximum of each bucket of samples, so a trace never has more than ``max_points``
points whatever the record's length, and spikes survive the decimation.

The reading is done in chunks of whole buckets, so a 24-hour record is never loaded at once. Each
channel is plotted in its own unit: a voltage in µV, as the tools give it, any other quantity as the
file records it (Sleep-EDF's rectal temperature in DegC, its respiration and event marker in the
numbers the file holds, with no unit), never scaled as if it were a voltage.
:func:`plotted_features` and :func:`feature_title` put the features of ``compute_windowed_features``
in the order its tables use (bands from delta up to gamma) and name them with their units.
No Django here: the view gives the recording and the arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tools_app.signal.spatial import homologous_pairs
from tools_app.signal.windowed import FEATURES
from tools_app.spans import requested_span

MAX_POINTS = 2000
MAX_CHANNELS = 8
VOLT_TO_MICROVOLT = 1e6
_CHUNK_SAMPLES = 1 << 20

#: What each time-domain or ratio feature of ``compute_windowed_features`` is, and its unit.
_FEATURE_TITLES = {
    "rms_uv": ("RMS", "µV"),
    "std_uv": ("standard deviation", "µV"),
    "kurtosis": ("kurtosis", "unitless"),
    "peak_to_peak_uv": ("peak-to-peak", "µV"),
    "line_length_uv_s": ("line length", "µV/s"),
    "hjorth_mobility": ("Hjorth mobility", "unitless"),
    "zero_crossing_rate_hz": ("zero-crossing rate", "Hz"),
    "theta_alpha_ratio": ("theta/alpha ratio", "unitless"),
    "slow_fast_ratio": ("slow/fast ratio", "unitless"),
}


@dataclass(frozen=True)
class SignalWindow:
    """The channels and sample range one tool call covered, as plotted.

    Attributes
    ----------
    channels : tuple of str
        Existing channels, at most the plotting cap.
    n_requested : int
        Existing channels the call covered before the cap.
    missing : tuple of str
        Requested channels the recording does not have.
    start, stop : int
        Sample range, ``0 <= start <= stop <= n_times``.
    """

    channels: tuple[str, ...]
    n_requested: int
    missing: tuple[str, ...]
    start: int
    stop: int


def _requested_channels(tool_name: str, arguments: dict, ch_names: list[str], eeg_channels: list[str]):
    if tool_name == "compute_asymmetry":
        return [channel for *_, left, right in homologous_pairs(ch_names) for channel in (left, right)]
    channels = arguments.get("channels")
    if isinstance(channels, str):
        channels = [channels]
    if not isinstance(channels, list) or not channels:
        return list(eeg_channels)
    return [str(channel) for channel in channels]


def signal_window(
    tool_name: str,
    arguments: dict | None,
    *,
    ch_names: list[str],
    eeg_channels: list[str],
    sfreq: float,
    n_times: int,
    max_channels: int = MAX_CHANNELS,
) -> SignalWindow:
    """Return the window a call of ``tool_name`` with ``arguments`` covered on a recording.

    Parameters
    ----------
    tool_name : str
        One of ``tools_app.spans.SIGNAL_TOOLS``.
    arguments : dict | None
        The call's arguments as the agent gave them.
    ch_names, eeg_channels : list of str
        The recording's channels, and those typed EEG (the tools' default).
    sfreq : float
        Sampling rate in Hz.
    n_times : int
        Samples per channel.
    max_channels : int
        Plot at most this many channels, the first requested ones.

    Raises
    ------
    ValueError
        If ``tool_name`` is not a signal tool or ``max_channels`` is not positive.
    """
    tmin, tmax = requested_span(tool_name, arguments)  # refuses a tool that is not a signal tool
    if max_channels < 1:
        raise ValueError(f"max_channels must be at least 1, not {max_channels}.")
    arguments = arguments if isinstance(arguments, dict) else {}
    existing = set(ch_names)
    requested = list(dict.fromkeys(_requested_channels(tool_name, arguments, ch_names, eeg_channels)))
    present = [name for name in requested if name in existing]
    missing = tuple(name for name in requested if name not in existing)

    # Samples as the tools count them: int(seconds * sfreq), clipped to the recording.
    start = min(max(int(tmin * sfreq), 0), n_times) if tmin is not None else 0
    stop = min(max(int(tmax * sfreq), 0), n_times) if tmax is not None else n_times
    return SignalWindow(
        channels=tuple(present[:max_channels]),
        n_requested=len(present),
        missing=missing,
        start=start,
        stop=max(stop, start),
    )


def visitor_points(n_times: int) -> int:
    """The most points a visitor who is not staff gets of ``n_times`` samples: half of them or fewer.

    Staff may see a short window sample for sample; anyone else sees every window through the
    min/max decimation, so the raw samples an agent is meant to reach only through its tools never
    leave the site.
    """
    return max(2, min(MAX_POINTS, (n_times // 4) * 2))


def bucket_size(n_times: int, *, max_points: int = MAX_POINTS) -> int:
    """Samples per bucket so that ``n_times`` samples decimate to at most ``max_points`` points.

    1 (no decimation) when the samples already fit; otherwise each bucket gives 2 points.
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2, not {max_points}.")
    if n_times <= max_points:
        return 1
    return math.ceil(n_times / (max_points // 2))


def minmax_decimate(data, *, bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep each bucket's minimum and maximum, in the order they occur.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
    bucket : int
        Samples per bucket; 1 keeps every sample. A last, shorter bucket is allowed.

    Returns
    -------
    indices : ndarray, shape (n_channels, n_points), int
        Sample index of each kept point, increasing along each row; ``n_points`` is
        ``n_times`` for ``bucket == 1``, else ``2 * ceil(n_times / bucket)``.
    values : ndarray, shape (n_channels, n_points)
        ``data`` at those indices.
    """
    data = np.atleast_2d(np.asarray(data, dtype=np.float64))
    if data.ndim != 2:
        raise ValueError(f"data must be 2-D (n_channels, n_times), got shape {data.shape}.")
    if bucket < 1:
        raise ValueError(f"bucket must be at least 1 sample, not {bucket}.")
    n_channels, n_times = data.shape
    if bucket == 1 or n_times == 0:
        indices = np.broadcast_to(np.arange(n_times), (n_channels, n_times)).copy()
        return indices, data.copy()
    n_buckets = math.ceil(n_times / bucket)
    # The last bucket is padded with its final sample, which cannot change its min or max.
    padded = np.pad(data, ((0, 0), (0, n_buckets * bucket - n_times)), mode="edge")
    buckets = padded.reshape(n_channels, n_buckets, bucket)
    lowest, highest = buckets.argmin(axis=2), buckets.argmax(axis=2)
    pairs = np.stack([np.minimum(lowest, highest), np.maximum(lowest, highest)], axis=2)
    indices = np.minimum(pairs + (np.arange(n_buckets) * bucket)[None, :, None], n_times - 1)
    indices = indices.reshape(n_channels, 2 * n_buckets)
    return indices, np.take_along_axis(data, indices, axis=1)


def plotted_unit(unit: str) -> tuple[str, float]:
    """The unit a channel whose values are in ``unit`` is plotted in, and the factor that takes it there.

    A voltage (``"V"``) is plotted in µV, the unit the tools report; any other unit as recorded, unscaled.
    """
    return ("µV", VOLT_TO_MICROVOLT) if unit == "V" else (unit, 1.0)


def rounded_values(values):
    """``values`` (one channel's, 1-D) rounded to 3 decimals, or to 6 significant digits of its largest
    magnitude where that keeps more: a channel recorded in small numbers is not rounded flat."""
    values = np.asarray(values, dtype=np.float64)
    peak = float(np.max(np.abs(values), initial=0.0))
    decimals = 3 if peak == 0 or not math.isfinite(peak) else max(3, 5 - math.floor(math.log10(peak)))
    return np.round(values, decimals)


def read_signal(recording, window: SignalWindow, *, max_points: int = MAX_POINTS) -> list[dict]:
    """Read ``window`` from ``recording``, decimated to at most ``max_points`` points per channel.

    Parameters
    ----------
    recording : tools_app.recording.Recording
    window : SignalWindow

    Returns
    -------
    traces : list of dict
        One ``{"channel", "unit", "times", "values"}`` per channel of the window: times in s of the
        record, values in ``unit``: µV for a voltage, else the unit the file records (``""`` for none).
    """
    if not window.channels:
        return []
    n_samples = window.stop - window.start
    bucket = bucket_size(n_samples, max_points=max_points)
    chunk = bucket * max(1, _CHUNK_SAMPLES // bucket)
    picks = list(window.channels)
    indices, values = [], []
    for begin in range(window.start, window.stop, chunk):
        data = recording.get_data(picks, begin, min(begin + chunk, window.stop))
        kept, kept_values = minmax_decimate(data, bucket=bucket)
        indices.append(kept + begin)
        values.append(kept_values)
    if indices:
        times = np.concatenate(indices, axis=1) / recording.sfreq
        values = np.concatenate(values, axis=1)
    else:
        times = values = np.empty((len(picks), 0))
    units = dict(zip(recording.ch_names, recording.units))
    traces = []
    for row, name in enumerate(picks):
        unit, factor = plotted_unit(units[name])
        traces.append({
            "channel": name,
            "unit": unit,
            "times": np.round(times[row], 4).tolist(),
            "values": rounded_values(values[row] * factor).tolist(),
        })
    return traces


def plotted_features(names) -> list[str]:
    """``names`` in the order the windowed tool writes them: time-domain first, then bands from delta
    through theta, alpha, sigma and beta to gamma; names the tool does not know last, as given."""
    names = list(dict.fromkeys(names))
    known = [name for name in FEATURES if name in names]
    return known + [name for name in names if name not in FEATURES]


def feature_title(name: str) -> str:
    """An axis title for a windowed feature, with its unit: ``line_length_uv_s`` → ``line length (µV/s)``.

    Band powers are in µV², relative powers and ratios have no unit.
    """
    if name in _FEATURE_TITLES:
        title, unit = _FEATURE_TITLES[name]
    elif name.endswith("_power"):
        title, unit = f"{name.removesuffix('_power')} power", "µV²"
    elif name.endswith("_relative"):
        title, unit = f"{name.removesuffix('_relative')} relative power", "unitless"
    else:
        return name.replace("_", " ")
    return f"{title} ({unit})"


