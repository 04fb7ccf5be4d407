"""What an unpacked submission holds, checked against the suite it was played on and rescored.

:func:`check_run` reads the official runner's output (a task directory or the run-all layout, as
:mod:`submissions.archive` unpacked it) and gives a :class:`Report`:

- **problems** that refuse the submission outright, each naming its file and line: a file that is
  not JSON, a row without a scenario id, a scenario there twice (the official aggregator refuses
  it too), a scenario that is not in the suite, a task folder holding another task's scenarios;
- per task the **completeness** (every instance of the task in the suite, each once, all completed)
  and the **scores**: every prediction rescored by the official scorer against this site's answer
  key (``benchmark.scoring.score_task``), beside what the uploaded ``summary.json`` claims and the
  difference, which is never trusted;
- the **settings** ``run_status.json`` records (tool protocol, max tokens, temperature, and the prompt
  set, which like the leaderboard's comparability mark tells the official package's texts from our
  paraphrase: it marks the run, it does not unverify it);
- the **reasons** it is not verified: a claimed task incomplete, a prediction without its
  trajectory, a trajectory whose final answer is not its prediction, a tool call naming a tool that
  is not one of the ten or arguments its schema refuses, a tool protocol, max tokens or temperature
  that are not the official runner's (or not recorded).
  Verified when there is none.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.scoring import PRIMARY_METRIC, score_task
from benchmark.wording import OFFICIAL
from runs.episode.scoring import scoring_item
from runs.interchange.importing import recorded_agent_settings
from runs.model.agent import PAPER_MAX_TOKENS, PAPER_PROTOCOL, PAPER_TEMPERATURE
from submissions.archive import TASKS
from tools_app.errors import ErrorCode, ToolError
from tools_app.registry import tool_specs

#: Reasons listed at most this many times each (the rest are counted).
MAX_LISTED = 20


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    tasks: dict[str, dict] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    prompt_set: str = OFFICIAL
    results: dict[str, dict] = field(default_factory=dict)  # scenario id -> its row, for the import

    @property
    def verified(self) -> bool:
        return not self.problems and not self.reasons

    def as_json(self) -> dict:
        return {"problems": self.problems, "reasons": self.reasons, "tasks": self.tasks,
                "settings": self.settings, "prompt_set": self.prompt_set, "verified": self.verified}


class _Listed:
    """Adds reasons of one kind to a report, the first ``MAX_LISTED`` by name, then a count of the rest."""

    def __init__(self, report: Report):
        self.report = report
        self.counts: dict[str, int] = {}

    def add(self, kind: str, text: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.counts[kind] <= MAX_LISTED:
            self.report.reasons.append(text)

    def close(self) -> None:
        for kind, count in self.counts.items():
            if count > MAX_LISTED:
                self.report.reasons.append(f"and {count - MAX_LISTED} more: {kind}")


def task_dirs(root: Path) -> list[tuple[str | None, Path]]:
    """``(task, directory)`` of each task folder: the run-all layout's, or the root itself (task None)."""
    if (root / "runs.jsonl").is_file():
        return [(None, root)]
    return [(task, root / task) for task in TASKS if (root / task / "runs.jsonl").is_file()]


def _json_lines(path: Path, label: str, report: Report) -> list[tuple[int, dict]]:
    rows = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError:
        return rows
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                    report.problems.append(f"{label}, line {number}: not JSON")
                    continue
                if not isinstance(value, dict):
                    report.problems.append(f"{label}, line {number}: not a JSON object")
                    continue
                rows.append((number, value))
        except UnicodeDecodeError:
            report.problems.append(f"{label}: not UTF-8 text")
    return rows


def _json_file(path: Path, label: str, report: Report):
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        report.problems.append(f"{label}: not JSON")
        return None


def _read_results(root: Path, instances: dict, report: Report) -> dict[str, dict]:
    """Every result row by scenario id; problems for duplicates, unknown scenarios and misplaced ones."""
    results, where = {}, {}
    for task, directory in task_dirs(root):
        prefix = f"{task}/" if task else ""
        for number, row in _json_lines(directory / "runs.jsonl", f"{prefix}runs.jsonl", report):
            label = f"{prefix}runs.jsonl, line {number}"
            scenario = row.get("scenario_id")
            if not isinstance(scenario, str) or not scenario:
                report.problems.append(f"{label}: no scenario_id")
                continue
            if scenario in where:
                report.problems.append(f"{label}: scenario {scenario} is there twice (also {where[scenario]})")
                continue
            where[scenario] = label
            instance = instances.get(scenario)
            if instance is None:
                report.problems.append(f"{label}: scenario {scenario} is not in this suite")
                continue
            if task and instance.task.code != task:
                report.problems.append(f"{label}: scenario {scenario} is of {instance.task.code}, in the {task} folder")
                continue
            results[scenario] = {**row, "_dir": str(directory), "_prefix": prefix}
    return results


def _recorded_settings(root: Path, report: Report) -> None:
    found = recorded_agent_settings(root)
    settings = [entry for entry, _ in found]
    report.settings = settings[0] if settings and all(entry == settings[0] for entry in settings) else {}
    if settings and not report.settings:
        report.reasons.append("the task folders' run_status.json record different settings")
    prompt_sets = {prompt_set for _, prompt_set in found if prompt_set}
    report.prompt_set = prompt_sets.pop() if len(prompt_sets) == 1 else OFFICIAL


