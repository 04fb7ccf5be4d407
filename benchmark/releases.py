"""Release directories in the official layout: validation, import into a suite, and export.

A release directory holds, relative to its root::

    benchmark/benchmark.json           name, version and tasks of the release (optional)
    benchmark/scenarios/Tn.jsonl       one scenario per line
    benchmark/runtime/Tn.jsonl         {"scenario_id", "records": [{"record_id", "data_path"}]}
    benchmark/answer_keys/Tn.jsonl     {"scenario_id", "gold": {...}}
    benchmark/manifests/files.jsonl    {"display_id", "scenario_id", "data_path", "size_bytes"} (optional)
    data/...                           the recordings the runtime lines point to

``import_release`` checks that every scenario has its runtime line, answer key and data file (and the
file size the manifest gives), reports every problem with its file and line, and then creates one suite,
or nothing at all. Each instance keeps its original lines verbatim, so ``export_release`` writes the
files back byte for byte, and gets a random opaque record id: the release's sequential record ids and
the scenario ids carry the labels (REFERENCE §5.1) and are never shown to an agent.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from benchmark.builders.base import file_sha256
from benchmark.models import Instance, Release, Suite, Task
from benchmark.prompts import OFFICIAL_TOOLS, prompt_metadata
from benchmark.scoring.official import TASK_IDS
from benchmark.scoring.seizure import subject_of

DESCRIPTOR = "benchmark/benchmark.json"
SCENARIOS = "benchmark/scenarios/{task}.jsonl"
RUNTIME = "benchmark/runtime/{task}.jsonl"
ANSWER_KEYS = "benchmark/answer_keys/{task}.jsonl"
FILE_MANIFEST = "benchmark/manifests/files.jsonl"
# Only these trees make up a release; anything else in the directory (a code checkout, run outputs)
# does not change what is imported, so it does not count towards the release's checksum either.
RELEASE_TREES = ("benchmark", "data")

RECORD_ID_PREFIX = "rec_"
_RECORD_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # base32, lower case
_RECORD_ID_LENGTH = 10
_RELEASE_ID_SHAPE = re.compile(r"(?P<prefix>.*?)(?P<digits>[0-9]+)")
_SUBJECT_PATTERNS = {
    "T4": re.compile(r"(sub-[A-Za-z0-9]+)"),
    "T6": re.compile(r"(S[CT]\d{3})\d"),  # Sleep-EDF SC4ssN / ST7ssN: subject ss, night N
}


class ReleaseError(Exception):
    """A release that cannot be imported or exported; ``problems`` lists every problem found."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class _Line:
    """One JSON line of a release file: where it is, its text as written and its value."""

    path: str
    number: int
    text: str
    value: dict

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"

    def stored(self) -> dict:
        return {"line": self.number, "text": self.text}


@dataclass
class _Candidate:
    """A scenario that passed validation, with everything its instance needs."""

    task: str
    position: int
    scenario: _Line
    runtime: _Line
    answer_key: _Line
    manifest: _Line | None
    release_record_id: str
    data_path: str
    metadata: dict
    duration_sec: float | None = None


@dataclass
class ImportResult:
    """What ``import_release`` did: the suite, whether it is new, counts per task and what it skipped."""

    suite: Suite
    created: bool
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[dict] = field(default_factory=list)


# ── reading ─────────────────────────────────────────────────────────────────────────────────

def _read_jsonl(root: Path, relative: str, problems: list[str]) -> list[_Line]:
    """The JSON-object lines of ``relative``; every unreadable line is added to ``problems``."""
    try:
        text = (root / relative).read_bytes().decode("utf-8")
    except OSError as exc:
        problems.append(f"{relative}: cannot be read ({exc.strerror or exc})")
        return []
    except UnicodeDecodeError as exc:
        problems.append(f"{relative}: not UTF-8 text ({exc.reason} at byte {exc.start})")
        return []
    lines = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"{relative}:{number}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(value, dict):
            problems.append(f"{relative}:{number}: expected a JSON object, got {type(value).__name__}")
            continue
        lines.append(_Line(relative, number, raw, value))
    return lines


