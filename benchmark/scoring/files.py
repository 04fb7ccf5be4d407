"""Read the official file formats into scoring items.

Scenario lines (``benchmark/scenarios/Tn.jsonl``), answer-key lines
``{"scenario_id", "gold"}`` and prediction lines ``{"scenario_id", "prediction"}``
as the official runner writes them in ``runs.jsonl`` (other fields are ignored,
except ``status``). Every malformed line is reported with its file and line number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.scoring.official import TASK_IDS, ScoringItem


class ScoringInputError(ValueError):
    """A scoring input file is malformed; the message names the file and line."""


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON-lines file."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ScoringInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScoringInputError(f"{path}, line {number}: invalid JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise ScoringInputError(f"{path}, line {number}: expected a JSON object")
            yield number, value


def _scenario_id(path: Path, number: int, row: Mapping[str, Any]) -> str:
    value = row.get("scenario_id")
    if not isinstance(value, str) or not value:
        raise ScoringInputError(f"{path}, line {number}: missing or empty \"scenario_id\"")
    return value


@dataclass(frozen=True)
class _Scenario:
    line: int
    task_id: str
    metadata: Mapping[str, Any]
    options: Mapping[str, str] | None


def _record_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    input_block = row.get("input")
    if isinstance(input_block, Mapping) and isinstance(input_block.get("metadata"), Mapping):
        metadata.update(input_block["metadata"])
    records = row.get("records")
    if isinstance(records, list) and records and isinstance(records[0], Mapping):
        if isinstance(records[0].get("metadata"), Mapping):
            metadata.update(records[0]["metadata"])
    return metadata


def read_scenarios(path: str | Path) -> tuple[str, dict[str, _Scenario]]:
    """The task id and the scenarios (by id, in file order) of a scenario file."""
    path = Path(path)
    scenarios: dict[str, _Scenario] = {}
    task_ids = set()
    for number, row in iter_jsonl(path):
        scenario_id = _scenario_id(path, number, row)
        task_id = row.get("task_id")
        if task_id not in TASK_IDS:
            raise ScoringInputError(
                f"{path}, line {number}: \"task_id\" must be one of {', '.join(TASK_IDS)}, got {task_id!r}"
            )
        if scenario_id in scenarios:
            raise ScoringInputError(
                f"{path}, line {number}: scenario {scenario_id} already appears on line "
                f"{scenarios[scenario_id].line}"
            )
        input_block = row.get("input") if isinstance(row.get("input"), Mapping) else {}
        options = input_block.get("options")
        if task_id == "T1" and not isinstance(options, Mapping):
            raise ScoringInputError(f"{path}, line {number}: a T1 scenario needs \"input.options\"")
        task_ids.add(task_id)
        scenarios[scenario_id] = _Scenario(number, task_id, _record_metadata(row), options)
    if not scenarios:
        raise ScoringInputError(f"{path}: no scenarios")
    if len(task_ids) != 1:
        raise ScoringInputError(f"{path}: scenario file mixes tasks {sorted(task_ids)}")
    return task_ids.pop(), scenarios


def read_answer_key(path: str | Path) -> dict[str, tuple[int, Mapping[str, Any]]]:
    """Gold objects by scenario id, with their line numbers."""
    path = Path(path)
    key: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for number, row in iter_jsonl(path):
        scenario_id = _scenario_id(path, number, row)
        gold = row.get("gold")
        if not isinstance(gold, Mapping):
            raise ScoringInputError(f"{path}, line {number}: \"gold\" must be a JSON object")
        if scenario_id in key:
            raise ScoringInputError(
                f"{path}, line {number}: scenario {scenario_id} already appears on line {key[scenario_id][0]}"
            )
        key[scenario_id] = (number, gold)
    return key


def read_predictions(path: str | Path) -> dict[str, Mapping[str, Any]]:
    """Result rows by scenario id.

    When the official runner retried a scenario it appended a second row; the
    latest completed row wins (the official scorer refuses such a file outright).
    """
    path = Path(path)
    rows: dict[str, Mapping[str, Any]] = {}
    for number, row in iter_jsonl(path):
        scenario_id = _scenario_id(path, number, row)
        status = row.get("status", "")  # a row without a status is not a completed one, as upstream
        if not isinstance(status, str):
            raise ScoringInputError(f"{path}, line {number}: \"status\" must be a string")
        previous = rows.get(scenario_id)
        if previous is None or status == "completed" or previous.get("status") != "completed":
            rows[scenario_id] = row
    return rows


def _positive_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer too large for a float is no usable duration
        return None
    return value if math.isfinite(value) and value > 0 else None


def load_items(
    scenarios_path: str | Path, answer_key_path: str | Path, predictions_path: str | Path
) -> tuple[str, list[ScoringItem], int]:
    """Scoring items of one task from the three official files.

    Returns
    -------
    task_id : str
    items : list of ScoringItem
        In scenario-file order; a scenario without a result row has an empty prediction.
    extra : int
        Result rows naming no scenario of the file.
    """
    task_id, scenarios = read_scenarios(scenarios_path)
    key = read_answer_key(answer_key_path)
    rows = read_predictions(predictions_path)
    items = []
    for scenario_id, scenario in scenarios.items():
        if scenario_id not in key:
            raise ScoringInputError(
                f"{scenarios_path}, line {scenario.line}: scenario {scenario_id} has no line in "
                f"the answer key {answer_key_path}"
            )
        gold_line, gold = key[scenario_id]
        duration = n_epochs = None
        if task_id == "T5":
            duration = _positive_float(scenario.metadata.get("duration_sec"))
            if duration is None:
                duration = _positive_float(gold.get("duration_sec"))
            if duration is None:
                raise ScoringInputError(
                    f"{scenarios_path}, line {scenario.line}: T5 scenario {scenario_id} has no positive "
                    f"duration_sec in its metadata or in the answer key"
                )
        if task_id == "T6":
            if not isinstance(gold.get("epoch_labels_aasm"), list):
                raise ScoringInputError(
                    f"{answer_key_path}, line {gold_line}: T6 gold needs an \"epoch_labels_aasm\" list"
                )
            n_epochs = epoch_count(gold, scenario.metadata)
        row = rows.get(scenario_id)
        items.append(ScoringItem(
            scenario_id=scenario_id,
            gold=gold,
            prediction=row.get("prediction") if row is not None else None,
            submitted=row is not None,
            completed=row is not None and row.get("status") == "completed",
            options=scenario.options,
            duration_sec=duration,
            n_epochs=n_epochs,
        ))
    extra = sum(scenario_id not in scenarios for scenario_id in rows)
    return task_id, items, extra


def epoch_count(gold: Mapping[str, Any], metadata: Mapping[str, Any]) -> int:
    """The number of epochs a T6 night is scored over: the answer key's, as the official scorer
    takes it, else the scenario metadata's, else the length of the gold labels."""
    for value in (gold.get("n_epochs_total"), metadata.get("n_epochs_total")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return len(gold.get("epoch_labels_aasm") or [])
