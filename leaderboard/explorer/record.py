"""A page of a recording as the record browser draws it: every channel, each at its own stored rate, as the
minimum and maximum of the samples under each pixel, in a montage, filtered on request.

A window is a time range, a width in pixels, the channels, a montage and filters
(:func:`parse_window` reads them from a query and says what is wrong with each). :func:`read_window`
answers it:

- channels as recorded and unfiltered come from the recording's min/max pyramid
  (:mod:`tools_app.signal.pyramid`), so a whole 23-hour night costs about what a 10-second page does;
- an average reference, a 10-20 bipolar chain, a band-pass or a notch needs the samples themselves:
  they are read with a margin (so the filter's edges fall outside the page), re-referenced,
  filtered forwards and backwards (no phase shift) and then reduced to each pixel's minimum and
  maximum. A page that would need more than ``MAX_PROCESSED_SAMPLES`` samples so (over all its
  channels) is shown as recorded, with a note saying so.

Staff get the samples themselves where a page holds no more samples than pixels; anyone else gets
the envelope, of at least four samples a pixel (half the samples, or fewer), as the step plots give
it. Each channel keeps its unit: a voltage in µV, anything else as the file records it.
No Django here: the view gives the recording, the query and who is asking.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from leaderboard.explorer.signal import plotted_unit, rounded_values
from tools_app.signal import pyramid

GROUPS = ("EEG", "EOG", "EMG", "other")
MONTAGES = {
    "recorded": "as recorded",
    "average": "average reference",
    "bipolar": "10-20 bipolar chains",
}
NOTCHES = (50, 60)
MIN_WIDTH, MAX_WIDTH, DEFAULT_WIDTH = 50, 4000, 1200
#: The longest page (samples per channel, margins included) re-referenced or filtered on the server.
#: The most samples a page re-references or filters on the server, over all its channels (margins included):
#: about half a second of work.
MAX_PROCESSED_SAMPLES = 1 << 21
FILTER_ORDER = 4
NOTCH_QUALITY = 30.0
#: Pages are filtered with this much signal on each side (at least), so the filter settles outside them.
FILTER_MARGIN_SEC = 2.0
VISITOR_SAMPLES_PER_PIXEL = 4

#: The 10-20 chains of the longitudinal bipolar ("double banana") montage, front to back, and the midline.
BIPOLAR_CHAINS = (
    ("Fp1", "F7", "T3", "T5", "O1"),
    ("Fp2", "F8", "T4", "T6", "O2"),
    ("Fp1", "F3", "C3", "P3", "O1"),
    ("Fp2", "F4", "C4", "P4", "O2"),
    ("Fz", "Cz", "Pz"),
)
#: Modern names of the old 10-20 temporal electrodes.
_ALIASES = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6"}  # upper case, as _electrode compares
_ELECTRODE = re.compile(r"^(?:EEG\s+)?([A-Za-z]{1,3}\d{0,2}|[A-Za-z]{1,2}z)(?:-(?:REF|LE|RE|AVG|A1|A2|M1|M2))?$", re.I)


class WindowError(ValueError):
    """A window that cannot be read; ``errors`` names each field that is wrong and why."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors.items()))


def channel_group(name: str, unit: str) -> str:
    """Which group a channel is drawn in: EEG, EOG, EMG, or other (respiration, temperature, markers, ECG)."""
    upper = name.upper()
    for group in ("EOG", "EMG"):
        if group in upper:
            return group
    if unit != "V" or any(word in upper for word in ("ECG", "EKG", "RESP", "TEMP", "EVENT", "MARKER", "SPO2")):
        return "other"
    return "EEG"


def _electrode(name: str) -> str | None:
    """The 10-20 electrode a referential channel records (upper case, old temporal names), else None."""
    match = _ELECTRODE.match(name.strip())
    if match is None:
        return None
    label = match.group(1).upper()
    return _ALIASES.get(label, label)


def bipolar_pairs(ch_names) -> list[tuple[str, str, str]]:
    """``(name, anode, cathode)`` of each link of the 10-20 chains whose two electrodes the recording has
    as single (referential) channels, e.g. ``("Fp1-F7", "EEG Fp1-REF", "EEG F7-REF")``."""
    by_electrode = {}
    for name in ch_names:
        electrode = _electrode(name)
        if electrode is not None:
            by_electrode.setdefault(electrode, name)
    pairs, seen = [], set()
    for chain in BIPOLAR_CHAINS:
        for anode, cathode in zip(chain, chain[1:]):
            first, second = by_electrode.get(anode.upper()), by_electrode.get(cathode.upper())
            if first and second and (anode, cathode) not in seen:
                seen.add((anode, cathode))
                pairs.append((f"{anode}-{cathode}", first, second))
    return pairs