def _read_descriptor(root: Path, problems: list[str]) -> tuple[dict, str]:
    path = root / DESCRIPTOR
    if not path.is_file():
        return {}, ""
    try:
        text = path.read_bytes().decode("utf-8")  # bytes, so an export can write it back unchanged
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{DESCRIPTOR}: cannot be read ({exc})")
        return {}, ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{DESCRIPTOR}:{exc.lineno}: invalid JSON ({exc.msg})")
        return {}, text
    if not isinstance(value, dict):
        problems.append(f"{DESCRIPTOR}:1: expected a JSON object")
        return {}, text
    return value, text


def _by_scenario(lines: list[_Line], problems: list[str]) -> dict[str, _Line]:
    found: dict[str, _Line] = {}
    for line in lines:
        scenario_id = line.value.get("scenario_id")
        if not isinstance(scenario_id, str) or not scenario_id:
            problems.append(f"{line.where}: missing or empty \"scenario_id\"")
        elif len(scenario_id) > _longest("scenario_id"):
            problems.append(f"{line.where}: \"scenario_id\" is longer than {_longest('scenario_id')} characters")
        elif scenario_id in found:
            first = found[scenario_id].number
            problems.append(f"{line.where}: scenario {scenario_id} already appears on line {first}")
        else:
            found[scenario_id] = line
    return found


def _read_file_manifest(root: Path, problems: list[str]) -> dict[str, _Line]:
    """Manifest lines by data path, or nothing when the release has no manifest."""
    if not (root / FILE_MANIFEST).is_file():
        return {}
    entries: dict[str, _Line] = {}
    for line in _read_jsonl(root, FILE_MANIFEST, problems):
        data_path, size = line.value.get("data_path"), line.value.get("size_bytes")
        if not isinstance(data_path, str) or not data_path:
            problems.append(f"{line.where}: missing or empty \"data_path\"")
        elif size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
            problems.append(f"{line.where}: \"size_bytes\" must be a whole number of bytes, got {size!r}")
        elif data_path in entries:
            problems.append(f"{line.where}: {data_path} already appears on line {entries[data_path].number}")
        else:
            entries[data_path] = line
    return entries


# ── validation of one task ──────────────────────────────────────────────────────────────────

def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _channel_count(metadata: Mapping[str, Any]) -> int | None:
    for key in ("n_channels", "channels"):
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    for key in ("channels", "channel_names"):
        if isinstance(metadata.get(key), list):
            return len(metadata[key])
    return None


def _check_scenario(line: _Line, task: str, known_tools: set[str], problems: list[str]) -> bool:
    value, where = line.value, line.where
    before = len(problems)
    if value.get("task_id") != task:
        problems.append(f"{where}: \"task_id\" is {value.get('task_id')!r}, expected {task!r} in this file")
    for key in ("input", "expected_output_schema", "access"):
        if not isinstance(value.get(key), dict):
            problems.append(f"{where}: \"{key}\" must be a JSON object")
    tools = (value.get("access") or {}).get("allowed_tools", []) if isinstance(value.get("access"), dict) else []
    if not isinstance(tools, list) or not all(isinstance(name, str) for name in tools):
        problems.append(f"{where}: \"access.allowed_tools\" must be a list of tool names")
    elif unknown := [name for name in tools if name not in known_tools]:
        problems.append(f"{where}: unknown tools in \"access.allowed_tools\": {', '.join(unknown)}")
    records = value.get("records")
    if task == "T1":
        options = (value.get("input") or {}).get("options") if isinstance(value.get("input"), dict) else None
        if not isinstance(options, dict) or not options:
            problems.append(f"{where}: a T1 scenario needs \"input.options\"")
        if records not in ([], None):
            problems.append(f"{where}: a T1 scenario has no records")
    elif not isinstance(records, list) or len(records) != 1:
        problems.append(f"{where}: a {task} scenario needs exactly one record, found {records!r:.60}")
    elif not isinstance(records[0], dict) or not isinstance(records[0].get("record_id"), str):
        problems.append(f"{where}: the record needs a \"record_id\"")
    elif len(records[0]["record_id"]) > _longest("release_record_id"):
        problems.append(f"{where}: the \"record_id\" is longer than {_longest('release_record_id')} characters")
    elif not isinstance(records[0].get("metadata", {}), dict):
        problems.append(f"{where}: the record's \"metadata\" must be a JSON object")
    return len(problems) == before


