"""CHB-MIT Scalp EEG (PhysioNet ``chbmit`` 1.0.0) as T5 seizure-detection candidates.

The raw directory is PhysioNet's layout: ``chbNN/chbNN-summary.txt`` beside ``chbNN/chbNN_MM.edf``
(``chb17`` holds ``chb17a_*``, ``chb17b_*`` and ``chb17c_*``). One EDF listed in a summary is one
candidate, as in the official builder; EDFs that no summary lists (nine chb24 files) are not used.

The summaries come in several variants, all handled here: seizure lines numbered
(``Seizure 1 Start Time:``) or not (``Seizure Start Time:``, repeated for several seizures in chb24),
one to three spaces after the colon, clock times without zero padding and past midnight
(``24:44:29``), files without ``File Start/End Time`` lines (all of chb24), ``Channels changed:``
blocks between files, and varying blank-line spacing. Any other line is an error, so a damaged
summary is reported instead of silently losing seizures.

Duration, channel count and sampling rate come from each EDF's header (records x record duration),
which is what the official release freezes into the metadata.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.builders.base import BuildError, Candidate
from benchmark.builders.edf_cut import read_header

logger = logging.getLogger(__name__)

MONTAGE = "bipolar_longitudinal"

_LINE_PATTERNS = {
    "sampling_rate": re.compile(r"Data Sampling Rate:\s*(\d+(?:\.\d+)?)\s*Hz"),
    "separator": re.compile(r"\*+"),
    "channels": re.compile(r"Channels (?:in EDF Files|changed):"),
    "channel": re.compile(r"Channel\s+(\d+):\s*(\S+)"),
    "file": re.compile(r"File Name:\s*(\S+\.edf)"),
    "start_clock": re.compile(r"File Start Time:\s*(\d+):(\d\d):(\d\d)"),
    "end_clock": re.compile(r"File End Time:\s*(\d+):(\d\d):(\d\d)"),
    "count": re.compile(r"Number of Seizures in File:\s*(\d+)"),
    "seizure_start": re.compile(r"Seizure(?:\s+\d+)?\s+Start Time:\s*(\d+(?:\.\d+)?)\s*seconds"),
    "seizure_end": re.compile(r"Seizure(?:\s+\d+)?\s+End Time:\s*(\d+(?:\.\d+)?)\s*seconds"),
}
_SUBJECT = re.compile(r"chb\d+")


@dataclass
class SummaryFile:
    """One ``File Name:`` block of a summary."""

    name: str  # "chb01_03.edf"
    line: int  # line number of its "File Name:" entry
    channels: tuple[str, ...]  # the channel list in force for this file
    start_clock: int | None = None  # seconds after midnight of the first day; may exceed 86400
    end_clock: int | None = None
    declared: int | None = None  # "Number of Seizures in File"
    seizures: list[tuple[float, float]] = field(default_factory=list)


def _clock_seconds(match: re.Match) -> int:
    hours, minutes, seconds = (int(g) for g in match.groups())
    return 3600 * hours + 60 * minutes + seconds


def parse_summary(path: Path) -> list[SummaryFile]:
    """Parse a ``chbNN-summary.txt`` into its file entries, in order.

    Raises
    ------
    BuildError
        On an unrecognised line, a seizure line outside a file block, an end without a start,
        an end not after its start, a seizure count that disagrees with the listed seizures,
        non-consecutive channel numbers or a file listed twice; the message names ``path:line``.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot read the summary ({exc})") from None

    files: list[SummaryFile] = []
    channels: list[str] = []
    in_channel_block = False
    pending_start: tuple[float, int] | None = None

    def fail(lineno: int, message: str) -> BuildError:
        return BuildError(f"{path}:{lineno}: {message}")

    def close(entry: SummaryFile | None, lineno: int) -> None:
        if entry is None:
            return
        if pending_start is not None:
            raise fail(pending_start[1], f"seizure start in {entry.name} has no end time")
        if entry.declared is None:
            raise fail(entry.line, f"{entry.name} has no 'Number of Seizures in File' line")
        if entry.declared != len(entry.seizures):
            raise fail(entry.line, f"{entry.name} declares {entry.declared} seizures but lists "
                                   f"{len(entry.seizures)} (block ends before line {lineno})")

    current: SummaryFile | None = None
    for lineno, text in enumerate(lines, start=1):
        text = text.strip()
        if not text:
            continue
        kind, match = next(((k, m) for k, p in _LINE_PATTERNS.items() if (m := p.fullmatch(text))), (None, None))
        if kind is None:
            raise fail(lineno, f"unrecognised line {text!r}")
        if kind in ("sampling_rate", "separator"):
            continue
        if kind == "channels":
            close(current, lineno)
            current, channels, in_channel_block = None, [], True
            continue
        if kind == "channel":
            if not in_channel_block:
                raise fail(lineno, "channel line outside a channel list")
            if int(match.group(1)) != len(channels) + 1:
                raise fail(lineno, f"channel {match.group(1)} follows channel {len(channels)}")
            channels.append(match.group(2))
            continue
        if kind == "file":
            close(current, lineno)
            in_channel_block = False
            name = match.group(1)
            if any(f.name == name for f in files):
                raise fail(lineno, f"{name} is listed twice")
            current = SummaryFile(name=name, line=lineno, channels=tuple(channels))
            files.append(current)
            continue
        if current is None:
            raise fail(lineno, f"{text!r} before any 'File Name:' line")
        if kind == "start_clock":
            current.start_clock = _clock_seconds(match)
        elif kind == "end_clock":
            current.end_clock = _clock_seconds(match)
        elif kind == "count":
            current.declared = int(match.group(1))
        elif kind == "seizure_start":
            if pending_start is not None:
                raise fail(lineno, f"seizure start in {current.name} before the previous one ended")
            pending_start = (float(match.group(1)), lineno)
        elif kind == "seizure_end":
            if pending_start is None:
                raise fail(lineno, f"seizure end in {current.name} without a start")
            onset, offset = pending_start[0], float(match.group(1))
            if offset <= onset:
                raise fail(lineno, f"seizure in {current.name} ends at {offset} s, not after its start {onset} s")
            current.seizures.append((onset, offset))
            pending_start = None
    close(current, len(lines) + 1)
    return files