@dataclass(frozen=True)
class Channel:
    """A channel the browser can draw: recorded, or derived from recorded ones (``terms``: (index, weight))."""

    name: str
    group: str
    unit: str
    rate: float
    length: int
    index: int | None = None  # the recorded channel, for one drawn as recorded
    terms: tuple = ()

    @property
    def derived(self) -> bool:
        return self.index is None


def channels_of(recording, montage: str) -> list[Channel]:
    """The channels drawn in ``montage``: EEG channels re-referenced, the others as recorded."""
    names, units = recording.ch_names, recording.units
    rates, lengths = recording.stored_rates, recording.stored_lengths
    recorded = [Channel(name, channel_group(name, units[i]), units[i], rates[i], lengths[i], index=i)
                for i, name in enumerate(names)]
    if montage == "recorded":
        return recorded
    others = [channel for channel in recorded if channel.group != "EEG"]
    base = [channel for channel in recorded if channel.group == "EEG" and channel.unit == "V"
            and channel.rate == recording.sfreq]
    if montage == "average":
        weight = 1.0 / len(base) if base else 0.0
        derived = [Channel(f"{channel.name}-avg", "EEG", "V", recording.sfreq, recording.n_times,
                           terms=((channel.index, 1.0), *((other.index, -weight) for other in base)))
                   for channel in base]
    else:
        index = {name: i for i, name in enumerate(names)}
        derived = [Channel(name, "EEG", "V", recording.sfreq, recording.n_times,
                           terms=((index[anode], 1.0), (index[cathode], -1.0)))
                   for name, anode, cathode in bipolar_pairs(names)]
    return derived + others


def montages_of(recording) -> dict[str, str]:
    """The montages this recording allows (a bipolar one only where its channels give a 10-20 chain)."""
    allowed = dict(MONTAGES)
    if not bipolar_pairs(recording.ch_names):
        del allowed["bipolar"]
    eeg = [name for name, unit in zip(recording.ch_names, recording.units) if channel_group(name, unit) == "EEG"]
    if len(eeg) < 2:
        del allowed["average"]
    return allowed


@dataclass(frozen=True)
class Window:
    """What to read: ``start``–``stop`` s, ``width`` pixels, these channels (None: all), montage, filters (Hz)."""

    start: float
    stop: float
    width: int
    channels: tuple[str, ...] | None
    montage: str
    highpass: float | None
    lowpass: float | None
    notch: int | None

    @property
    def filtered(self) -> bool:
        return bool(self.highpass or self.lowpass or self.notch)


def _number(text: str | None, field: str, errors: dict) -> float | None:
    if text is None or text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        errors[field] = f"“{text[:40]}” is not a number."
        return None
    if not math.isfinite(value):
        errors[field] = "must be a finite number."
        return None
    return value


def parse_window(query: Mapping[str, str], recording) -> Window:
    """The window a query asks for on ``recording``; :class:`WindowError` naming every field that is wrong."""
    errors: dict[str, str] = {}
    duration = recording.n_times / recording.sfreq
    start = _number(query.get("start"), "start", errors)
    stop = _number(query.get("stop"), "stop", errors)
    start = 0.0 if start is None else start
    stop = duration if stop is None else stop
    if "start" not in errors and not 0 <= start < duration:
        errors["start"] = f"must be at least 0 and before the record's end ({duration:g} s)."
    if "stop" not in errors and "start" not in errors and not start < stop:
        errors["stop"] = "must be after start."
    stop = min(stop, duration)
    width = _number(query.get("width"), "width", errors)
    if width is not None and (width != int(width) or not MIN_WIDTH <= width <= MAX_WIDTH):
        errors["width"] = f"must be a whole number of pixels from {MIN_WIDTH} to {MAX_WIDTH}."
    montage = (query.get("montage") or "recorded").strip()
    allowed = montages_of(recording)
    if montage not in allowed:
        errors["montage"] = f"must be one of {', '.join(allowed)} for this recording."
    highpass = _number(query.get("highpass"), "highpass", errors)
    lowpass = _number(query.get("lowpass"), "lowpass", errors)
    nyquist = recording.sfreq / 2
    if highpass is not None and "highpass" not in errors and not 0 < highpass < nyquist:
        errors["highpass"] = f"must be above 0 Hz and below the Nyquist frequency ({nyquist:g} Hz)."
    if lowpass is not None and "lowpass" not in errors and not 0 < lowpass < nyquist:
        errors["lowpass"] = f"must be above 0 Hz and below the Nyquist frequency ({nyquist:g} Hz)."
    if highpass and lowpass and not errors.keys() & {"highpass", "lowpass"} and highpass >= lowpass:
        errors["lowpass"] = "must be above the high-pass frequency."
    notch = _number(query.get("notch"), "notch", errors)
    if notch is not None and "notch" not in errors:
        if notch not in NOTCHES or notch >= nyquist:
            errors["notch"] = f"must be 50 or 60 (Hz), below the Nyquist frequency ({nyquist:g} Hz)."
    channels = None
    if query.get("channels"):
        channels = tuple(dict.fromkeys(name.strip() for name in query["channels"].split(",") if name.strip()))
        if "montage" not in errors:
            known = {channel.name for channel in channels_of(recording, montage)}
            unknown = [name for name in channels if name not in known]
            if unknown:
                errors["channels"] = f"not in this montage: {', '.join(unknown[:5])}."
    if errors:
        raise WindowError(errors)
    return Window(start, stop, int(width or DEFAULT_WIDTH), channels or None, montage,
                  highpass or None, lowpass or None, int(notch) if notch else None)