def _runtime_path(line: _Line, record_id: str | None, problems: list[str]) -> str | None:
    """The data path a runtime line gives for ``record_id`` ('' for T1), or None after a problem."""
    records = line.value.get("records")
    if record_id is None:
        if records not in ([], None):
            problems.append(f"{line.where}: a T1 runtime line has no records")
            return None
        return ""
    if not isinstance(records, list) or len(records) != 1 or not isinstance(records[0], dict):
        problems.append(f"{line.where}: expected exactly one record with a \"data_path\"")
        return None
    if records[0].get("record_id") != record_id:
        problems.append(
            f"{line.where}: record {records[0].get('record_id')!r} does not match the scenario's {record_id!r}"
        )
        return None
    data_path = records[0].get("data_path")
    parts = PurePosixPath(data_path).parts if isinstance(data_path, str) else ()
    if not parts or PurePosixPath(data_path).is_absolute() or ".." in parts or "\\" in data_path:
        problems.append(f"{line.where}: \"data_path\" must be a path inside the release, got {data_path!r}")
        return None
    return data_path


def _edf_duration(path: Path) -> float:
    """Duration in seconds of the whole data records of an EDF file."""
    from tools_app.edf import EdfRecording

    recording = EdfRecording(path)
    return round(recording.n_times / recording.sfreq, 6)


def _validate_task(
    root: Path,
    task: str,
    known_tools: set[str],
    file_manifest: dict[str, _Line],
    *,
    skip_missing: bool,
    problems: list[str],
    skipped: list[dict],
) -> list[_Candidate]:
    scenario_path, runtime_path, answer_path = (
        pattern.format(task=task) for pattern in (SCENARIOS, RUNTIME, ANSWER_KEYS)
    )
    scenarios = _by_scenario(_read_jsonl(root, scenario_path, problems), problems)
    if not scenarios:
        problems.append(f"{scenario_path}: no scenarios")
    runtime = _companion_lines(root, runtime_path, task, problems)
    answers = _companion_lines(root, answer_path, task, problems)

    candidates = []
    seen_records: dict[str, _Line] = {}
    for position, (scenario_id, line) in enumerate(scenarios.items()):
        if not _check_scenario(line, task, known_tools, problems):
            continue
        record = line.value["records"][0] if task != "T1" else None
        record_id = record["record_id"] if record else None
        if record_id is not None:
            if record_id in seen_records:
                problems.append(
                    f"{line.where}: record {record_id} is already used on line {seen_records[record_id].number}"
                )
            seen_records[record_id] = line
        runtime_line = runtime.get(scenario_id) if runtime is not None else None
        answer_line = answers.get(scenario_id) if answers is not None else None
        if runtime_line is None and runtime is not None:
            problems.append(f"{line.where}: scenario {scenario_id} has no line in {runtime_path}")
        if answer_line is None and answers is not None:
            problems.append(f"{line.where}: scenario {scenario_id} has no answer key in {answer_path}")
        elif answer_line is not None and not isinstance(answer_line.value.get("gold"), dict):
            problems.append(f"{answer_line.where}: \"gold\" must be a JSON object")
            answer_line = None
        if runtime_line is None or answer_line is None:
            continue
        data_path = _runtime_path(runtime_line, record_id, problems)
        if data_path is None:
            continue
        metadata = (record or {}).get("metadata") or {}
        candidate = _Candidate(
            task=task, position=position, scenario=line, runtime=runtime_line, answer_key=answer_line,
            manifest=file_manifest.get(data_path) if data_path else None,
            release_record_id=record_id or "", data_path=data_path, metadata=metadata,
            duration_sec=_number(metadata.get("duration_sec")),
        )
        if task == "T5" and not _has_subject(candidate, problems):
            continue
        if data_path and not _check_data_file(root, candidate, skip_missing, problems, skipped):
            continue
        if task == "T5" and candidate.duration_sec is None and not _read_edf_duration(root, candidate, problems):
            continue
        candidates.append(candidate)
    for lines in (runtime or {}, answers or {}):
        for scenario_id, line in lines.items():
            if scenario_id not in scenarios:
                problems.append(f"{line.where}: scenario {scenario_id} is not in {scenario_path}")
    return candidates


