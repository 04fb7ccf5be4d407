"""EDF/EDF+ recordings read the way ``mne.io.read_raw_edf(path, preload=True)`` reads them (MNE 1.13),
without loading the file.

The data records are memory-mapped; a read decodes only the records that cover the requested samples,
so a 30-s slice of a 23-hour Sleep-EDF night costs milliseconds and a few hundred kB. What MNE does, and
what this module therefore reproduces (each point is checked against MNE in
``tests/tools_app/test_recording.py``):

- Channels labelled ``EDF Annotations`` or ``BDF Annotations`` are dropped. The other labels, stripped of
  surrounding blanks, are made unique by renaming *every* copy of a repeated label ``<label>-0``,
  ``<label>-1``, ... in file order (CHB-MIT's two ``T8-P8`` become ``T8-P8-0``/``T8-P8-1``; its ``-`` dummy
  channels become ``--0``, ``--1``, ...; a label that occurs once is kept as it is).
- Every channel is typed ``eeg``, except the first channel named ``status`` and the first named
  ``trigger`` (any case), which are ``stim``: no unit scaling, values ``int(value) & (2**17 - 1)``.
- Physical value = ``((digital * cal) + offset) * scale`` in float64, with ``cal`` = physical range /
  digital range (a zero range, or a non-finite digital one, counts as 1), ``offset = physical_min -
  digital_min * cal`` and ``scale`` 1e-6 for ``uV``/``µV``/``μV``, 1e-3 for ``mV`` and 1 for any other
  unit (``V``, blank, ``DegC``, ...). The operations run in MNE's order, so the values are bit-identical.
  A channel's values are therefore in volts when its unit is a voltage MNE knows (``uV``, ``mV``, ``V``), and
  in the file's own unit otherwise (``units``: Sleep-EDF's temperature in ``DegC``, its respiration and
  event marker in a unit the file leaves blank).
- The sampling rate is the largest samples-per-record of the non-stim channels over the record duration
  (a duration of 0 counts as 1 s). A channel with fewer samples per record is upsampled by MNE's FFT
  resampling of the *whole* channel (``mne.filter.resample(x, m, n, npad=0)``: scipy ``rfft``, Nyquist
  bin halved when ``n`` is even, times ``m / n``, zero-padded ``irfft`` of length ``m``). That is a
  band-limited (periodic sinc) interpolation, so every output sample depends on the whole night. We keep
  the channel's spectrum (8 bytes per stored sample) and evaluate the interpolation only at the requested
  samples (Bluestein's chirp transform), which agrees with MNE to ~1e-15 of the channel's peak value;
  reads of a quarter of the recording or more run MNE's full inverse FFT and are bit-identical. A stim
  channel with fewer samples is held (zero-order) within each record instead.
- The number of records is the number of *whole* records in the file, whatever the header says (``-1``,
  too small, or a file cut off mid-record); records are assumed contiguous (EDF+D gaps are ignored).
- ``highpass``/``lowpass`` come from ``HP:``/``LP:`` in the prefiltering fields; if they differ between
  channels, the highest highpass and the lowest lowpass are kept; a missing lowpass is Nyquist, and a
  highpass above the lowpass resets both to 0 and Nyquist. Like MNE, the per-channel filter strings are
  taken by position among *all* header channels, annotation channels included.
- ``subject_info`` is parsed from the EDF+ patient field (``code sex birthdate name [key=value]``).
"""

from __future__ import annotations

import mmap
import re
import string
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import numpy as np
import scipy.fft
from scipy.interpolate import interp1d

ANNOTATION_LABELS = ("EDF Annotations", "BDF Annotations")
STIM_NAMES = ("status", "trigger")
STIM_MASK = 2**17 - 1
MICROVOLT_UNITS = ("\u03bcV", "\u00b5V", "\x83\xcaV", "uV")  # greek mu, micro sign, Shift-JIS mu as latin-1
VOLTAGE_UNITS = (*MICROVOLT_UNITS, "mV", "V")  # the units MNE reads as volts, scaled or not