def _samples(start: float, stop: float, rate: float, length: int) -> tuple[int, int]:
    """The stored samples of a channel at ``rate`` whose times lie in ``[start, stop)``."""
    first = min(max(math.ceil(start * rate - 1e-9), 0), length)
    last = min(max(math.ceil(stop * rate - 1e-9), first), length)
    return first, last


def _filters(window: Window, rate: float):
    """The second-order sections of the window's filters at ``rate``, and a note when one cannot apply there."""
    from scipy import signal

    sections, skipped = [], []
    nyquist = rate / 2
    highpass = window.highpass if window.highpass and window.highpass < nyquist else None
    lowpass = window.lowpass if window.lowpass and window.lowpass < nyquist else None
    if window.highpass and highpass is None or window.lowpass and lowpass is None:
        skipped.append("band-pass")
    if highpass and lowpass:
        sections.append(signal.butter(FILTER_ORDER, [highpass, lowpass], "bandpass", fs=rate, output="sos"))
    elif highpass:
        sections.append(signal.butter(FILTER_ORDER, highpass, "highpass", fs=rate, output="sos"))
    elif lowpass:
        sections.append(signal.butter(FILTER_ORDER, lowpass, "lowpass", fs=rate, output="sos"))
    if window.notch:
        if window.notch < nyquist:
            sections.append(signal.tf2sos(*signal.iirnotch(window.notch, NOTCH_QUALITY, fs=rate)))
        else:
            skipped.append("notch")
    return (np.vstack(sections) if sections else None), skipped


def _margin(window: Window, rate: float) -> int:
    seconds = max(FILTER_MARGIN_SEC, 3.0 / window.highpass if window.highpass else 0.0)
    return int(math.ceil(min(seconds, 60.0) * rate))


@dataclass
class _Block:
    """The recorded channels the derived ones are made of, read once for the whole page (margins included)."""

    values: np.ndarray  # (channels, samples) at the recording's rate
    rows: dict[int, int]  # recorded channel index -> row of ``values``
    begin: int


def _processed(recording, channel: Channel, window: Window, first: int, last: int,
               block: _Block | None) -> tuple[np.ndarray, list[str]]:
    """Samples ``first:last`` of a channel re-referenced and filtered as the window asks (with a margin)."""
    from scipy import signal

    filterable = channel.unit == "V"
    sections, skipped = _filters(window, channel.rate) if filterable and window.filtered else (None, [])
    if channel.derived:
        weights = np.array([weight for _, weight in channel.terms])
        rows = [block.rows[index] for index, _ in channel.terms]
        values, begin = weights @ block.values[rows], block.begin
    else:
        margin = _margin(window, channel.rate) if sections is not None else 0
        begin = max(first - margin, 0)
        values = recording.read_stored(channel.index, begin, min(last + margin, channel.length))
    if sections is not None and values.size > 3 * (2 * len(sections) + 1):  # sosfiltfilt's padding
        values = signal.sosfiltfilt(sections, values)
    return values[first - begin : last - begin], skipped


def _block(recording, channels: list[Channel], window: Window) -> _Block | None:
    """Read every recorded channel the derived ``channels`` use, in one pass, with the filters' margin."""
    picks = sorted({index for channel in channels if channel.derived for index, _ in channel.terms})
    if not picks:
        return None
    first, last = _samples(window.start, window.stop, recording.sfreq, recording.n_times)
    margin = _margin(window, recording.sfreq) if window.filtered else 0
    begin, end = max(first - margin, 0), min(last + margin, recording.n_times)
    return _Block(recording.get_data(picks, begin, end), {index: row for row, index in enumerate(picks)}, begin)