def _has_subject(candidate: _Candidate, problems: list[str]) -> bool:
    """Whether a T5 scenario id names its CHB-MIT subject (Event-F1 is averaged over subjects)."""
    try:
        subject_of(candidate.scenario.value["scenario_id"])
    except ValueError as exc:
        problems.append(f"{candidate.scenario.where}: {exc}")
        return False
    return True


def _read_edf_duration(root: Path, candidate: _Candidate, problems: list[str]) -> bool:
    """Fill in a T5 duration from the EDF header, as the official exporter does when metadata lacks it."""
    try:
        candidate.duration_sec = _edf_duration(root / candidate.data_path)
    except (OSError, ValueError) as exc:
        problems.append(f"{candidate.runtime.where}: no duration_sec, and the EDF header is unreadable ({exc})")
        return False
    return True


def _companion_lines(root: Path, relative: str, task: str, problems: list[str]) -> dict[str, _Line] | None:
    """The lines of a runtime or answer-key file by scenario id; None (and a problem) if it is missing."""
    if not (root / relative).is_file():
        problems.append(f"{relative}: missing; every {task} scenario needs its line in it")
        return None
    return _by_scenario(_read_jsonl(root, relative, problems), problems)


def _check_data_file(root: Path, candidate: _Candidate, skip_missing: bool, problems, skipped) -> bool:
    """Whether the candidate's data file is there with the manifest's size; records why not."""
    path = root / candidate.data_path
    scenario_id = candidate.scenario.value["scenario_id"]
    if not path.is_file():
        if skip_missing:
            skipped.append({
                "task": candidate.task, "scenario_id": scenario_id, "data_path": candidate.data_path,
                "reason": "data file missing",
            })
        else:
            problems.append(
                f"{candidate.runtime.where}: data file {candidate.data_path} of scenario {scenario_id} is missing"
            )
        return False
    expected = candidate.manifest.value.get("size_bytes") if candidate.manifest else None
    if expected is not None and path.stat().st_size != expected:
        problems.append(
            f"{candidate.manifest.where}: {candidate.data_path} is {path.stat().st_size} bytes, "
            f"the manifest says {expected}"
        )
        return False
    return True


# ── the release's identity ──────────────────────────────────────────────────────────────────

def release_manifest(root: Path) -> dict[str, dict]:
    """Relative path → {"size"[, "sha256"]} for every file of the release's trees.

    Definitions under ``benchmark/`` are hashed; recordings under ``data/`` (about 23 GB for the
    official release) are identified by size only. Hidden files and folders (a download cache) are left out.
    """
    manifest = {}
    for tree in RELEASE_TREES:
        for directory, subdirectories, files in os.walk(root / tree, followlinks=True):
            subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = Path(directory) / name
                entry = {"size": path.stat().st_size}
                if tree == "benchmark":
                    entry["sha256"] = file_sha256(path)
                manifest[path.relative_to(root).as_posix()] = entry
    return manifest


def new_record_id(taken: set[str], *, like: str = "") -> str:
    """A random opaque record id not in ``taken``, shaped like the release's own id ``like``.

    A release id that ends in digits (``EEG_0002``, ``EPOCH_00001``) gives an id with the same
    prefix and as many random digits (``EEG_4817``), never the release id itself: a tool reports
    the size of its own output, which holds the id, so the sizes a model reads stay the official
    runner's. Any other id (none, for T1) gives ``rec_`` and 10 random base32 characters.

    Raises
    ------
    ValueError
        When every id of that shape is taken.
    """
    shape = _RELEASE_ID_SHAPE.fullmatch(like)
    if shape is None:
        def draw() -> str:
            return RECORD_ID_PREFIX + "".join(secrets.choice(_RECORD_ID_ALPHABET) for _ in range(_RECORD_ID_LENGTH))
    else:
        prefix, width = shape["prefix"], len(shape["digits"])
        used = sum(1 for record_id in taken if len(record_id) == len(like) and record_id.startswith(prefix))
        if used + 1 >= 10**width:
            raise ValueError(f"every record id of the shape {prefix}{'N' * width} is taken")

        def draw() -> str:
            return f"{prefix}{secrets.randbelow(10**width):0{width}d}"
    while True:
        record_id = draw()
        if record_id not in taken and record_id != like:
            return record_id