def _setting_reasons(report: Report) -> list[str]:
    settings, reasons = report.settings, []
    for name, official in (("tool_protocol", PAPER_PROTOCOL), ("max_tokens", PAPER_MAX_TOKENS),
                           ("temperature", PAPER_TEMPERATURE)):
        value = settings.get(name)
        if value is None:
            reasons.append(f"run_status.json does not record {name} (official: {official})")
        elif value != official:
            reasons.append(f"{name} {value}, not the official {official}")
    return reasons


def _arguments(call: dict):
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def known_tools() -> dict:
    """The ten tools by name (loaded first: a fresh queue worker may not have imported them yet)."""
    return {spec.name: spec for spec in tool_specs()}


def _check_trajectory(scenario: str, row: dict, listed: _Listed, report: Report, tools: dict) -> None:
    path = Path(row["_dir"]) / "trajectories" / f"{scenario}.jsonl"
    label = f"{row['_prefix']}trajectories/{scenario}.jsonl"
    if not path.is_file():
        listed.add("predictions without their trajectory", f"{scenario}: no trajectory ({label})")
        return
    events = _json_lines(path, label, report)
    answers = [event.get("agent_message", {}).get("final_answer") for _, event in events
               if event.get("event_type") == "final_answer" and isinstance(event.get("agent_message"), dict)]
    prediction = row.get("prediction")
    if row.get("status") == "completed" and isinstance(prediction, dict) and prediction:
        if not answers:
            listed.add("trajectories without a final answer", f"{scenario}: its trajectory has no final answer")
        elif answers[-1] != prediction:
            listed.add("final answers that are not their predictions",
                       f"{scenario}: the trajectory's final answer is not the prediction in runs.jsonl")
    for number, event in events:
        if event.get("event_type") != "tool_call":
            continue
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        name = call.get("name")
        spec = tools.get(name) if isinstance(name, str) else None
        if spec is None:
            listed.add("calls of a tool that is not one of the ten",
                       f"{label}, line {number}: a call of {str(name)[:60]!r}, not one of the ten tools")
            continue
        arguments = _arguments(call)
        try:
            if arguments is None:
                raise ToolError(ErrorCode.INVALID_ARGUMENT, "the arguments are not a JSON object")
            spec.parse_arguments(arguments)
        except ToolError as error:
            listed.add("tool calls with arguments their schema refuses",
                       f"{label}, line {number}: {name} with arguments its schema refuses ({error})")


def _uploaded_score(directory: Path, task: str) -> float | None:
    """The primary score the uploaded ``summary.json`` claims (None when it claims none that can be read)."""
    summary = _json_file(directory / "summary.json", "summary.json", Report())
    if not isinstance(summary, dict) or summary.get("task_id") not in (None, task):
        return None
    value = summary.get("primary_score")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) else None


def _prediction(row: dict | None) -> dict | None:
    """A result's prediction as the scorer takes it: an object, or None (missing, or not an object)."""
    prediction = (row or {}).get("prediction")
    return prediction if isinstance(prediction, dict) and prediction else None


def check_run(root: Path, suite, *, progress=None) -> Report:
    """Check and rescore the run unpacked at ``root`` against ``suite`` (``progress(done, total)`` per result)."""
    report = Report()
    if not task_dirs(root):
        report.problems.append("no runs.jsonl at the top or in T1 … T6 folders")
        return report
    instances = {instance.scenario_id: instance for instance in suite.instances.select_related("task")}
    results = _read_results(root, instances, report)
    _recorded_settings(root, report)
    if report.problems:
        return report
    report.results = results
    listed = _Listed(report)
    tools = known_tools()
    claimed = sorted({instances[scenario].task.code for scenario in results})
    for done, (scenario, row) in enumerate(sorted(results.items()), start=1):
        _check_trajectory(scenario, row, listed, report, tools)
        if progress:
            progress(done, len(results))
    for task in claimed:
        of_task = [instance for instance in instances.values() if instance.task.code == task]
        given = {scenario: row for scenario, row in results.items() if instances[scenario].task.code == task}
        items = [scoring_item(instance, _prediction(given.get(instance.scenario_id)),
                              submitted=instance.scenario_id in given,
                              completed=(given.get(instance.scenario_id) or {}).get("status") == "completed")
                 for instance in of_task]
        summary = score_task(task, items)
        missing = sorted(instance.scenario_id for instance in of_task if instance.scenario_id not in given)
        not_completed = sorted(scenario for scenario, row in given.items() if row.get("status") != "completed")
        directory = Path(next(iter(given.values()))["_dir"])
        uploaded = _uploaded_score(directory, task)
        score = summary["primary_score"]
        entry = {
            "metric": PRIMARY_METRIC[task], "score": score, "expected": len(of_task), "results": len(given),
            "missing": len(missing), "not_completed": len(not_completed), "complete": not missing and not not_completed,
            "uploaded_score": uploaded,
            "difference": None if uploaded is None or score is None else score - uploaded,
        }
        report.tasks[task] = entry
        if missing:
            listed.add(f"incomplete {task}", f"{task} is incomplete: {len(missing)} of its {len(of_task)} instances "
                                             f"have no result (e.g. {', '.join(missing[:3])})")
        if not_completed:
            listed.add(f"results of {task} not completed", f"{task}: {len(not_completed)} result(s) not completed "
                                                            f"(e.g. {', '.join(not_completed[:3])})")
    for reason in _setting_reasons(report):
        listed.add("settings", reason)
    listed.close()
    return report
