"""Export of a run in the official runner's layout: its files, rows and events, and what they score to.

The row and event formats are those written by 528why/EEGAgentBenchmark (``core/result.py``,
``types.py``, ``cli.py`` at commit 5ac8aba): the key sets below are taken from there, and
``runs.jsonl`` rows are checked against its ``result.schema.json``.
"""
import json
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Suite
from benchmark.scoring import score_task
from benchmark.scoring.files import load_items
from runs import reports
from runs.interchange.export import export_run
from runs.interchange.importing import import_official_run
from runs.interchange.official import InterchangeError
from runs.models import Run, Status
from tests.datafiles import OFFICIAL as UPSTREAM
from tests.runs.interchange.played import baseline_run, read_jsonl

pytestmark = pytest.mark.django_db

RESULT_SCHEMA = json.loads((UPSTREAM / "schemas" / "result.schema.json").read_text())

ROW_KEYS = ["scenario_id", "status", "invalid", "prediction", "score", "score_details", "usage", "error"]
USAGE_KEYS = {"tool_calls", "turns", "wall_time_sec", "prompt_tokens", "completion_tokens", "total_tokens",
              "protocol_retries", "format_failure"}  # fmt: skip
EVENT_TYPES = {"prompt", "agent_action", "tool_call", "observation", "memory_update", "final_answer", "error"}


def comparable(summaries):
    return {task: (s["primary_score"], s["metrics"], s["completeness"]) for task, s in summaries.items()}


def check_official_formats(run, out):
    """The export of a one-episode-per-task run has the official files, rows and events."""
    assert {path.relative_to(out).parts[0] for path in out.rglob("*") if path.is_file()} == {
        *run.tasks, "benchmark_summary.json"}
    for task in run.tasks:
        [row] = read_jsonl(out / task / "runs.jsonl")
        jsonschema.validate(row, RESULT_SCHEMA)
        assert list(row) == ROW_KEYS and set(row["usage"]) <= USAGE_KEYS | {"reasoning_tokens"}
        assert row["status"] == "completed" and row["invalid"] is False and row["error"] is None
        assert not any("gold" in details for details in row["score_details"].values())
        events = read_jsonl(out / task / "trajectories" / f"{row['scenario_id']}.jsonl")
        assert events[0]["event_type"] == "prompt" and events[0]["step"] == 0
        assert events[-1]["event_type"] == "final_answer"
        assert {event["event_type"] for event in events} <= EVENT_TYPES
        assert all(e["timestamp"].endswith("Z") and e["scenario_id"] == row["scenario_id"] for e in events)
        turns = [event["step"] for event in events if event["event_type"] == "agent_action"]
        assert turns == list(range(1, row["usage"]["turns"] + 1))
        calls = [event for event in events if event["event_type"] == "tool_call"]
        assert len(calls) == row["usage"]["tool_calls"]
        assert all(set(call["observation"]) == {"status", "content", "latency_ms", "error"} for call in calls)
        status = json.loads((out / task / "run_status.json").read_text())
        assert (status["total_scenarios"], status["completed"], status["invalid"]) == (1, 1, 0)
    assert read_jsonl(out / "T1" / "runs.jsonl")[0]["score"].keys() == {"mcq_correct"}
    assert set(read_jsonl(out / "T6" / "runs.jsonl")[0]["score"]) == {
        "hypnogram_macro_f1", "hypnogram_cohen_kappa", "hypnogram_transition_accuracy",
        "hypnogram_architecture_error"}  # fmt: skip


def without_timestamps(events):
    return [{key: value for key, value in event.items() if key != "timestamp"} for event in events]


def scores_by_scenario(run):
    return dict(run.episodes.values_list("instance__scenario_id", "scores"))


def test_export_then_import_gives_identical_scores_and_an_identical_export(demo, tmp_path):
    original = baseline_run(demo, "baseline/heuristic", limit=1)
    export_run(run=original, out_dir=tmp_path / "out")
    check_official_formats(original, tmp_path / "out")

    imported = import_official_run(path=tmp_path / "out", suite=demo, model=original.model, name="back")

    assert imported.source == Run.Source.IMPORTED and imported.status == Status.COMPLETED
    assert comparable(reports.task_summaries(imported)) == comparable(reports.task_summaries(original))
    assert scores_by_scenario(imported) == scores_by_scenario(original)

    export_run(run=imported, out_dir=tmp_path / "again")
    for task in original.tasks:
        first, again = tmp_path / "out" / task, tmp_path / "again" / task
        assert read_jsonl(again / "runs.jsonl") == read_jsonl(first / "runs.jsonl")
        assert (again / "summary.json").read_text() == (first / "summary.json").read_text()
        for path in sorted((first / "trajectories").iterdir()):
            assert without_timestamps(read_jsonl(again / "trajectories" / path.name)) == without_timestamps(
                read_jsonl(path))


def test_the_exported_runs_score_to_the_same_numbers_from_the_official_files(demo, tmp_path):
    run = baseline_run(demo)
    export_run(run=run, out_dir=tmp_path)
    ours = reports.task_summaries(run)
    release = Path(demo.release.source) / "benchmark"

    for task in run.tasks:
        scenarios, key = release / "scenarios" / f"{task}.jsonl", release / "answer_keys" / f"{task}.jsonl"
        _, items, extra = load_items(scenarios, key, tmp_path / task / "runs.jsonl")
        assert extra == 0
        from_files = score_task(task, items)
        assert from_files["primary_score"] == ours[task]["primary_score"]
        assert from_files["metrics"] == ours[task]["metrics"]
        summary = json.loads((tmp_path / task / "summary.json").read_text())
        assert summary == {"schema": "eegagentbench/official-task-summary/v1", "official": False,
                           "error": ours[task]["reasons"][0]}  # fmt: skip
    assert json.loads((tmp_path / "benchmark_summary.json").read_text())["official"] is False


def test_export_refuses_a_directory_that_is_not_empty(demo, tmp_path):
    run = baseline_run(demo, limit=1)
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(InterchangeError, match="not empty"):
        export_run(run=run, out_dir=tmp_path)


def test_export_command_writes_the_official_layout(demo, tmp_path):
    run = baseline_run(demo, limit=1)
    out = StringIO()
    call_command("export_run", str(run.pk), "--out", str(tmp_path / "x"), stdout=out)
    assert "6 trajectories" in out.getvalue()
    assert (tmp_path / "x" / "T5" / "summary.json").is_file() and (tmp_path / "x" / "benchmark_summary.json").is_file()
    with pytest.raises(CommandError, match="There is no run 999"):
        call_command("export_run", "999", "--out", str(tmp_path / "y"))
    assert Suite.objects.filter(name="demo").exists()
