"""The builder interface, and the writer that turns candidates into a release directory.

Each dataset module ``benchmark/builders/<dataset>.py`` exposes
``collect(raw_dir: Path) -> list[Candidate]``: the candidate pool read from a raw
dataset in its publisher's layout. Screening and balancing (``selection.py``),
record ids and writing (here) are shared. ``TASK_FORMATS`` holds what every
scenario of a task has in common (names, tools, answer schema, metrics), so a
dataset module only supplies what differs per instance.

A release directory has the official layout::

    benchmark/benchmark.json
    benchmark/scenarios/Tn.jsonl     benchmark/runtime/Tn.jsonl
    benchmark/answer_keys/Tn.jsonl   benchmark/manifests/files.jsonl
    data/<data_name>
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from tools_app.registry import TOOL_NAMES

RELEASE_SCHEMA = "eegagentbench/benchmark/v1"
#: ``benchmark.json``'s ``"references"`` in a release whose suites hold their answers out (our key, not the
#: official release's; the same value as ``benchmark.models.Suite.References.HELD_OUT``).
HELD_OUT = "held-out"
MAX_TURNS = 1000

OFFICIAL_TOOLS = TOOL_NAMES  # every T2-T6 scenario allows the ten tools, in catalog order

# The only record metadata a release may show (REFERENCE §4); anything else a
# builder knows about a record (Bonn set letter, MMSE, recording type) could leak
# the label and stays out.
METADATA_WHITELIST = frozenset({
    "channels", "channel_names", "eeg_channels", "n_channels", "sampling_rate", "n_samples",
    "duration_sec", "montage", "reference", "age", "gender", "sex", "night", "source",
    "epoch_sec", "n_epochs_total",
})


class BuildError(Exception):
    """Raw input a builder cannot turn into a release; the message names the file and line."""


@dataclass
class Candidate:
    """One candidate instance a dataset builder proposes, before screening and balancing.

    ``label`` is the class used for balancing (the gold label; T1: the gold
    letter; T5: ``seizure``/``no_seizure``; T6: ``sleep_session``). A data file
    comes either from ``source`` (copied byte for byte) or from ``write`` (called
    with the absolute path to write); T1 has neither.
    """

    task_id: str
    scenario_id: str
    label: str
    gold: dict
    metadata: dict
    input: dict
    data_name: str | None = None
    source: Path | None = None
    write: Callable[[Path], None] | None = None
    subject: str = ""


def _string_property(description: str, *, enum: Sequence[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if enum is not None:
        schema["enum"] = list(enum)
    schema["description"] = description
    return schema


def _findings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _classification_schema(labels: Sequence[str], label_description: str, findings_description: str) -> dict:
    return {
        "type": "object",
        "properties": {
            "classification": _string_property(label_description, enum=labels),
            "findings": _findings(findings_description),
        },
        "required": ["classification"],
    }


def _fraction(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0.0, "maximum": 1.0, "description": description}


_SEIZURE_SCHEMA = {
    "type": "object",
    "properties": {
        "seizure_events": {
            "type": "array",
            "description": (
                "Every electrographic seizure in the recording, as an interval in seconds from the "
                "start of the recording. An empty list means the recording has no seizure."
            ),
            "items": {
                "type": "object",
                "properties": {
                    "onset_sec": {"type": "number", "minimum": 0,
                                  "description": "Start of the seizure, seconds from the recording start."},
                    "offset_sec": {"type": "number", "minimum": 0,
                                   "description": "End of the seizure, seconds from the recording start."},
                },
                "required": ["onset_sec", "offset_sec"],
            },
        },
    },
    "required": ["seizure_events"],
}

_HYPNOGRAM_SCHEMA = {
    "type": "object",
    "properties": {
        "hypnogram_rle": {
            "type": "array",
            "description": (
                "The hypnogram as runs of a single stage. Epochs are numbered from 0 and a run "
                "includes both its first and its last epoch. The runs must cover all n_epochs_total epochs."
            ),
            "items": {
                "type": "object",
                "properties": {
                    "start_epoch": {"type": "integer", "minimum": 0,
                                    "description": "First 30-s epoch of the run (included)."},
                    "end_epoch": {"type": "integer", "minimum": 0,
                                  "description": "Last 30-s epoch of the run (included)."},
                    "stage": _string_property("Sleep stage of the run, AASM five-class.",
                                              enum=("W", "N1", "N2", "N3", "REM")),
                },
                "required": ["start_epoch", "end_epoch", "stage"],
            },
        },
        "architecture": {
            "type": "object",
            "description": "Summary of the whole night as fractions between 0 and 1, not percentages.",
            "properties": {
                "REM_pct": _fraction("Share of all epochs scored REM."),
                "N3_pct": _fraction("Share of all epochs scored N3."),
                "sleep_efficiency": _fraction(
                    "Sleep time over recording time: the share of epochs scored anything but W."),
            },
            "required": ["REM_pct", "N3_pct", "sleep_efficiency"],
        },
    },
    "required": ["hypnogram_rle", "architecture"],
}


@dataclass(frozen=True)
class TaskFormat:
    """What all scenarios of one task share in a release."""

    task_id: str
    task_key: str
    task_name: str
    dataset: str
    dataset_version: str
    primary_metric: str
    secondary_metrics: tuple[str, ...]
    expected_output_schema: Mapping[str, Any]
    tools: tuple[str, ...] = OFFICIAL_TOOLS
    record_prefix: str = "EEG_"
    record_digits: int = 4

    @property
    def max_tool_calls(self) -> int:
        return 999 if self.tools else 0

    def access(self) -> dict[str, Any]:
        return {
            "mode": "metadata_with_tools" if self.tools else "metadata_only_without_tools",
            "allowed_tools": list(self.tools),
            "forward_only": False,
            "max_turns": MAX_TURNS,
        }

    def evaluator(self) -> dict[str, Any]:
        return {"primary": self.primary_metric, "secondary": list(self.secondary_metrics)}

    def record_id(self, number: int) -> str:
        return f"{self.record_prefix}{number:0{self.record_digits}d}"


TASK_FORMATS: dict[str, TaskFormat] = {
    "T1": TaskFormat(
        task_id="T1", task_key="knowledge_qa", task_name="eeg_knowledge_qa",
        dataset="MedMCQA-EEG-strict", dataset_version="2026-06-22",
        primary_metric="accuracy", secondary_metrics=(), tools=(),
        expected_output_schema={
            "type": "object",
            "properties": {"answer": _string_property("Letter of the one correct option.",
                                                      enum=("A", "B", "C", "D"))},
            "required": ["answer"],
        },
    ),
    "T2": TaskFormat(
        task_id="T2", task_key="artifact_identification", task_name="artifact_contamination",
        dataset="EEGdenoiseNet", dataset_version="1.0",
        primary_metric="macro_f1", secondary_metrics=("accuracy",),
        record_prefix="EPOCH_", record_digits=5,
        expected_output_schema=_classification_schema(
            ("clean", "ocular_contaminated", "muscle_contaminated"),
            "Signal-quality call for the epoch: clean, ocular_contaminated (eye movement or blink, "
            "EOG) or muscle_contaminated (EMG).",
            "Signal measurements behind the call (optional).",
        ),
    ),
    "T3": TaskFormat(
        task_id="T3", task_key="epilepsy_screening", task_name="routine_impression",
        dataset="Bonn", dataset_version="1.0",
        primary_metric="macro_f1", secondary_metrics=("accuracy",),
        expected_output_schema=_classification_schema(
            ("normal", "epileptic"),
            "Whether the recording shows normal or epileptic activity.",
            "EEG findings behind the classification.",
        ),
    ),
    "T4": TaskFormat(
        task_id="T4", task_key="dementia_cohort_classification", task_name="cohort_discrimination",
        dataset="ds004504", dataset_version="1.0.8",
        primary_metric="macro_f1", secondary_metrics=("accuracy",),
        expected_output_schema=_classification_schema(
            ("AD", "FTD", "HC"),
            "Research cohort of the participant: Alzheimer's disease (AD), frontotemporal dementia "
            "(FTD) or healthy control (HC). It names a study group; it is not a clinical diagnosis.",
            "EEG features behind the cohort label.",
        ),
    ),
    "T5": TaskFormat(
        task_id="T5", task_key="seizure_detection", task_name="seizure_event_detection",
        dataset="CHB-MIT", dataset_version="1.0.0",
        primary_metric="event_f1", secondary_metrics=("dice_s",),
        expected_output_schema=_SEIZURE_SCHEMA,
    ),
    "T6": TaskFormat(
        task_id="T6", task_key="sleep_staging", task_name="sleep_staging",
        dataset="Sleep-EDFx", dataset_version="1.0.0",
        primary_metric="macro_f1", secondary_metrics=("cohen_kappa",),
        expected_output_schema=_HYPNOGRAM_SCHEMA,
    ),
}


def public_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The whitelisted part of a record's metadata, in its original key order."""
    return {key: value for key, value in metadata.items() if key in METADATA_WHITELIST}