_FIXED_HEADER_BYTES = 256
_SIGNAL_FIELDS = (  # (name, bytes) of each per-signal header field, in file order
    ("label", 16),
    ("transducer", 80),
    ("unit", 8),
    ("physical_min", 8),
    ("physical_max", 8),
    ("digital_min", 8),
    ("digital_max", 8),
    ("prefilter", 80),
    ("n_samples", 8),
    ("reserved", 32),
)
_BYTES_PER_SAMPLE = 2
# Upsampled channels: reads of at least this share of the recording use one full inverse FFT; shorter
# ones evaluate the interpolation in blocks of at least this many samples (and 4 spectra wide).
_FULL_INVERSE_SHARE = 0.25
_MIN_INTERPOLATION_BLOCK = 1 << 18
# Reads map the file this many bytes at a time, releasing each part before the next (see _digital).
_PASS_CHUNK_BYTES = 8 << 20


_NUMPY_FFT_HAS_OUT = int(np.__version__.split(".")[0]) >= 2


class EdfError(ValueError):
    """An EDF file that cannot be read; the message describes the problem and never names the file."""


@dataclass(frozen=True)
class EdfHeader:
    """The fields of an EDF/EDF+ header that the reader uses, parsed as MNE parses them.

    Per-signal tuples cover every signal in the header, annotation channels included. ``n_records`` is
    what the header says (``-1`` when unknown); the reader counts the whole records in the file instead.
    """

    patient: str
    start: datetime | None
    header_bytes: int
    n_records: int
    record_duration: float
    labels: tuple[str, ...]
    units: tuple[str, ...]
    physical_min: tuple[float, ...]
    physical_max: tuple[float, ...]
    digital_min: tuple[float, ...]
    digital_max: tuple[float, ...]
    prefilters: tuple[str, ...]
    samples_per_record: tuple[int, ...]


def _text(raw: bytes) -> str:
    return raw.decode("latin-1").split("\x00")[0]


def _number(raw: bytes) -> float:
    return float(_text(raw).replace(",", "."))


def _start_time(day: str, clock: str) -> datetime | None:
    """The recording's start from the header's ``dd.mm.yy`` and ``hh.mm.ss`` (years 85–99 are 19xx, as EDF
    says); None when either cannot be read."""
    try:
        days, months, years = (int(part) for part in day.strip().split("."))
        hours, minutes, seconds = (int(part) for part in clock.strip().split("."))
        return datetime(years + (1900 if years >= 85 else 2000), months, days, hours, minutes, seconds)
    except ValueError:
        return None


def read_edf_header(fid) -> EdfHeader:
    """Parse the header of an open EDF/EDF+ file positioned at byte 0.

    Raises
    ------
    EdfError
        If the header is truncated or a field cannot be parsed.
    """
    fixed = fid.read(_FIXED_HEADER_BYTES)
    if len(fixed) < _FIXED_HEADER_BYTES:
        raise EdfError("Not an EDF file: the header is shorter than 256 bytes.")
    try:
        header_bytes = int(_text(fixed[184:192]))
        n_records = int(_text(fixed[236:244]))
        record_duration = float(_text(fixed[244:252]))
        n_signals = int(_text(fixed[252:256]))
    except ValueError:
        raise EdfError("Not an EDF file: unreadable header fields.") from None
    if n_signals < 1 or header_bytes != _FIXED_HEADER_BYTES * (n_signals + 1):
        raise EdfError("Not an EDF file: the header size does not match the number of signals.")
    per_signal = fid.read(header_bytes - _FIXED_HEADER_BYTES)
    if len(per_signal) < header_bytes - _FIXED_HEADER_BYTES:
        raise EdfError("Not an EDF file: the signal headers are truncated.")

    fields = {}
    position = 0
    for name, width in _SIGNAL_FIELDS:
        fields[name] = [
            per_signal[position + i * width : position + (i + 1) * width] for i in range(n_signals)
        ]
        position += width * n_signals
    try:
        return EdfHeader(
            patient=fixed[8:88].decode("latin-1").rstrip(),
            start=_start_time(_text(fixed[168:176]), _text(fixed[176:184])),
            header_bytes=header_bytes,
            n_records=n_records,
            record_duration=record_duration,
            labels=tuple(raw.strip().decode("latin-1") for raw in fields["label"]),
            units=tuple(raw.strip().decode("latin-1") for raw in fields["unit"]),
            physical_min=tuple(_number(raw) for raw in fields["physical_min"]),
            physical_max=tuple(_number(raw) for raw in fields["physical_max"]),
            digital_min=tuple(_number(raw) for raw in fields["digital_min"]),
            digital_max=tuple(_number(raw) for raw in fields["digital_max"]),
            prefilters=tuple(_text(raw).strip() for raw in fields["prefilter"]),
            samples_per_record=tuple(int(_text(raw)) for raw in fields["n_samples"]),
        )
    except ValueError:
        raise EdfError("Not an EDF file: unreadable signal header fields.") from None