def _reduce(values: np.ndarray, n_pixels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    edges = pyramid.pixel_edges(0, values.size, n_pixels)[:-1]
    return edges, np.minimum.reduceat(values, edges), np.maximum.reduceat(values, edges)


def _pixels(n_samples: int, width: int, *, staff: bool) -> int:
    """Pixels for ``n_samples`` samples: the width, fewer where the samples are fewer (a visitor: 4 samples a pixel)."""
    if staff:
        return min(width, n_samples)
    return max(1, min(width, n_samples // VISITOR_SAMPLES_PER_PIXEL))


def _channel_entry(recording, channel: Channel, window: Window, *, staff: bool, process: bool,
                   block: _Block | None) -> tuple[dict, list]:
    first, last = _samples(window.start, window.stop, channel.rate, channel.length)
    unit, factor = plotted_unit(channel.unit)
    entry = {"name": channel.name, "group": channel.group, "unit": unit, "rate": channel.rate,
             "end": round(last / channel.rate, 6)}  # where the last pixel ends: after the page's last sample
    n = last - first
    if n == 0:
        return {**entry, "kind": "envelope", "t": [], "min": [], "max": []}, []
    skipped = []
    if channel.derived or process:
        values, skipped = _processed(recording, channel, window, first, last, block)
        if staff and n <= window.width:
            starts, lows, highs = np.arange(n), values, None
        else:
            starts, lows, highs = _reduce(values, _pixels(n, window.width, staff=staff))
        starts = starts + first
    elif staff and n <= window.width:
        starts, lows, highs = np.arange(first, last), recording.read_stored(channel.index, first, last), None
    else:
        result = pyramid.envelope(recording, channel.index, first, last, _pixels(n, window.width, staff=staff))
        starts, lows, highs = result.starts, result.lows, result.highs
    times = np.round(starts / channel.rate, 6).tolist()
    if highs is None:
        return {**entry, "kind": "samples", "t": times, "v": rounded_values(lows * factor).tolist()}, skipped
    return {**entry, "kind": "envelope", "t": times, "min": rounded_values(lows * factor).tolist(),
            "max": rounded_values(highs * factor).tolist()}, skipped


def _chosen(channels: list[Channel], window: Window) -> list[Channel]:
    """The channels the window names (all where it names none); names of another montage choose nothing away."""
    if not window.channels:
        return channels
    chosen = [channel for channel in channels if channel.name in set(window.channels)]
    return chosen or channels


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def read_window(recording, window: Window, *, staff: bool) -> dict:
    """The window's channels, each ``{"name", "group", "unit", "rate", "end", "kind", "t", "min", "max"}`` (an
    envelope: each pixel's first sample time in s, its minimum and maximum, the last pixel ending at
    ``end``) or, for staff on a page with fewer samples than pixels, ``{..., "kind": "samples", "t", "v"}``;
    and notes on what was not applied."""
    notes = []
    montage = window.montage
    first, last = _samples(window.start, window.stop, recording.sfreq, recording.n_times)
    channels = _chosen(channels_of(recording, montage), window)
    processing = montage != "recorded" or window.filtered
    if processing:
        # Derived channels and the recorded ones they read, and filtered channels: each read and filtered whole.
        n_processed = sum(channel.derived or channel.unit == "V" for channel in channels)
        n_processed += len({index for channel in channels if channel.derived for index, _ in channel.terms})
        per_channel = last - first + 2 * _margin(window, recording.sfreq)
        if n_processed * per_channel > MAX_PROCESSED_SAMPLES:
            longest = MAX_PROCESSED_SAMPLES / max(n_processed, 1) / recording.sfreq
            notes.append(f"Montages and filters apply to pages up to {_duration(longest)} of these channels; "
                         "this page shows them as recorded, unfiltered.")
            montage, processing = "recorded", False
            channels = _chosen(channels_of(recording, montage), window)
    block = _block(recording, channels, window) if processing else None
    entries, skipped = [], set()
    for channel in channels:
        entry, missed = _channel_entry(recording, channel, window, staff=staff,
                                       process=processing and window.filtered and channel.unit == "V", block=block)
        entries.append(entry)
        skipped.update(f"{name} ({channel.name}, {channel.rate:g} Hz)" for name in missed)
    if skipped:
        notes.append("Not applied where the channel's sampling rate is too low: " + ", ".join(sorted(skipped)) + ".")
    return {
        "start": window.start,
        "stop": window.stop,
        "width": window.width,
        "montage": montage,
        "filters": {"highpass": window.highpass, "lowpass": window.lowpass, "notch": window.notch}
        if processing else {"highpass": None, "lowpass": None, "notch": None},
        "channels": entries,
        "notes": notes,
    }