_SUITE_NAME_LENGTH = Suite._meta.get_field("name").max_length


def _longest(field: str) -> int:
    """How many characters the instance's ``field`` holds."""
    return Instance._meta.get_field(field).max_length


def _subject(task: str, scenario_id: str) -> str:
    if task == "T5":
        return subject_of(scenario_id)[: _longest("subject")]
    pattern = _SUBJECT_PATTERNS.get(task)
    match = pattern.search(scenario_id) if pattern else None
    return match.group(1)[: _longest("subject")] if match else ""


def _release_for(root: Path, descriptor: dict, descriptor_text: str, manifest: dict) -> Release:
    checksum = Release.checksum_of(manifest)
    existing = Release.objects.filter(checksum=checksum).first()
    if existing is not None:
        return existing
    name = str(descriptor.get("name") or root.name)[:100]
    version = str(descriptor.get("version") or "0")[:37]  # room for "+" and 12 hex digits in 50
    if Release.objects.filter(name=name, version=version).exists():
        version = f"{version}+{checksum[:12]}"  # same name and version, different content
    return Release.objects.create(
        name=name, version=version, source=str(root), is_synthetic=descriptor.get("synthetic") is True,
        manifest=manifest, descriptor=descriptor_text,
    )


def _suite_family(base: str) -> list[Suite]:
    versioned = re.compile(rf"{re.escape(base)}(?:-v\d+)?")
    return [suite for suite in Suite.objects.filter(name__startswith=base) if versioned.fullmatch(suite.name)]


# ── import ──────────────────────────────────────────────────────────────────────────────────

@dataclass
class _Plan:
    """A validated release, ready to be written."""

    root: Path
    descriptor: dict
    descriptor_text: str
    selected: list[str]
    candidates: list[_Candidate]
    skipped: list[dict]


def import_release(
    *, path: str | Path, suite_name: str | None = None, tasks: Iterable[str] | None = None,
    skip_missing: bool = False, held_out: bool = False,
) -> ImportResult:
    """Import the release directory at ``path`` into a suite, all or nothing.

    The files are read and checked first; the suite is written in one transaction afterwards, so a
    long check (a thousand data files) never holds the database's write lock.

    Parameters
    ----------
    path : str or Path
        The release root (it holds ``benchmark/`` and ``data/``).
    suite_name : str, optional
        A slug; defaults to the release's name (plus the task codes when ``tasks`` is given). A changed
        release imported under the same name becomes the next version, ``<name>-v2``, ``<name>-v3``, …
    tasks : iterable of str, optional
        Task codes to import (default: every task with a scenario file).
    skip_missing : bool
        Import the scenarios whose data files are present, list the others in ``Suite.skipped`` and mark
        the suite partial, instead of refusing the release.
    held_out : bool
        Hold the suite's references out (``Suite.References``). A release whose ``benchmark.json``
        says ``"references": "held-out"`` (``build_release --held-out``) is held out without it.

    Returns
    -------
    ImportResult
        ``created`` is False when the same release was already imported under that name: nothing changes,
        except that a suite asked to be held out is held out from then on (never made public here).

    Raises
    ------
    ReleaseError
        Listing every problem found, each with its file and line; the database is left unchanged.
    """
    plan = _check_release(Path(path).expanduser().resolve(), tasks, skip_missing)
    if suite_name is not None and (not suite_name or slugify(suite_name) != suite_name):
        raise ReleaseError([f"suite name {suite_name!r} must be a slug: lower-case letters, digits and hyphens"])
    if suite_name is not None and len(suite_name) > _SUITE_NAME_LENGTH:
        raise ReleaseError([f"suite name {suite_name!r} is longer than {_SUITE_NAME_LENGTH} characters"])
    held_out = held_out or plan.descriptor.get("references") == Suite.References.HELD_OUT
    result = _save_suite(plan=plan, manifest=release_manifest(plan.root), suite_name=suite_name,
                         by_task=tasks is not None, held_out=held_out)
    if held_out and not result.suite.is_held_out:
        set_references(result.suite, Suite.References.HELD_OUT)
    return result


