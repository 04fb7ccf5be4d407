"""T4 builder: OpenNeuro ds004504 (v1.0.8), eyes-closed resting EEG of AD, FTD and healthy participants.

Raw layout: the BIDS dataset root, with ``participants.tsv`` (columns
``participant_id``, ``Gender``, ``Age``, ``Group``, ``MMSE``; groups A, F, C)
and per subject ``sub-XXX/eeg/sub-XXX_task-eyesclosed_eeg.set`` (EEGLAB, data
embedded, or in a ``.fdt`` beside it, which is then copied too) with its
``_eeg.json`` and ``_channels.tsv`` sidecars. ``derivatives/`` is not used: the
benchmark reads the raw recordings.

The record metadata comes from the sidecars, as in the official release: the
EEG channels of ``_channels.tsv`` in file order, ``SamplingFrequency``,
``RecordingDuration``, ``EEGPlacementScheme`` and ``EEGReference`` from
``_eeg.json``, age and gender from ``participants.tsv``. MMSE is never used:
it nearly gives the cohort away.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.builders.base import BuildError, Candidate

TASK_ID = "T4"
TASK_LABEL = "eyesclosed"
GROUP_LABELS = {"A": "AD", "F": "FTD", "C": "HC"}
GENDER_WORDS = {"F": "female", "M": "male"}
REQUIRED_COLUMNS = ("participant_id", "Gender", "Age", "Group")
PARTICIPANT_ID = re.compile(r"sub-[A-Za-z0-9]+")
QUESTION = (
    "From this eyes-closed resting-state EEG and the study context, which research cohort does the "
    "participant belong to: Alzheimer's disease (AD), frontotemporal dementia (FTD) or healthy control "
    "(HC)? This asks for a cohort label, not a diagnosis. List the EEG findings that support your answer."
)


@dataclass(frozen=True)
class Participant:
    """One row of participants.tsv, as the builder uses it."""

    participant_id: str
    gender: str
    age: int
    label: str
    line: int


def read_participants(path: Path) -> list[Participant]:
    """The participants of ``participants.tsv`` in file order; any bad row is a BuildError naming its line."""
    path = Path(path)
    if not path.is_file():
        raise BuildError(f"{path}: missing; the raw folder must be the ds004504 BIDS root")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows:
        raise BuildError(f"{path}: empty")
    header = [name.strip() for name in rows[0]]
    absent = [name for name in REQUIRED_COLUMNS if name not in header]
    if absent:
        raise BuildError(f"{path}, line 1: missing column(s) {', '.join(absent)}")
    column = {name: header.index(name) for name in REQUIRED_COLUMNS}
    participants = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise BuildError(f"{path}, line {line}: {len(row)} fields, the header has {len(header)}")
        value = {name: row[index].strip() for name, index in column.items()}
        where = f"{path}, line {line}"
        if not PARTICIPANT_ID.fullmatch(value["participant_id"]):
            raise BuildError(f"{where}: participant_id must look like sub-001, got {value['participant_id']!r}")
        if value["Group"] not in GROUP_LABELS:
            raise BuildError(f"{where}: unknown Group {value['Group']!r} for {value['participant_id']} "
                             f"(expected A, F or C)")
        if value["Gender"] not in GENDER_WORDS:
            raise BuildError(f"{where}: Gender must be M or F, got {value['Gender']!r}")
        if not value["Age"].isdigit():
            raise BuildError(f"{where}: Age must be a whole number of years, got {value['Age']!r}")
        participants.append(Participant(value["participant_id"], value["Gender"], int(value["Age"]),
                                        GROUP_LABELS[value["Group"]], line))
    return participants


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise BuildError(f"{path}: missing BIDS sidecar")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(value, dict):
        raise BuildError(f"{path}: expected a JSON object")
    return value


def _eeg_channel_names(path: Path) -> list[str]:
    if not path.is_file():
        raise BuildError(f"{path}: missing BIDS sidecar")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    header = [name.strip() for name in rows[0]] if rows else []
    if "name" not in header or "type" not in header:
        raise BuildError(f"{path}, line 1: needs the columns name and type")
    name_at, type_at = header.index("name"), header.index("type")
    names = [row[name_at].strip() for row in rows[1:] if len(row) > type_at and row[type_at].strip() == "EEG"]
    if not names:
        raise BuildError(f"{path}: no channel of type EEG")
    return names


def _sidecar_field(sidecar: dict[str, Any], field: str, path: Path, *, text: bool = False) -> Any:
    value = sidecar.get(field)
    valid = isinstance(value, str) if text else isinstance(value, (int, float)) and not isinstance(value, bool)
    if not valid:
        raise BuildError(f"{path}: {field} is missing or not a {'string' if text else 'number'}")
    return value


def _check_recording(path: Path, participant: Participant, participants_tsv: Path) -> None:
    listed = f"({participants_tsv.name} line {participant.line} lists {participant.participant_id})"
    if not path.is_file():
        raise BuildError(f"{path}: missing {listed}; the EEGLAB files of a DataLad or git-annex copy "
                         f"must be fetched, not only the sidecars")
    with path.open("rb") as handle:
        if handle.read(6) != b"MATLAB":
            raise BuildError(f"{path}: not an EEGLAB .set (a MATLAB file) {listed}")


def _copier(recording: Path) -> Callable[[Path], None]:
    """Copy the .set and, when its data live beside it, the .fdt of the same name."""
    def write(target: Path) -> None:
        shutil.copyfile(recording, target)
        data_file = recording.with_suffix(".fdt")
        if data_file.is_file():
            shutil.copyfile(data_file, target.with_suffix(".fdt"))
    return write


def _clinical_context(participant: Participant, metadata: dict[str, Any]) -> str:
    return (
        f"Participant: {participant.age}-year-old {GENDER_WORDS[participant.gender]}. Recording: "
        f"eyes-closed resting-state EEG, {metadata['channels']} channels in the {metadata['montage']} system, "
        f"sampled at {metadata['sampling_rate']:g} Hz, about {metadata['duration_sec']:.0f} s long."
    )


def _candidate(raw_dir: Path, participant: Participant) -> Candidate:
    subject = participant.participant_id
    stem = f"{subject}_task-{TASK_LABEL}"
    eeg_dir = raw_dir / subject / "eeg"
    recording = eeg_dir / f"{stem}_eeg.set"
    _check_recording(recording, participant, raw_dir / "participants.tsv")
    sidecar_path = eeg_dir / f"{stem}_eeg.json"
    sidecar = _read_json(sidecar_path)
    names = _eeg_channel_names(eeg_dir / f"{stem}_channels.tsv")
    recording_facts = {
        "channels": len(names),
        "channel_names": names,
        "sampling_rate": _sidecar_field(sidecar, "SamplingFrequency", sidecar_path),
        "duration_sec": _sidecar_field(sidecar, "RecordingDuration", sidecar_path),
        "montage": _sidecar_field(sidecar, "EEGPlacementScheme", sidecar_path, text=True),
        "reference": _sidecar_field(sidecar, "EEGReference", sidecar_path, text=True),
    }
    metadata = {**recording_facts, "gender": participant.gender, "age": participant.age}
    data_name = f"ds004504/{subject}/eeg/{stem}_eeg.set"
    has_data_file = recording.with_suffix(".fdt").is_file()
    return Candidate(
        task_id=TASK_ID,
        scenario_id=f"c3_cohort_ds004504_{stem}",
        label=participant.label,
        gold={"label": participant.label, "finding_tags": []},
        metadata=metadata,
        input={
            "clinical_context": _clinical_context(participant, metadata),
            "question": QUESTION,
            "metadata": {"age": participant.age, "gender": participant.gender, **recording_facts},
        },
        data_name=data_name,
        source=None if has_data_file else recording,
        write=_copier(recording) if has_data_file else None,
        subject=subject,
    )


def collect(raw_dir: Path) -> list[Candidate]:
    """One candidate per participant, in participants.tsv order."""
    raw_dir = Path(raw_dir)
    return [_candidate(raw_dir, participant) for participant in read_participants(raw_dir / "participants.tsv")]