def _clinical_context(metadata: dict) -> str:
    minutes = metadata["duration_sec"] / 60
    return (f"scalp EEG recorded continuously during long-term epilepsy monitoring in a paediatric unit, "
            f"{metadata['n_channels']} channels in a bipolar longitudinal montage, "
            f"sampled at {metadata['sampling_rate']:.0f} Hz, about {minutes:.0f} minutes long.")


_QUESTION = ("Look through the whole recording for electrographic seizures. Give every seizure as an "
             "onset/offset interval in seconds from the start of the recording; if there is none, "
             "return an empty list.")


def _candidate(edf: Path, patient_dir: Path, entry: SummaryFile) -> Candidate:
    header = read_header(edf)
    metadata = {
        "n_channels": len(header.signal_labels),
        "montage": MONTAGE,
        "sampling_rate": float(header.sampling_rate),
        "duration_sec": float(header.duration),
    }
    events = [[onset, offset] for onset, offset in entry.seizures]
    label = "seizure" if events else "no_seizure"
    stem = entry.name.removesuffix(".edf")
    return Candidate(
        task_id="T5",
        scenario_id=f"c1_seizure_{stem}",
        label=label,
        gold={"label": label, "has_seizure": bool(events), "n_seizures": len(events), "seizure_events": events},
        metadata=metadata,
        input={"clinical_context": _clinical_context(metadata), "question": _QUESTION, "metadata": dict(metadata)},
        data_name=f"chbmit/{patient_dir.name}/{entry.name}",
        source=edf,
        subject=_SUBJECT.match(stem).group(),
    )


def collect(raw_dir: Path, *, allow_missing: bool = False) -> list[Candidate]:
    """One T5 candidate per EDF listed in a CHB-MIT summary.

    Parameters
    ----------
    raw_dir : Path
        A directory in PhysioNet's layout (``chbNN/chbNN-summary.txt`` and the EDFs beside it).
    allow_missing : bool
        If False (default) a summary entry whose EDF is absent raises BuildError naming the summary
        and line; if True the entry is skipped with a warning (for partial downloads).
    """
    raw_dir = Path(raw_dir)
    summaries = sorted(raw_dir.glob("chb*/chb*-summary.txt"))
    if not summaries:
        raise BuildError(f"{raw_dir}: no chbNN/chbNN-summary.txt found (expected PhysioNet's chbmit layout)")
    candidates: list[Candidate] = []
    for summary in summaries:
        patient_dir = summary.parent
        for entry in parse_summary(summary):
            if not _SUBJECT.match(entry.name):
                raise BuildError(f"{summary}:{entry.line}: {entry.name} is not a CHB-MIT file name")
            edf = patient_dir / entry.name
            if not edf.is_file():
                if allow_missing:
                    logger.warning("%s:%d: %s is missing; skipped", summary, entry.line, entry.name)
                    continue
                raise BuildError(f"{summary}:{entry.line}: lists {entry.name}, which is not in {patient_dir}")
            candidates.append(_candidate(edf, patient_dir, entry))
    return candidates