def unique_channel_names(names) -> list[str]:
    """Rename repeated channel names as MNE does: every copy becomes ``name-0``, ``name-1``, ...

    If ``name-k`` is already taken, the copy gets the first free ``name-a`` ... ``name-z`` instead.
    """
    names = list(names)
    repeated = [name for i, name in enumerate(names) if name in names[:i]]
    for stem in dict.fromkeys(repeated):
        positions = [i for i, name in enumerate(names) if name == stem]
        for copy, position in enumerate(positions):
            for suffix in (str(copy), *string.ascii_lowercase):
                candidate = f"{stem}-{suffix}"
                if candidate not in names:
                    names[position] = candidate
                    break
            else:
                raise EdfError(f"Cannot make the repeated channel name {stem!r} unique.")
    return names


def _unit_scale(unit: str) -> float:
    if unit in MICROVOLT_UNITS:
        return 1e-6
    if unit == "mV":
        return 1e-3
    return 1.0


def _filter_frequency(text: str) -> float:
    if text == "DC":
        return 0.0
    if text.replace(".", "", 1).isdigit():
        return float(text)
    return np.nan


def _filter_setting(prefilters, kind: str) -> list[str]:
    """The last ``HP:``/``LP:`` value of each prefilter string, '' when absent."""
    pattern = re.compile(rf"{kind}:\s*([a-zA-Z0-9,.]+)(Hz)?")
    values = []
    for text in prefilters:
        matches = pattern.findall(text)
        values.append(matches[-1][0].replace("Hz", "").replace(",", ".") if matches else "")
    return values


def _combined_filter(values: list[str], *, highest: bool) -> float:
    """One filter frequency for the recording; NaN when unknown, 0 when unset."""
    if len(set(values)) > 1:
        frequencies = [_filter_frequency(value) for value in values]
        if all(np.isnan(frequencies)):
            return np.nan
        return float(np.nanmax(frequencies) if highest else np.nanmin(frequencies))
    return _filter_frequency(values[0])


def _filters(header: EdfHeader, positions: list[int], sfreq: float) -> tuple[float, float]:
    """(highpass, lowpass) in Hz from the filter strings at ``positions`` (the non-stim channels)."""
    highpass, lowpass = 0.0, sfreq / 2.0
    if positions:
        found_high = _combined_filter(
            [_filter_setting(header.prefilters, "HP")[i] for i in positions], highest=True
        )
        found_low = _combined_filter(
            [_filter_setting(header.prefilters, "LP")[i] for i in positions], highest=False
        )
        if not np.isnan(found_high) and found_high != 0:
            highpass = float(found_high)
        if not np.isnan(found_low) and found_low != 0:
            lowpass = float(found_low)
    if highpass > lowpass:
        highpass, lowpass = 0.0, sfreq / 2.0
    return highpass, lowpass