def set_references(suite: Suite, references: str) -> bool:
    """Make ``suite``'s references ``public`` or ``held-out``; returns whether that changed anything.

    Pages decide what to show from the suite as they are read, and the leaderboard's stored
    summaries hold no answer of their own to hide, so the change is in force at the next request.
    """
    if references not in Suite.References.values:
        raise ValueError(f"references must be one of {', '.join(Suite.References.values)}, not {references!r}")
    changed = Suite.objects.filter(pk=suite.pk).exclude(references=references).update(references=references)
    suite.references = references
    return bool(changed)


def _check_release(root: Path, tasks: Iterable[str] | None, skip_missing: bool) -> _Plan:
    """Read and check everything the import needs; raises ReleaseError with every problem found."""
    if not root.exists():
        raise ReleaseError([
            f"{root}: no such directory (manage.py download_release --to DIR fetches the official release; "
            "build_release and build_demo_release build one)"
        ])
    if not (root / "benchmark" / "scenarios").is_dir():
        raise ReleaseError([f"{root}: not a release directory (no benchmark/scenarios/)"])
    problems: list[str] = []
    descriptor, descriptor_text = _read_descriptor(root, problems)
    available = [task for task in TASK_IDS if (root / SCENARIOS.format(task=task)).is_file()]
    selected = available if tasks is None else list(dict.fromkeys(tasks))
    for task in selected:
        if task not in TASK_IDS:
            problems.append(f"unknown task {task!r}; tasks are {', '.join(TASK_IDS)}")
        elif task not in available:
            problems.append(f"{SCENARIOS.format(task=task)}: missing, so {task} cannot be imported")
    if not available:
        problems.append(f"{root}/benchmark/scenarios: no scenario files (T1.jsonl … T6.jsonl)")
    if descriptor.get("references", Suite.References.PUBLIC) not in Suite.References.values:
        problems.append(f"{root}/benchmark.json: references must be one of {', '.join(Suite.References.values)}")
    listed = descriptor.get("official_tools") or OFFICIAL_TOOLS
    if not isinstance(listed, list | tuple) or not all(isinstance(name, str) for name in listed):
        problems.append(f"{root}/benchmark.json: official_tools must be a list of tool names")
        listed = OFFICIAL_TOOLS
    known_tools = set(listed)
    file_manifest = _read_file_manifest(root, problems)

    skipped: list[dict] = [{"task": task, "reason": "not selected"} for task in available if task not in selected]
    candidates: list[_Candidate] = []
    for task in selected:
        if task in available:
            candidates += _validate_task(
                root, task, known_tools, file_manifest, skip_missing=skip_missing, problems=problems,
                skipped=skipped,
            )
    seen: dict[str, _Candidate] = {}
    for candidate in candidates:
        scenario_id = candidate.scenario.value["scenario_id"]
        if scenario_id in seen:
            other = seen[scenario_id].scenario.path
            problems.append(f"{candidate.scenario.where}: scenario {scenario_id} is also in {other}")
        seen[scenario_id] = candidate
    if problems:
        raise ReleaseError(problems)
    return _Plan(root, descriptor, descriptor_text, selected, candidates, skipped)


