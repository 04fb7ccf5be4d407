"""T1 builder: the EEG-strict subset of MedMCQA, with deterministically shuffled options.

Raw layout: the MedMCQA release's JSON-lines files ``train.json``, ``dev.json``
and ``test.json`` (any of them; ``cop`` is 1-based there, 1 = ``opa``).

The official filter script is not public; what is public is its output (38
questions, each tagged with ``eeg_strict_categories``). The rule below is ours,
written to be strict about EEG and to give every official question exactly its
official categories:

- only single-choice questions with an answer key (``choice_type == "single"``,
  ``cop`` 1-4) are eligible; the test split, which has no answers, yields none;
- only the question text is searched (options and explanations are not: an
  option "Alpha waves" does not make a question about EEG), case-insensitively;
- the categories, in this order, are
  ``core_eeg`` (the words EEG or electroencephalogram),
  ``rhythm_bands`` (alpha/beta/theta/delta/gamma/mu waves, rhythm or activity,
  ignored when the question is about an ECG, where "delta wave" means
  pre-excitation),
  ``sleep_eeg`` (polysomnography, sawtooth waves, sleep spindles, K-complexes,
  hypnograms, vertex waves),
  ``critical_care_eeg`` (burst suppression, triphasic waves, periodic
  lateralised epileptiform discharges, continuous EEG monitoring),
  ``classic_eeg_signs`` (brain death, electrocerebral silence, isoelectric or
  flat EEG), and
  ``evoked_potential`` (evoked potentials and responses, VEP, BAEP/BAER/BERA,
  SSEP, P300, N400, mismatch negativity/MMN, event-related potentials);
- a question is EEG-strict when it has at least one category.

Terms are matched on word boundaries, so a glued "b) EEGc)" in an enumerated
question is not an EEG mention, while the abbreviation MMN matches however it
is capitalised (one official question is tagged ``evoked_potential`` for its
"Mmn").

Options: seed = int(sha256(scenario_id)[:16], 16) with scenario_id
``k0_medmcqa_<id>``, then ``random.Random(seed).shuffle`` of [opa, opb, opc,
opd]; the gold letter follows its text. The one official question also in the
public dev split (42924e5a) is reproduced exactly with this key; the bare
MedMCQA id as key does not reproduce it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

from benchmark.builders.base import BuildError, Candidate

TASK_ID = "T1"
SPLIT_FILES = ("train.json", "dev.json", "test.json")
LETTERS = ("A", "B", "C", "D")
_OPTION_FIELDS = ("opa", "opb", "opc", "opd")

_CARDIAC_CONTEXT = re.compile(
    r"\b(?:ECG|EKG|WPW)s?\b|electrocardiogra|wolff|pre-?excitation|\bQRS\b|\bPR\s+interval", re.IGNORECASE)

CATEGORY_PATTERNS: dict[str, re.Pattern[str]] = {
    "core_eeg": re.compile(r"\bEEGs?\b|electro-?encephalogra", re.IGNORECASE),
    "rhythm_bands": re.compile(
        r"\b(?:alpha|beta|theta|delta|gamma|mu)[\s-]+(?:waves?|rhythms?|activity)\b", re.IGNORECASE),
    "sleep_eeg": re.compile(
        r"polysomnogra|\bPSG\b|\bsaw-?tooth\s+waves?\b|\bsleep\s+spindles?\b|\bK[\s-]?complex(?:es)?\b"
        r"|\bhypnogram|\bvertex\s+(?:sharp\s+)?waves?\b", re.IGNORECASE),
    "critical_care_eeg": re.compile(
        r"\bburst[\s-]+suppression\b|\btriphasic\s+wave|\bPLEDs?\b"
        r"|periodic\s+lateral(?:is|iz)ed\s+epileptiform|\bcontinuous\s+EEG\s+monitoring\b", re.IGNORECASE),
    "classic_eeg_signs": re.compile(
        r"\bbrain[\s-]+dea(?:th|d)\b|\belectrocerebral\s+silence\b|\b(?:isoelectric|flat)\s+EEG\b",
        re.IGNORECASE),
    "evoked_potential": re.compile(
        r"\bevoked\s+(?:potentials?|responses?)\b|\b(?:VEP|BAEP|BAER|BERA|SSEP|P300|N400|MMN)s?\b"
        r"|\bmismatch\s+negativity\b|\bevent[\s-]related\s+potentials?\b", re.IGNORECASE),
}


def eeg_strict_categories(question: str) -> list[str]:
    """The EEG-strict categories of a question text, in the fixed category order; [] if not EEG-strict."""
    categories = [name for name, pattern in CATEGORY_PATTERNS.items() if pattern.search(question)]
    if "rhythm_bands" in categories and "core_eeg" not in categories and _CARDIAC_CONTEXT.search(question):
        categories.remove("rhythm_bands")
    return categories


def shuffle_options(options: list[str], gold_index: int, seed_key: str) -> tuple[dict[str, str], str]:
    """Options as ``{A..D: text}`` after the seeded shuffle, and the letter the gold text lands on.

    Like the official builder, the gold letter is the first letter whose text
    equals the gold text.
    """
    gold_text = options[gold_index]
    shuffled = list(options)
    seed = int(hashlib.sha256(seed_key.encode("utf-8")).hexdigest()[:16], 16)
    random.Random(seed).shuffle(shuffled)
    lettered = dict(zip(LETTERS, shuffled))
    return lettered, next(letter for letter, text in lettered.items() if text == gold_text)


def scenario_id_of(medmcqa_id: str) -> str:
    return f"k0_medmcqa_{medmcqa_id}"


def _answer_index(path: Path, number: int, row: dict[str, Any]) -> int | None:
    """0-based index of the correct option, or None for a row without an answer key."""
    cop = row.get("cop")
    if cop is None or cop == -1:
        return None
    if isinstance(cop, bool) or not isinstance(cop, int) or not 1 <= cop <= 4:
        hint = " (0 suggests the 0-based Hugging Face copy; use the original files)" if cop == 0 else ""
        raise BuildError(f"{path}, line {number}: \"cop\" must be 1-4 (1-based, 1 = opa), got {cop!r}{hint}")
    return cop - 1


def _candidate(path: Path, number: int, row: dict[str, Any]) -> Candidate | None:
    for field in ("id", "question", *_OPTION_FIELDS):
        if not isinstance(row.get(field), str):
            raise BuildError(f"{path}, line {number}: \"{field}\" must be a string")
    answer = _answer_index(path, number, row)
    if answer is None or row.get("choice_type") != "single":
        return None
    question = row["question"].strip()
    categories = eeg_strict_categories(question)
    if not categories:
        return None
    scenario_id = scenario_id_of(row["id"])
    options, gold = shuffle_options([row[field].strip() for field in _OPTION_FIELDS], answer, scenario_id)
    return Candidate(
        task_id=TASK_ID,
        scenario_id=scenario_id,
        label=gold,
        gold={"answer": gold, "answer_text": options[gold]},
        metadata={},
        input={
            "question": question,
            "options": options,
            "subject_name": row.get("subject_name"),
            "eeg_strict_categories": categories,
        },
    )


def _read_split(path: Path, seen: dict[str, str]) -> list[Candidate]:
    candidates = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BuildError(f"{path}, line {number}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise BuildError(f"{path}, line {number}: expected a JSON object")
            candidate = _candidate(path, number, row)
            if candidate is None:
                continue
            where = f"{path.name}, line {number}"
            if candidate.scenario_id in seen:
                raise BuildError(f"{where}: question id {row['id']} already appears in {seen[candidate.scenario_id]}")
            seen[candidate.scenario_id] = where
            candidates.append(candidate)
    return candidates


def collect(raw_dir: Path) -> list[Candidate]:
    """EEG-strict MedMCQA questions of every split present, in file order (train, dev, test)."""
    raw_dir = Path(raw_dir)
    paths = [raw_dir / name for name in SPLIT_FILES if (raw_dir / name).is_file()]
    if not paths:
        raise BuildError(f"{raw_dir}: no MedMCQA split file ({', '.join(SPLIT_FILES)})")
    seen: dict[str, str] = {}
    return [candidate for path in paths for candidate in _read_split(path, seen)]