def _subject_info(patient: str) -> dict:
    """MNE's ``info['subject_info']`` from the EDF+ patient field ``code sex birthdate name [k=v ...]``."""
    fields = patient.split(" ")
    info: dict = {"his_id": fields[0]}
    if len(fields) < 4:
        return info
    info["sex"] = {"M": 1, "F": 2}.get(fields[1], 0)
    names = fields[3].split("_")
    if len(names) == 2:
        info["first_name"], info["last_name"] = names
    elif len(names) == 3:
        info["first_name"], info["middle_name"], info["last_name"] = names
    else:
        info["last_name"] = fields[3]
    try:
        birthday = datetime.strptime(fields[2], "%d-%b-%Y")
    except ValueError:
        pass
    else:
        info["birthday"] = date(birthday.year, birthday.month, birthday.day)
    extras = dict(field.split("=", 1) for field in fields[4:] if field.count("=") == 1)
    for key, convert in (("hand", int), ("height", float), ("weight", float)):
        try:
            info[key] = convert(extras[key])
        except (KeyError, ValueError):
            pass
    return info


class EdfRecording:
    """The signals of one EDF/EDF+ file, memory-mapped, with MNE's channel names, types and values.

    Parameters
    ----------
    path : str | Path
        The ``.edf`` file.

    Raises
    ------
    EdfError
        If the file is not a readable EDF file.
    OSError
        If the file cannot be opened.
    """

    def __init__(self, path):
        path = Path(path)
        with path.open("rb") as fid:
            header = read_edf_header(fid)
            data_bytes = fid.seek(0, 2) - header.header_bytes
            self._map = mmap.mmap(fid.fileno(), 0, access=mmap.ACCESS_READ)
        record_samples = np.array(header.samples_per_record, dtype=np.int64)
        if (record_samples < 0).any() or record_samples.sum() == 0:
            raise EdfError("Not an EDF file: invalid samples per data record.")
        n_records = data_bytes // _BYTES_PER_SAMPLE // int(record_samples.sum())
        signals = [i for i, label in enumerate(header.labels) if label not in ANNOTATION_LABELS]
        if not signals:
            raise EdfError("The EDF file contains no signal channels (annotations only).")
        if n_records < 1:
            raise EdfError("The EDF file contains no complete data record.")
        duration = header.record_duration or 1.0
        if not 0 < duration < np.inf:
            raise EdfError("Not an EDF file: invalid data record duration.")

        self.ch_names = unique_channel_names(header.labels[i] for i in signals)
        lowered = [name.lower() for name in self.ch_names]
        self._stim = {lowered.index(name) for name in STIM_NAMES if name in lowered}
        self.ch_types = ["stim" if i in self._stim else "eeg" for i in range(len(signals))]

        samples = record_samples[signals]
        not_stim = [i for i in range(len(signals)) if i not in self._stim]
        rate_channels = not_stim or list(range(len(signals)))  # stim channels only: they set the rate
        self.sfreq = float(samples[rate_channels].max() * 1.0 / duration)
        if self.sfreq <= 0:
            raise EdfError("Not an EDF file: its signal channels have no samples in a data record.")
        self.samples_per_record = int(samples.max())
        self.n_times = int(n_records * self.samples_per_record)
        self.highpass, self.lowpass = _filters(header, not_stim, self.sfreq)
        self.subject_info = _subject_info(header.patient)
        self.start_time = header.start

        physical_min = np.array(header.physical_min)[signals]
        digital_min = np.array(header.digital_min)[signals]
        physical_range = np.array(header.physical_max)[signals] - physical_min
        digital_range = np.array(header.digital_max)[signals] - digital_min
        digital_range[~np.isfinite(digital_range) | (digital_range == 0)] = 1
        physical_range[physical_range == 0] = 1
        self._cal = physical_range / digital_range
        self._offset = physical_min - digital_min * self._cal
        units = [header.units[i] for i in signals]
        self._scale = np.array([_unit_scale(unit) for unit in units])
        self._scale[list(self._stim)] = 1.0
        #: The unit each channel's values are in: "V" for a voltage, the file's own unit for any other
        #: quantity ("" where the file gives none), "" for a stim channel's event codes.
        self.units = ["" if i in self._stim else "V" if unit in VOLTAGE_UNITS else unit for i, unit in enumerate(units)]
        self._samples = samples
        #: Channels stored at a lower rate and upsampled: a partial read of one evaluates the
        #: interpolation, so reading it whole (one inverse FFT) is cheaper than in pieces.
        self.upsampled_channels = frozenset(
            i for i in range(len(signals)) if samples[i] != self.samples_per_record and i not in self._stim
        )
        #: Each channel's rate and number of samples as the file stores them (before MNE's upsampling).
        self.stored_rates = [float(count) / duration for count in samples]
        self.stored_lengths = [int(n_records * count) for count in samples]
        self._record_offsets = np.concatenate([[0], np.cumsum(record_samples)])[signals]
        self._header_bytes = header.header_bytes
        self._records = np.ndarray(
            (n_records, int(record_samples.sum())), dtype="<i2", buffer=self._map, offset=header.header_bytes
        )
        self._spectra: dict[int, np.ndarray] = {}

    def read(self, picks, start: int, stop: int, out=None) -> np.ndarray:
        """Samples ``start:stop`` of the channels ``picks``, in volts.

        Parameters
        ----------
        picks : sequence of int
            Channel indices, ``0 <= pick < len(ch_names)``; repeats allowed.
        start, stop : int
            Sample range, ``0 <= start <= stop <= n_times``.
        out : ndarray, shape (len(picks), stop - start), float64, optional
            Where to write the samples (a long repeated read then reuses the same memory).

        Returns
        -------
        data : ndarray, shape (len(picks), stop - start), float64, V
            ``out`` when given.
        """
        if out is None:
            if len(picks) == 1 and picks[0] in self.upsampled_channels and stop > start:
                return self._read_upsampled(picks[0], start, stop)[np.newaxis]  # no copy of a long inverse FFT
            out = np.empty((len(picks), stop - start))
        elif out.shape != (len(picks), stop - start) or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {(len(picks), stop - start)}.")
        if stop == start:
            return out
        rows = list(enumerate(picks))
        full_rate = [(row, channel) for row, channel in rows
                     if self._samples[channel] == self.samples_per_record and channel not in self._stim]  # fmt: skip
        if len(full_rate) > 1:  # several channels: one pass over the records for all of them
            self._read_full_rate_rows(full_rate, start, stop, out)
            rows = [(row, channel) for row, channel in rows if (row, channel) not in full_rate]
        for row, channel in rows:
            if self._samples[channel] == self.samples_per_record:
                self._read_full_rate(channel, start, stop, out[row])
            elif channel in self._stim:
                self._read_held_stim(channel, start, stop, out[row])
            else:
                self._read_upsampled(channel, start, stop, out=out[row])
        return out

    def read_stored(self, channel: int, start: int, stop: int) -> np.ndarray:
        """Samples ``start:stop`` of ``channel`` as the file stores them, at its own rate (never upsampled).

        ``0 <= start <= stop <= stored_lengths[channel]``; values in the channel's unit (volts for a
        voltage), a stim channel's as event codes; a full-rate channel's equal :meth:`read`'s.
        """
        stored = int(self._samples[channel])
        first, last = start // stored, -(-stop // stored)
        values = self._physical(self._digital(channel, first, last).ravel(), channel)
        values = values[start - first * stored : stop - first * stored]
        if channel in self._stim:
            values = np.bitwise_and(values.astype(int), STIM_MASK).astype(np.float64)
        return values

    def _digital(self, channel: int, first_record: int, stop_record: int) -> np.ndarray:
        """Stored integers of ``channel`` in records ``first_record:stop_record``, shape (n_records, n).

        A copy, gathered so that at most one chunk of the file is mapped at a time: a strided pass
        over many records touches nearly every page of them, and each chunk's pages are unmapped
        once read (they stay in the page cache), so long reads do not add the file to our RSS.
        """
        begin, stored = self._record_offsets[channel], self._samples[channel]
        record_bytes = self._records.shape[1] * _BYTES_PER_SAMPLE
        chunk = max(_PASS_CHUNK_BYTES // record_bytes, 1)
        digital = np.empty((stop_record - first_record, stored), dtype=self._records.dtype)
        for first in range(first_record, stop_record, chunk):
            last = min(first + chunk, stop_record)
            digital[first - first_record : last - first_record] = self._records[first:last, begin : begin + stored]
            self._release(first, last)
        return digital

    def _read_full_rate_rows(self, rows, start: int, stop: int, out: np.ndarray) -> None:
        """Fill ``out[row]`` with samples ``start:stop`` of each full-rate ``(row, channel)`` in ``rows``.

        The records are copied a chunk at a time with every channel in them, so a read of many
        channels passes over the file once instead of once per channel (see :meth:`_digital`).
        """
        per_record = self.samples_per_record
        first_record, stop_record = start // per_record, -(-stop // per_record)
        record_bytes = self._records.shape[1] * _BYTES_PER_SAMPLE
        chunk = max(_PASS_CHUNK_BYTES // record_bytes, 1)
        for first in range(first_record, stop_record, chunk):
            last = min(first + chunk, stop_record)
            records = np.array(self._records[first:last])
            self._release(first, last)
            begin = max(start, first * per_record)  # the samples of this chunk, as absolute indices
            end = min(stop, last * per_record)
            for row, channel in rows:
                offset = self._record_offsets[channel]
                digital = records[:, offset : offset + per_record].ravel()
                self._physical(digital[begin - first * per_record : end - first * per_record], channel,
                               out[row, begin - start : end - start])  # fmt: skip

    def _release(self, first: int, last: int) -> None:
        """Unmap the pages of records ``first:last`` (they stay in the page cache), so reads do not add the file to RSS."""
        if hasattr(mmap, "MADV_DONTNEED"):
            record_bytes = self._records.shape[1] * _BYTES_PER_SAMPLE
            mapped = self._header_bytes + first * record_bytes
            page = mapped // mmap.PAGESIZE * mmap.PAGESIZE
            self._map.madvise(mmap.MADV_DONTNEED, page, self._header_bytes + last * record_bytes - page)

    def _physical(self, digital: np.ndarray, channel: int, out=None) -> np.ndarray:
        out = np.multiply(digital, self._cal[channel], out=out)
        out += self._offset[channel]
        out *= self._scale[channel]
        return out

    def _read_full_rate(self, channel: int, start: int, stop: int, out: np.ndarray) -> None:
        per_record = self.samples_per_record
        first, last = start // per_record, -(-stop // per_record)
        digital = self._digital(channel, first, last).ravel()
        self._physical(digital[start - first * per_record : stop - first * per_record], channel, out)
        if channel in self._stim:
            out[...] = np.bitwise_and(out.astype(int), STIM_MASK)

    def _read_held_stim(self, channel: int, start: int, stop: int, out: np.ndarray) -> None:
        per_record, stored = self.samples_per_record, int(self._samples[channel])
        held = interp1d(
            np.linspace(0, 1, stored + 1, True), np.arange(stored + 1), kind="zero"
        )(np.linspace(0, 1, per_record, False)).astype(int)
        first, last = start // per_record, -(-stop // per_record)
        values = np.zeros((last - first, stored + 1))
        self._physical(self._digital(channel, first, last), channel, values[:, :stored])
        out[...] = values[:, held].ravel()[start - first * per_record : stop - first * per_record]

    def _spectrum(self, channel: int) -> np.ndarray:
        """MNE's scaled half spectrum of the whole channel, before its zero-padded inverse FFT."""
        if channel not in self._spectra:
            signal = self._physical(self._digital(channel, 0, len(self._records)).ravel(), channel)
            spectrum = scipy.fft.rfft(signal)
            if signal.size % 2 == 0:
                spectrum[signal.size // 2] *= 0.5
            spectrum *= float(self.n_times) / float(signal.size)
            self._spectra[channel] = spectrum
        return self._spectra[channel]

    def _read_upsampled(self, channel: int, start: int, stop: int, out=None) -> np.ndarray:
        """Samples ``start:stop`` of an upsampled channel, written into ``out`` if given (else possibly a view)."""
        if self._samples[channel] == 0:
            samples = np.zeros(stop - start)
        elif stop - start >= self.n_times * _FULL_INVERSE_SHARE:
            # Past this share one full inverse FFT is cheaper, and it is MNE's own computation.
            if out is not None and stop - start == self.n_times:
                return inverse_fft(self._spectrum(channel), self.n_times, out=out)  # no second array of the night
            samples = scipy.fft.irfft(self._spectrum(channel), self.n_times)[start:stop]
        else:
            spectrum = self._spectrum(channel)
            block = max(4 * spectrum.size, _MIN_INTERPOLATION_BLOCK)
            samples = np.concatenate([
                band_limited_samples(spectrum, self.n_times, begin, min(begin + block, stop))
                for begin in range(start, stop, block)
            ])  # fmt: skip
        if out is None:
            return samples
        out[...] = samples
        return out


def inverse_fft(spectrum: np.ndarray, n: int, *, out: np.ndarray) -> np.ndarray:
    """``scipy.fft.irfft(spectrum, n)`` (MNE's resampling step), written into ``out``.

    numpy 2's FFT is the same pocketfft code as scipy's and gives the same numbers bit for bit
    (a test checks it), and it can write into a given array, which spares a long read a
    second array of the whole night; with an older numpy, scipy's result is copied.
    """
    if _NUMPY_FFT_HAS_OUT:
        return np.fft.irfft(spectrum, n, out=out)
    out[...] = scipy.fft.irfft(spectrum, n)
    return out


def _chirp(u: np.ndarray, n_out: int) -> np.ndarray:
    """``exp(i*pi*u**2/n_out)``, with ``u**2`` reduced modulo ``2*n_out`` exactly in integers."""
    return np.exp(1j * np.pi * ((u * u) % (2 * n_out)) / n_out)


def band_limited_samples(spectrum: np.ndarray, n_out: int, start: int, stop: int) -> np.ndarray:
    """Samples ``start:stop`` of ``scipy.fft.irfft(spectrum, n_out)``, without computing the others.

    Parameters
    ----------
    spectrum : ndarray, shape (n_freqs,), complex
        Half spectrum with ``2 * (n_freqs - 1) < n_out`` (an upsampling: no bin at ``n_out / 2``).
    n_out : int
        Length of the full inverse transform.
    start, stop : int
        Requested range, ``0 <= start <= stop <= n_out``.

    Returns
    -------
    samples : ndarray, shape (stop - start,), float64

    Notes
    -----
    ``y[t] = (2 / n_out) * Re(sum_f b_f w**(f*t))`` with ``w = exp(2j*pi/n_out)``, ``b_0 = Re(X_0) / 2`` and
    ``b_f = X_f`` otherwise. Writing ``f*s = (f**2 + s**2 - (s - f)**2) / 2`` turns the sum over ``f``
    for ``t = start + s`` into one linear convolution (Bluestein), done with FFTs of length about
    ``n_freqs + stop - start``. Every phase is reduced modulo ``n_out`` in integers first, so the
    result matches the full inverse FFT to rounding error (~1e-15 of the peak value).
    """
    n_freqs = spectrum.size
    length = stop - start
    freqs = np.arange(n_freqs, dtype=np.int64)
    weights = spectrum.astype(complex)
    weights[0] = spectrum[0].real / 2
    weights *= np.exp(2j * np.pi * ((freqs * start) % n_out) / n_out) * _chirp(freqs, n_out)
    lags = np.arange(-(n_freqs - 1), length, dtype=np.int64)
    size = scipy.fft.next_fast_len(n_freqs + length)
    sums = scipy.fft.ifft(
        scipy.fft.fft(weights, size) * scipy.fft.fft(np.conj(_chirp(lags, n_out)), size)
    )[n_freqs - 1 : n_freqs - 1 + length]
    return (2.0 / n_out) * (_chirp(np.arange(length, dtype=np.int64), n_out) * sums).real
