"""EDF/EDF+ headers, annotations and lossless cutting on data-record boundaries, for the builders.

A cut keeps a contiguous run of data records. The header is copied with the number of records and the
start date/time updated (and the ``Startdate dd-MMM-yyyy`` of the recording field, when present); the
data records are copied byte for byte, so every sample keeps its exact stored value. The record
duration, the signal table and the file type are unchanged: a plain EDF (such as every Sleep-EDF PSG)
stays a plain EDF, which is what the official processed Sleep-EDFx files are (2,048-byte header, 7
signals, ``size = 2048 + n_records * 18240``). For an EDF+ source the annotation signal of each kept
record is rewritten so that its time-keeping TAL and its annotations stay relative to the new start;
the start moves by the whole seconds of the first kept record's onset and the sub-second rest stays in
the TALs, as EDF+ intends. Annotations are kept when their onset lies in the kept span, whichever
record stores them, and are dropped otherwise.

Malformed input raises :class:`~benchmark.builders.base.BuildError` with the file's path in the message.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from benchmark.builders.base import BuildError

ANNOTATION_LABELS = ("EDF Annotations", "BDF Annotations")
_FIXED_BYTES = 256
_SIGNAL_FIELD_BYTES = (16, 80, 8, 8, 8, 8, 8, 80, 8, 32)  # label ... reserved, per signal
_LABEL_FIELD, _SAMPLES_FIELD = 0, 8
_STARTDATE = re.compile(rb"Startdate (\d\d)-([A-Z]{3})-(\d{4})")
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_COPY_CHUNK_BYTES = 8 * 2**20


@dataclass(frozen=True)
class EdfHeader:
    """What the builders need from an EDF/EDF+ header; ``raw`` is the header exactly as stored."""

    path: Path
    raw: bytes
    patient: str
    recording: str
    start: datetime
    header_bytes: int
    n_records: int
    record_duration: float  # seconds
    labels: tuple[str, ...]
    samples_per_record: tuple[int, ...]
    edf_plus: bool
    discontinuous: bool

    @property
    def record_bytes(self) -> int:
        return 2 * sum(self.samples_per_record)

    @property
    def duration(self) -> float:
        """Length of the data in seconds (records x record duration)."""
        return self.n_records * self.record_duration

    @property
    def annotation_signals(self) -> tuple[int, ...]:
        return tuple(i for i, label in enumerate(self.labels) if label in ANNOTATION_LABELS)

    @property
    def signal_labels(self) -> tuple[str, ...]:
        """Labels of the ordinary (non-annotation) signals, in file order."""
        return tuple(label for label in self.labels if label not in ANNOTATION_LABELS)

    @property
    def sampling_rate(self) -> float:
        """Highest sampling rate of the ordinary signals, in Hz (the rate MNE reports for the file)."""
        rates = [n / self.record_duration for n, label in zip(self.samples_per_record, self.labels)
                 if label not in ANNOTATION_LABELS]
        if not rates or self.record_duration <= 0:
            raise BuildError(f"{self.path}: no signal with a sampling rate")
        return max(rates)


def _field(raw: bytes, start: int, width: int) -> str:
    return raw[start:start + width].decode("ascii", errors="replace").strip()


def _number(path: Path, text: str, what: str, kind=int):
    try:
        return kind(text)
    except ValueError:
        raise BuildError(f"{path}: malformed EDF header: {what} is {text!r}") from None


def _start_datetime(path: Path, raw: bytes) -> datetime:
    date, time = _field(raw, 168, 8), _field(raw, 176, 8)
    match_date = re.fullmatch(r"(\d\d)\.(\d\d)\.(\d\d)", date)
    match_time = re.fullmatch(r"(\d\d)\.(\d\d)\.(\d\d)", time)
    if not (match_date and match_time):
        raise BuildError(f"{path}: malformed EDF header: start date/time is {date!r} {time!r}")
    day, month, yy = (int(g) for g in match_date.groups())
    year = 1900 + yy if yy >= 85 else 2000 + yy  # the EDF clipping rule
    try:
        return datetime(year, month, day, *(int(g) for g in match_time.groups()))
    except ValueError as exc:
        raise BuildError(f"{path}: malformed EDF header: start {date} {time} ({exc})") from None


def read_header(path: Path) -> EdfHeader:
    """Read and check the header of an EDF/EDF+ file.

    Raises BuildError if the header is malformed or the file holds fewer bytes than the records it
    announces (a truncated download or copy).
    """
    path = Path(path)
    try:
        with path.open("rb") as fid:
            fixed = fid.read(_FIXED_BYTES)
            if len(fixed) < _FIXED_BYTES:
                raise BuildError(f"{path}: truncated EDF: {len(fixed)} bytes, shorter than the 256-byte header")
            n_signals = _number(path, _field(fixed, 252, 4), "the number of signals")
            if n_signals < 1:
                raise BuildError(f"{path}: malformed EDF header: {n_signals} signals")
            signal_table = fid.read(256 * n_signals)
        size = path.stat().st_size
    except OSError as exc:
        raise BuildError(f"{path}: cannot read ({exc.strerror})") from None
    if len(signal_table) < 256 * n_signals:
        raise BuildError(f"{path}: truncated EDF: the header of {n_signals} signals is cut off")
    raw = fixed + signal_table
    header_bytes = _number(path, _field(fixed, 184, 8), "the header size")
    if header_bytes != len(raw):
        raise BuildError(f"{path}: malformed EDF header: says {header_bytes} header bytes, "
                         f"{n_signals} signals need {len(raw)}")

    def column(index: int) -> list[str]:
        offset = _FIXED_BYTES + sum(_SIGNAL_FIELD_BYTES[:index]) * n_signals
        width = _SIGNAL_FIELD_BYTES[index]
        return [_field(raw, offset + i * width, width) for i in range(n_signals)]

    labels = tuple(column(_LABEL_FIELD))
    samples = tuple(_number(path, s, f"samples per record of {label!r}")
                    for s, label in zip(column(_SAMPLES_FIELD), labels))
    n_records = _number(path, _field(fixed, 236, 8), "the number of data records")
    if n_records < 0:
        raise BuildError(f"{path}: malformed EDF header: the number of data records is {n_records} "
                         "(unknown); the recording was not closed properly")
    record_duration = _number(path, _field(fixed, 244, 8), "the data record duration", float)
    reserved = _field(fixed, 192, 44)
    header = EdfHeader(
        path=path, raw=raw, patient=_field(fixed, 8, 80), recording=_field(fixed, 88, 80),
        start=_start_datetime(path, raw), header_bytes=header_bytes, n_records=n_records,
        record_duration=record_duration, labels=labels, samples_per_record=samples,
        edf_plus=reserved.startswith("EDF+"), discontinuous=reserved.startswith("EDF+D"),
    )
    expected = header_bytes + n_records * header.record_bytes
    if size < expected:
        raise BuildError(f"{path}: truncated EDF: the header announces {n_records} data records of "
                         f"{header.record_bytes} bytes ({expected} bytes in all) but the file has {size} bytes")
    return header


# --- EDF+ annotations (time-stamped annotation lists, TALs) -------------------------------------------

@dataclass(frozen=True)
class Annotation:
    onset: float  # seconds from the file's start date/time
    duration: float | None
    text: str


@dataclass(frozen=True)
class _Tal:
    """One TAL: ``+onset[\x15duration]\x14text\x14...\x14\x00``; a time-keeping TAL has one empty text."""

    onset: Decimal
    duration: str | None  # kept as written
    texts: tuple[str, ...]

    def encode(self) -> bytes:
        onset = format(self.onset, "f")
        if "." in onset:
            onset = onset.rstrip("0").rstrip(".")
        stamp = (onset if onset.startswith("-") else "+" + onset) + (f"\x15{self.duration}" if self.duration else "")
        return (stamp + "".join("\x14" + text for text in self.texts) + "\x14\x00").encode("utf-8")


def _parse_tals(path: Path, record: int, data: bytes) -> list[_Tal]:
    tals = []
    for chunk in data.split(b"\x00"):  # a NUL ends each TAL; the padding gives empty chunks
        if not chunk:
            continue
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError:
            raise BuildError(f"{path}: data record {record}: annotation text is not UTF-8") from None
        stamp, *texts = text.removesuffix("\x14").split("\x14")
        onset, _, duration = stamp.partition("\x15")
        if (not text.endswith("\x14") or not texts or not re.fullmatch(r"[+-]\d+(\.\d*)?", onset)
                or (duration and not re.fullmatch(r"\d+(\.\d*)?", duration))):
            raise BuildError(f"{path}: data record {record}: malformed time-stamped annotation {text!r}")
        tals.append(_Tal(Decimal(onset), duration or None, tuple(texts)))
    return tals


def _annotation_slices(header: EdfHeader) -> list[slice]:
    bounds = [0]
    for n in header.samples_per_record:
        bounds.append(bounds[-1] + 2 * n)
    return [slice(bounds[i], bounds[i + 1]) for i in header.annotation_signals]


def _record_tals(header: EdfHeader, fid) -> list[tuple[_Tal, list[_Tal]]]:
    """Per data record: its time-keeping TAL and the other TALs stored in it (all annotation signals)."""
    slices = _annotation_slices(header)
    result = []
    for index in range(header.n_records):
        fid.seek(header.header_bytes + index * header.record_bytes)
        record = fid.read(header.record_bytes)
        tals = [tal for part in slices for tal in _parse_tals(header.path, index, record[part])]
        if not tals:
            raise BuildError(f"{header.path}: data record {index} has no time-keeping annotation")
        keeper, *others = tals
        if any(keeper.texts):  # a time-keeping TAL may carry annotations of its own
            others.insert(0, _Tal(keeper.onset, keeper.duration, tuple(t for t in keeper.texts if t)))
        result.append((keeper, others))
    return result


def read_annotations(path: Path) -> list[Annotation]:
    """All annotations of an EDF+ file, in file order, without the empty time-keeping entries."""
    header = read_header(path)
    if not header.annotation_signals:
        raise BuildError(f"{path}: not an EDF+ file with an annotation signal")
    with Path(path).open("rb") as fid:
        per_record = _record_tals(header, fid)
    return [Annotation(float(tal.onset), float(tal.duration) if tal.duration else None, text)
            for _, tals in per_record for tal in tals for text in tal.texts if text]


# --- cutting -----------------------------------------------------------------------------------------

def _new_header(header: EdfHeader, n_records: int, start: datetime) -> bytes:
    raw = bytearray(header.raw)
    if not 1985 <= start.year <= 2084:
        raise BuildError(f"{header.path}: the new start year {start.year} cannot be written in an EDF header")
    raw[168:176] = start.strftime("%d.%m.%y").encode("ascii")
    raw[176:184] = start.strftime("%H.%M.%S").encode("ascii")
    raw[236:244] = str(n_records).ljust(8).encode("ascii")
    match = _STARTDATE.search(bytes(raw[88:168]))
    if match:
        stamp = f"Startdate {start.day:02d}-{_MONTHS[start.month - 1]}-{start.year:04d}".encode("ascii")
        raw[88 + match.start():88 + match.end()] = stamp
    return bytes(raw)


def _annotated_records(header: EdfHeader, fid, start: int, stop: int):
    """(new start, per kept record the bytes of its annotation signals) for an EDF+ cut.

    Annotations are kept by time, not by the record that happens to store them (edflib, for one,
    stores them in the first records): those with ``onset`` in the kept span stay, shifted to the
    new start, and are packed after the time-keeping TALs in file order.
    """
    per_record = _record_tals(header, fid)
    first, last = per_record[start][0].onset, per_record[stop - 1][0].onset
    end = last + Decimal(repr(header.record_duration))
    whole = Decimal(math.floor(first))
    pending = deque(_Tal(tal.onset - whole, tal.duration, tal.texts).encode()
                    for _, tals in per_record for tal in tals if first <= tal.onset < end)
    sizes = [part.stop - part.start for part in _annotation_slices(header)]
    out = []
    for keeper, _ in per_record[start:stop]:
        signals = []
        for k, size in enumerate(sizes):
            data = _Tal(keeper.onset - whole, None, ("",)).encode() if k == 0 else b""
            while pending and len(data) + len(pending[0]) <= size:
                data += pending.popleft()
            if len(data) > size:
                raise BuildError(f"{header.path}: the time-keeping annotation no longer fits its signal")
            signals.append(data.ljust(size, b"\x00"))
        out.append(signals)
    if pending:
        raise BuildError(f"{header.path}: {len(pending)} annotations do not fit the kept records' annotation signals")
    return header.start + timedelta(seconds=int(whole)), out


def cut_records(src: Path, dst: Path, *, start: int, stop: int) -> None:
    """Write data records ``start`` (inclusive) to ``stop`` (exclusive) of ``src`` as a new EDF at ``dst``.

    Parameters
    ----------
    src : Path
        The source EDF or EDF+ file.
    dst : Path
        Where the cut file is written (parent directories are created).
    start, stop : int
        Record indices, ``0 <= start < stop <= n_records``.
    """
    header = read_header(src)
    if not 0 <= start < stop <= header.n_records:
        raise BuildError(f"{src}: cannot cut records [{start}, {stop}) from a file of {header.n_records} records")
    plus = header.edf_plus and bool(header.annotation_signals)
    with Path(src).open("rb") as fin:
        if plus:
            new_start, annotations = _annotated_records(header, fin, start, stop)
        else:
            offset = start * header.record_duration
            if offset != int(offset):
                raise BuildError(f"{src}: a plain EDF cannot start {offset} s in (not a whole second)")
            new_start, annotations = header.start + timedelta(seconds=int(offset)), None
        dst = Path(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        fin.seek(header.header_bytes + start * header.record_bytes)
        with dst.open("wb") as fout:
            fout.write(_new_header(header, stop - start, new_start))
            per_chunk = max(1, _COPY_CHUNK_BYTES // max(header.record_bytes, 1))
            for first in range(start, stop, per_chunk):
                count = min(per_chunk, stop - first)
                block = fin.read(count * header.record_bytes)
                if plus:
                    block = bytearray(block)
                    for k in range(count):
                        base = k * header.record_bytes
                        for part, data in zip(_annotation_slices(header), annotations[first - start + k]):
                            block[base + part.start:base + part.stop] = data
                fout.write(block)
