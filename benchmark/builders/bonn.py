"""T3 builder: the Bonn epilepsy segments, sets Z and O (normal) against S (epileptic).

Raw layout: one folder per set as the publisher's archives unpack, ``Z/``,
``O/``, ``S/`` (``N/`` and ``F/``, interictal, are excluded: their binary label
is ambiguous), each holding ``Z001.txt`` … with one integer sample per line.
Folder and file names are matched whatever their case (the N archive uses
``.TXT``; other copies use ``z001.txt``); line ends may be CRLF.

Every distributed segment has 4097 values. The official release copies the
files unchanged and declares 4096 samples and 23.59 s (4096 / 173.61 Hz); its
loader reads every line, so a tool sees 4097 samples whose last time stamp is
4096 / fs = 23.59 s, matching the declared duration. This builder does the
same: files are copied byte for byte under ``bonn/<SET>/<SET><nnn>.txt``, and
the metadata says 4096 samples, 23.59 s. A file must hold 4096 or 4097 numbers.

Balancing groups are the sets: the normal class is split evenly between eyes
open (Z) and eyes closed (O), and matches the epileptic class (S) in size, so
the paper's screened pool gives Z 47, O 47, S 94.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from benchmark.builders.base import BuildError, Candidate

TASK_ID = "T3"
SAMPLING_RATE = 173.61
N_SAMPLES = 4096
ACCEPTED_LINE_COUNTS = (4096, 4097)
SET_LABELS = {"Z": "normal", "O": "normal", "S": "epileptic"}
_FILE_NAME = re.compile(r"([A-Z])(\d{3})\.txt", re.IGNORECASE)

METADATA = {
    "channels": 1,
    "sampling_rate": SAMPLING_RATE,
    "n_samples": N_SAMPLES,
    "duration_sec": round(N_SAMPLES / SAMPLING_RATE, 2),
}
CLINICAL_CONTEXT = (
    f"One EEG channel sampled at {SAMPLING_RATE:.2f} Hz; the segment lasts about "
    f"{METADATA['duration_sec']:.1f} s ({N_SAMPLES} samples)."
)
QUESTION = (
    "Is this EEG recording ``normal`` or ``epileptic``? Give the label and the findings that support it."
)


def _check_samples(path: Path, display: str) -> None:
    """Every line a number, and 4096 or 4097 of them; the error names the file and line."""
    count = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.decode("ascii", errors="replace").strip()
            if not text:
                continue
            try:
                float(text)
            except ValueError:
                raise BuildError(f"{display}, line {number}: {text[:40]!r} is not a number") from None
            count += 1
    if count not in ACCEPTED_LINE_COUNTS:
        raise BuildError(f"{display}: {count} samples; a Bonn segment has 4097 (4096 are declared)")


def _set_folders(raw_dir: Path) -> dict[str, Path]:
    folders: dict[str, Path] = {}
    for entry in sorted(raw_dir.iterdir()):
        letter = entry.name.upper()
        if entry.is_dir() and letter in SET_LABELS:
            if letter in folders:
                raise BuildError(f"{raw_dir}: two folders for set {letter}: {folders[letter].name}/ and {entry.name}/")
            folders[letter] = entry
    missing = [letter for letter in SET_LABELS if letter not in folders]
    if missing:
        raise BuildError(f"{raw_dir}: no folder for Bonn set(s) {', '.join(missing)} (expected Z/, O/ and S/)")
    return folders


def _segments(letter: str, folder: Path) -> dict[int, Path]:
    segments: dict[int, Path] = {}
    for path in sorted(folder.iterdir()):
        match = _FILE_NAME.fullmatch(path.name)
        if not path.is_file() or not match:
            continue
        found = match.group(1).upper()
        if found != letter:
            raise BuildError(f"{folder.name}/{path.name}: a set {found} file in the set {letter} folder")
        index = int(match.group(2))
        if index in segments:
            raise BuildError(f"{folder.name}/: {segments[index].name} and {path.name} are the same segment")
        segments[index] = path
    if not segments:
        raise BuildError(f"{folder}: no segment files ({letter}001.txt …)")
    return segments


def balance_group(candidate: Candidate) -> str:
    """The Bonn set of a candidate (Z, O or S), read from its scenario id."""
    return candidate.scenario_id.rsplit("_", 1)[1][0]


def balance_targets(counts: Mapping[str, int]) -> dict[str, int]:
    """As many epileptic as normal segments, the normal ones split evenly between Z and O."""
    per_normal_set = min(counts["S"], 2 * min(counts["Z"], counts["O"])) // 2
    return {"Z": per_normal_set, "O": per_normal_set, "S": 2 * per_normal_set}


def collect(raw_dir: Path) -> list[Candidate]:
    """All Z, O and S segments, in set order Z, O, S and segment order within a set."""
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise BuildError(f"{raw_dir}: not a directory")
    candidates = []
    folders = _set_folders(raw_dir)
    for letter in SET_LABELS:
        folder = folders[letter]
        for index, path in sorted(_segments(letter, folder).items()):
            _check_samples(path, f"{folder.name}/{path.name}")
            label = SET_LABELS[letter]
            name = f"{letter}{index:03d}"
            candidates.append(Candidate(
                task_id=TASK_ID,
                scenario_id=f"c3_routine_bonn_{name}",
                label=label,
                gold={"label": label, "label_binary": label, "finding_tags": []},
                metadata=dict(METADATA),
                input={"clinical_context": CLINICAL_CONTEXT, "question": QUESTION, "metadata": dict(METADATA)},
                data_name=f"bonn/{letter}/{name}.txt",
                source=path,
            ))
    return candidates