@transaction.atomic
def _save_suite(*, plan: _Plan, manifest: dict, suite_name: str | None, by_task: bool,
                held_out: bool) -> ImportResult:
    """Write the checked release as a suite, or return the suite that already holds it."""
    release = _release_for(plan.root, plan.descriptor, plan.descriptor_text, manifest)
    base = suite_name
    if base is None:
        # A name made here leaves room for the version suffix ("-v12") of a later import.
        suffix = "".join(f"-{task.lower()}" for task in plan.selected) if by_task else ""
        room = _SUITE_NAME_LENGTH - len("-v999999") - len(suffix)
        base = (slugify(release.name)[:room].rstrip("-") or "release") + suffix
    candidates = plan.candidates
    counts = {task: sum(c.task == task for c in candidates) for task in plan.selected}
    wanted = {(c.task, c.scenario.value["scenario_id"]) for c in candidates}
    family = _suite_family(base)
    for suite in family:
        same_instances = set(suite.instances.values_list("task__code", "scenario_id")) == wanted
        if suite.release_id == release.id and same_instances:
            return ImportResult(suite=suite, created=False, counts=counts, skipped=suite.skipped)

    version = max((suite.version for suite in family), default=0) + 1
    while Suite.objects.filter(name=base if version == 1 else f"{base}-v{version}").exists():
        version += 1  # a suite of another release may already hold the name (a release called "x-v2")
    name = base if version == 1 else f"{base}-v{version}"
    if len(name) > _SUITE_NAME_LENGTH:
        raise ReleaseError([f"suite {base} exists; its next version {name!r} would be longer than "
                            f"{_SUITE_NAME_LENGTH} characters: choose a shorter suite name"])
    suite = Suite.objects.create(
        name=name,
        release=release,
        version=version,
        is_partial=bool(plan.skipped),
        skipped=plan.skipped,
        references=Suite.References.HELD_OUT if held_out else Suite.References.PUBLIC,
        description=f"{release.name} {release.version}: "
        + ", ".join(f"{task} {count}" for task, count in counts.items()),
    )
    task_rows = {task.code: task for task in Task.objects.filter(code__in=plan.selected)}
    taken: set[str] = set()
    instances = []
    for candidate in candidates:
        record_id = new_record_id(taken, like=candidate.release_record_id)
        taken.add(record_id)
        instances.append(_instance(suite, task_rows[candidate.task], candidate, record_id))
    Instance.objects.bulk_create(instances, batch_size=500)
    return ImportResult(suite=suite, created=True, counts=counts, skipped=plan.skipped)


def _instance(suite: Suite, task: Task, candidate: _Candidate, record_id: str) -> Instance:
    scenario = candidate.scenario.value
    metadata = candidate.metadata
    lines = {
        "scenario": candidate.scenario.stored(),
        "runtime": candidate.runtime.stored(),
        "answer_key": candidate.answer_key.stored(),
    }
    if candidate.manifest is not None:
        lines["manifest"] = candidate.manifest.stored()
    n_epochs = metadata.get("n_epochs_total", candidate.answer_key.value["gold"].get("n_epochs_total"))
    return Instance(
        suite=suite,
        task=task,
        scenario_id=scenario["scenario_id"],
        record_id=record_id,
        release_record_id=candidate.release_record_id,
        subject=_subject(candidate.task, scenario["scenario_id"]),
        duration_sec=candidate.duration_sec,
        sfreq=_number(metadata.get("sampling_rate")),
        n_channels=_channel_count(metadata),
        n_epochs=n_epochs if isinstance(n_epochs, int) and not isinstance(n_epochs, bool) else None,
        metadata=prompt_metadata(candidate.task, metadata),
        prompt_input=scenario.get("input") or {},
        expected_output_schema=scenario.get("expected_output_schema") or {},
        allowed_tools=list((scenario.get("access") or {}).get("allowed_tools") or []),
        recording_path=candidate.data_path,
        reference=candidate.answer_key.value["gold"],
        position=candidate.position,
        release_lines=lines,
    )


# ── export ──────────────────────────────────────────────────────────────────────────────────

def _write_lines(path: Path, lines: list[tuple[int, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(f"{text}\n" for _, text in sorted(lines)).encode("utf-8"))


def export_release(*, suite: Suite, out_dir: str | Path, with_data: bool = False) -> list[Path]:
    """Write ``suite`` as a release directory at ``out_dir``; returns the files written.

    Scenario, runtime and answer-key lines (and manifest lines, and ``benchmark.json``) are written
    as they were imported, in their original order, so a complete suite reproduces the release's files
    byte for byte. With ``with_data`` the recordings are copied from the release directory too.

    Raises
    ------
    ReleaseError
        If a file to be written already exists, an instance was not imported from release files, or
        (with ``with_data``) a recording cannot be found; nothing is written then.
    """
    out = Path(out_dir).expanduser()
    files: dict[str, list[tuple[int, str]]] = {}
    recordings: list[str] = []
    problems = []
    for instance in suite.instances.select_related("task").order_by("task__code", "position"):
        lines = instance.release_lines or {}
        if not all(kind in lines for kind in ("scenario", "runtime", "answer_key")):
            problems.append(f"instance {instance.record_id} was not imported from release files")
            continue
        code = instance.task.code
        for kind, pattern in (("scenario", SCENARIOS), ("runtime", RUNTIME), ("answer_key", ANSWER_KEYS)):
            files.setdefault(pattern.format(task=code), []).append((lines[kind]["line"], lines[kind]["text"]))
        if "manifest" in lines:
            files.setdefault(FILE_MANIFEST, []).append((lines["manifest"]["line"], lines["manifest"]["text"]))
        if instance.recording_path:
            recordings.append(instance.recording_path)
    targets = [*files, *([DESCRIPTOR] if suite.release.descriptor else [])]
    recordings = list(dict.fromkeys(recordings))  # instances may share a recording
    if with_data:
        source = Path(suite.release.source)
        problems += [f"{source / path}: recording missing" for path in recordings if not (source / path).is_file()]
        targets += recordings
    if out.exists() and not out.is_dir():
        problems.append(f"{out}: exists and is not a directory")
    else:
        problems += [f"{out / target}: already exists" for target in targets if (out / target).exists()]
    if problems:
        raise ReleaseError(problems)

    # Everything is written to a hidden directory first and moved in once complete, so that a
    # failure (a full disk, an unreadable recording) leaves ``out`` as it was: inside ``out``
    # when it exists (the same file system, even when ``out`` is a mount point), else beside it.
    if out.exists():
        staging = Path(tempfile.mkdtemp(prefix=".export.", dir=out))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.export.", dir=out.parent))
    try:
        for relative, lines in files.items():
            _write_lines(staging / relative, lines)
        if suite.release.descriptor:
            (staging / DESCRIPTOR).parent.mkdir(parents=True, exist_ok=True)
            (staging / DESCRIPTOR).write_bytes(suite.release.descriptor.encode("utf-8"))
        if with_data:
            for relative in recordings:
                (staging / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(suite.release.source) / relative, staging / relative)
        _move_into(staging, out, targets)
    except FileExistsError as exc:  # made by someone else while this export was being written
        raise ReleaseError([f"{exc.filename}: already exists"]) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / relative for relative in targets]


def _place(source: Path, target: Path) -> None:
    """Move the file ``source`` to ``target`` on the same file system; FileExistsError if ``target`` exists."""
    exists = FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))  # named by the target
    try:
        os.link(source, target)  # never replaces a file, unlike a rename
    except FileExistsError:
        raise exists from None
    except OSError:  # a file system without hard links
        if os.path.lexists(target):
            raise exists from None
        source.rename(target)
    else:
        source.unlink()


def _move_into(staging: Path, out: Path, relatives: list[str]) -> None:
    """Move the files ``relatives`` from ``staging`` to the same places under ``out``, all or none."""
    if not out.exists():
        staging.chmod(0o755)  # mkdtemp makes it private
        staging.rename(out)
        return
    moved: list[Path] = []
    made: list[Path] = []
    try:
        for relative in relatives:
            parts = PurePosixPath(relative).parts
            for depth in range(1, len(parts)):
                directory = out.joinpath(*parts[:depth])
                if not directory.exists():
                    directory.mkdir()
                    made.append(directory)
            _place(staging / relative, out / relative)
            moved.append(out / relative)
    except OSError:
        for target in moved:
            target.unlink(missing_ok=True)
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