def _json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex, read in blocks."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _check_data_name(candidate: Candidate) -> None:
    name = candidate.data_name
    where = f"candidate {candidate.scenario_id}"
    if candidate.task_id == "T1":
        if name is not None or candidate.source is not None or candidate.write is not None:
            raise BuildError(f"{where}: a T1 question has no data file")
        return
    if not name:
        raise BuildError(f"{where}: a {candidate.task_id} candidate needs a data_name")
    parts = PurePosixPath(name).parts
    if "\\" in name or name.startswith("/") or ".." in parts or "." in parts:
        raise BuildError(f"{where}: data_name {name!r} must be a plain relative path inside data/")
    if (candidate.source is None) == (candidate.write is None):
        raise BuildError(f"{where}: give exactly one of source or write for {name}")
    if candidate.source is not None and not Path(candidate.source).is_file():
        raise BuildError(f"{where}: source file {candidate.source} does not exist")


def _check_candidates(candidates: Iterable[Candidate]) -> dict[str, list[Candidate]]:
    by_task: dict[str, list[Candidate]] = {}
    scenario_ids: set[str] = set()
    data_names: set[str] = set()
    for candidate in candidates:
        if candidate.task_id not in TASK_FORMATS:
            raise BuildError(f"candidate {candidate.scenario_id}: unknown task {candidate.task_id!r}")
        if not candidate.scenario_id:
            raise BuildError(f"a {candidate.task_id} candidate has an empty scenario_id")
        if candidate.scenario_id in scenario_ids:
            raise BuildError(f"scenario {candidate.scenario_id} is proposed twice")
        scenario_ids.add(candidate.scenario_id)
        _check_data_name(candidate)
        if candidate.data_name is not None:
            if candidate.data_name in data_names:
                raise BuildError(f"data file {candidate.data_name} is claimed by two scenarios")
            data_names.add(candidate.data_name)
        by_task.setdefault(candidate.task_id, []).append(candidate)
    if not by_task:
        raise BuildError("no instances to write: the candidate pool is empty")
    return by_task


@dataclass
class _TaskFiles:
    """The four JSON-lines bodies of one task, and the data files they reference."""

    scenarios: list[str]
    runtime: list[str]
    answer_keys: list[str]
    manifest: list[str]
    count: int


def _scenario_record(candidate: Candidate, record_id: str) -> dict[str, Any]:
    return {"record_id": record_id, "role": "target", "metadata": public_metadata(candidate.metadata)}


def _scenario_input(candidate: Candidate) -> dict[str, Any]:
    block = dict(candidate.input)
    if isinstance(block.get("metadata"), Mapping):
        block["metadata"] = public_metadata(block["metadata"])
    return block


def _write_task(task_id: str, candidates: Sequence[Candidate], root: Path) -> _TaskFiles:
    fmt = TASK_FORMATS[task_id]
    files = _TaskFiles([], [], [], [], len(candidates))
    for number, candidate in enumerate(candidates, start=1):
        records, runtime_records = [], []
        if candidate.data_name is not None:
            record_id = fmt.record_id(number)
            data_path = f"data/{candidate.data_name}"
            target = root / data_path
            target.parent.mkdir(parents=True, exist_ok=True)
            if candidate.source is not None:
                shutil.copyfile(candidate.source, target)
            else:
                candidate.write(target)
            if not target.is_file():
                raise BuildError(f"candidate {candidate.scenario_id}: its writer did not create {data_path}")
            records.append(_scenario_record(candidate, record_id))
            runtime_records.append({"record_id": record_id, "data_path": data_path})
            files.manifest.append(_json_line({
                "display_id": record_id, "scenario_id": candidate.scenario_id, "data_path": data_path,
                "size_bytes": target.stat().st_size, "sha256": file_sha256(target),
            }))
        files.scenarios.append(_json_line({
            "scenario_id": candidate.scenario_id,
            "task_id": task_id,
            "task_name": fmt.task_name,
            "dataset": fmt.dataset,
            "dataset_version": fmt.dataset_version,
            "records": records,
            "subjects": [],
            "input": _scenario_input(candidate),
            "access": fmt.access(),
            "expected_output_schema": fmt.expected_output_schema,
            "evaluator": fmt.evaluator(),
            "release": {"split": "evaluation", "include_gold_in_release": False},
        }))
        files.runtime.append(_json_line({"scenario_id": candidate.scenario_id, "records": runtime_records}))
        files.answer_keys.append(_json_line({"scenario_id": candidate.scenario_id, "gold": candidate.gold}))
    return files


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line if line.endswith("\n") else line + "\n"
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _existing_release(out_dir: Path) -> dict[str, Any] | None:
    """The benchmark.json of a release already at ``out_dir``, or None for a new or empty directory."""
    if not out_dir.exists():
        return None
    if not out_dir.is_dir():
        raise BuildError(f"{out_dir} exists and is not a directory")
    description = out_dir / "benchmark" / "benchmark.json"
    if not description.is_file():
        if any(out_dir.iterdir()):
            raise BuildError(f"{out_dir} is neither empty nor a release directory; choose another --out")
        return None
    try:
        existing = json.loads(description.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(f"{description}: not a readable benchmark description ({exc})") from None
    if not isinstance(existing, dict):
        raise BuildError(f"{description}: not a benchmark description (a JSON object), but {type(existing).__name__}")
    return existing


def _carry_over_task(task_id: str, old_root: Path, new_root: Path) -> _TaskFiles:
    """Copy one task of an existing release into the new one; data files are hard-linked when possible."""
    bench = old_root / "benchmark"
    runtime = _read_lines(bench / "runtime" / f"{task_id}.jsonl")
    scenario_ids = set()
    for line in runtime:
        row = json.loads(line)
        scenario_ids.add(row["scenario_id"])
        for record in row.get("records", []):
            source, target = old_root / record["data_path"], new_root / record["data_path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
    manifest = [line for line in _read_lines(bench / "manifests" / "files.jsonl")
                if json.loads(line).get("scenario_id") in scenario_ids]
    scenarios = _read_lines(bench / "scenarios" / f"{task_id}.jsonl")
    return _TaskFiles(scenarios, runtime, _read_lines(bench / "answer_keys" / f"{task_id}.jsonl"),
                      manifest, len(scenarios))


def _benchmark_description(tasks: Mapping[str, _TaskFiles], *, name: str, version: str,
                           synthetic: bool, held_out: bool) -> dict[str, Any]:
    entries = {}
    for task_id in sorted(tasks):
        fmt = TASK_FORMATS[task_id]
        entry: dict[str, Any] = {
            "task_key": fmt.task_key, "count": tasks[task_id].count, "max_turns": MAX_TURNS,
            "max_tool_calls": fmt.max_tool_calls, "primary_metric": fmt.primary_metric,
        }
        if fmt.secondary_metrics:
            entry["secondary_metrics"] = list(fmt.secondary_metrics)
        entries[task_id] = entry
    return {
        "schema": RELEASE_SCHEMA,
        "name": name,
        "version": version,
        "total_instances": sum(files.count for files in tasks.values()),
        "official_tools": list(OFFICIAL_TOOLS),
        "tasks": entries,
        "overall": {
            "aggregation": "unweighted_mean",
            "components": [f"{task_id}.{TASK_FORMATS[task_id].primary_metric}" for task_id in sorted(tasks)],
        },
        "synthetic": synthetic,
    } | ({"references": HELD_OUT} if held_out else {})


def _write_text(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def _replace_directory(staging: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        staging.rename(out_dir)
        return
    previous = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.previous.", dir=out_dir.parent))
    previous.rmdir()
    out_dir.rename(previous)
    try:
        staging.rename(out_dir)
    except OSError:
        previous.rename(out_dir)
        raise
    shutil.rmtree(previous, ignore_errors=True)


def write_release(candidates: Sequence[Candidate], out_dir: Path, *, name: str, version: str,
                  synthetic: bool, held_out: bool = False) -> Path:
    """Write a release directory for ``candidates`` at ``out_dir``, all or nothing.

    Record ids are sequential per task in the order given (``EEG_0001``…,
    ``EPOCH_00001``… for T2); metadata is cut to ``METADATA_WHITELIST``. When
    ``out_dir`` already holds a release, its other tasks are kept and the tasks
    of ``candidates`` replace their earlier versions, so the six datasets can be
    built one after another into one release. Everything is written to a
    sibling staging directory that replaces ``out_dir`` only once complete.
    ``held_out`` writes ``"references": "held-out"`` into ``benchmark.json``, which
    ``import_release`` reads (a release once held out stays so as tasks are added).

    Returns
    -------
    out_dir : Path
        The release directory.
    """
    out_dir = Path(out_dir).resolve()
    by_task = _check_candidates(candidates)
    previous = _existing_release(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging.", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a release is meant to be read by others
    try:
        tasks: dict[str, _TaskFiles] = {}
        if previous is not None:
            for task_id in previous.get("tasks", {}):
                if task_id in TASK_FORMATS and task_id not in by_task:
                    try:
                        tasks[task_id] = _carry_over_task(task_id, out_dir, staging)
                    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:
                        raise BuildError(f"{out_dir}: cannot keep the release's {task_id} files ({exc})") from None
            synthetic = synthetic or bool(previous.get("synthetic", False))
            held_out = held_out or previous.get("references") == HELD_OUT
        for task_id, task_candidates in by_task.items():
            tasks[task_id] = _write_task(task_id, task_candidates, staging)
        bench = staging / "benchmark"
        for task_id, files in tasks.items():
            _write_text(bench / "scenarios" / f"{task_id}.jsonl", files.scenarios)
            _write_text(bench / "runtime" / f"{task_id}.jsonl", files.runtime)
            _write_text(bench / "answer_keys" / f"{task_id}.jsonl", files.answer_keys)
        _write_text(bench / "manifests" / "files.jsonl",
                    (line for task_id in sorted(tasks) for line in tasks[task_id].manifest))
        description = _benchmark_description(tasks, name=name, version=version, synthetic=synthetic,
                                             held_out=held_out)
        _write_text(bench / "benchmark.json", [json.dumps(description, indent=2, ensure_ascii=False) + "\n"])
        _replace_directory(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir
