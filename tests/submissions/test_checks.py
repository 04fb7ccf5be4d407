"""An unpacked submission checked against its suite: rescored by the official scorer (the uploaded summary never
trusted), complete or not, verified or not with every reason, refused for problems naming their file and line."""
import json
import shutil
from pathlib import Path

import pytest

from leaderboard.summaries.scoring import refresh_run_summary
from submissions.checks import check_run
from tests.runs.interchange.played import read_jsonl

pytestmark = pytest.mark.django_db


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def first_trajectory(root: Path, task: str) -> Path:
    return sorted((root / task / "trajectories").iterdir())[0]


def test_an_exported_run_is_rescored_to_its_scores_and_verified(played):
    suite, run, root = played
    report = check_run(root, suite)
    assert report.problems == [] and report.reasons == [] and report.verified
    assert sorted(report.tasks) == ["T1", "T2", "T3", "T4", "T5", "T6"]
    board = refresh_run_summary(run).tasks  # the scores the leaderboard gives the run played here
    for task, entry in report.tasks.items():
        assert entry["complete"] and entry["missing"] == 0 and entry["results"] == entry["expected"]
        assert entry["score"] == pytest.approx(board[task]["primary_score"])
        # The demo is a part of the official suite: the official summary.json claims no score for it.
        assert json.loads((root / task / "summary.json").read_text())["official"] is False
        assert entry["uploaded_score"] is None and entry["difference"] is None
    assert report.settings == {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}
    assert len(report.results) == run.episodes.count()


def test_a_removed_trajectory_or_a_changed_answer_unverifies_saying_which(exported):
    suite, _, root = exported
    removed = first_trajectory(root, "T3")
    removed.unlink()
    changed = first_trajectory(root, "T4")
    events = read_jsonl(changed)
    for event in events:
        if event["event_type"] == "final_answer":
            event["agent_message"]["final_answer"] = {"classification": "something else", "findings": []}
    write_jsonl(changed, events)
    report = check_run(root, suite)
    assert not report.verified and report.problems == []
    assert f"{removed.stem}: no trajectory (T3/trajectories/{removed.name})" in report.reasons
    assert f"{changed.stem}: the trajectory's final answer is not the prediction in runs.jsonl" in report.reasons


def test_tool_calls_outside_the_ten_tools_or_their_schemas_are_named_with_their_line(exported):
    suite, _, root = exported
    path = first_trajectory(root, "T5")
    events = read_jsonl(path)
    calls = [index for index, event in enumerate(events) if event["event_type"] == "tool_call"]
    events[calls[0]]["tool_call"] = {"name": "read_the_labels", "arguments": {}}
    events[calls[1]]["tool_call"]["arguments"] = {"record_id": "x", "tmin": "zero"}
    write_jsonl(path, events)
    reasons = check_run(root, suite).reasons
    label = f"T5/trajectories/{path.name}"
    assert f"{label}, line {calls[0] + 1}: a call of 'read_the_labels', not one of the ten tools" in reasons
    assert any(reason.startswith(f"{label}, line {calls[1] + 1}: ") and "'tmin' must be a number" in reason
               for reason in reasons), reasons


def test_settings_that_are_not_the_official_ones_unverify(exported):
    suite, _, root = exported
    for task in ("T1", "T2", "T3", "T4", "T5", "T6"):
        status = json.loads((root / task / "run_status.json").read_text())
        status["run_config"]["agent"]["temperature"] = 0.7
        (root / task / "run_status.json").write_text(json.dumps(status))
    report = check_run(root, suite)
    assert report.reasons == ["temperature 0.7, not the official 0"]


def test_an_incomplete_task_and_an_untrue_summary_are_reported_with_the_difference(exported):
    suite, _, root = exported
    rows = read_jsonl(root / "T3" / "runs.jsonl")
    write_jsonl(root / "T3" / "runs.jsonl", rows[:-2])
    (root / "T2" / "summary.json").write_text(json.dumps({"official": True, "task_id": "T2", "primary_score": 0.99}))
    report = check_run(root, suite)
    claimed = report.tasks["T2"]["score"]
    assert report.tasks["T3"]["complete"] is False and report.tasks["T3"]["missing"] == 2
    assert any(reason.startswith("T3 is incomplete: 2 of its 12 instances have no result") for reason in report.reasons)
    assert report.tasks["T2"]["uploaded_score"] == 0.99
    assert report.tasks["T2"]["difference"] == pytest.approx(claimed - 0.99) != 0


def test_a_duplicated_line_an_unknown_scenario_or_a_misplaced_one_refuse_it(exported):
    suite, _, root = exported
    rows = read_jsonl(root / "T3" / "runs.jsonl")
    t4_row = read_jsonl(root / "T4" / "runs.jsonl")[0]
    write_jsonl(root / "T3" / "runs.jsonl", [*rows, rows[0], {**rows[1], "scenario_id": "c3_nowhere_01"}, t4_row])
    with (root / "T1" / "runs.jsonl").open("a") as handle:
        handle.write("{not json\n")
    problems = check_run(root, suite).problems
    n = len(rows)
    assert f"T3/runs.jsonl, line {n + 1}: scenario {rows[0]['scenario_id']} is there twice (also T3/runs.jsonl, line 1)" in problems
    assert f"T3/runs.jsonl, line {n + 2}: scenario c3_nowhere_01 is not in this suite" in problems
    assert f"T3/runs.jsonl, line {n + 3}: scenario {t4_row['scenario_id']} is of T4, in the T3 folder" in problems
    assert any(problem.startswith("T1/runs.jsonl, line ") and problem.endswith(": not JSON") for problem in problems)


def test_a_single_task_directory_is_read_as_well(exported, tmp_path):
    suite, _, root = exported
    shutil.copytree(root / "T2", tmp_path / "only-t2")
    report = check_run(tmp_path / "only-t2", suite)
    assert report.verified and list(report.tasks) == ["T2"]


def test_a_fresh_worker_process_knows_the_ten_tools_before_any_was_called():
    import subprocess
    import sys

    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); django.setup(); "
            "from submissions.checks import known_tools; print(sorted(known_tools()))")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    from tools_app.registry import TOOL_NAMES

    assert printed.strip() == str(sorted(TOOL_NAMES))


def test_a_prediction_that_is_not_an_object_or_a_line_nested_too_deep_never_crashes_the_check(exported):
    suite, _, root = exported
    rows = read_jsonl(root / "T3" / "runs.jsonl")
    rows[0]["prediction"] = ["not", "an", "object"]
    write_jsonl(root / "T3" / "runs.jsonl", rows)
    report = check_run(root, suite)
    assert report.problems == [] and report.tasks["T3"]["results"] == len(rows)
    path = sorted((root / "T4" / "trajectories").iterdir())[0]
    path.write_text(path.read_text() + "[" * 100_000 + "]" * 100_000 + "\n")
    assert f"T4/trajectories/{path.name}, line {len(read_jsonl_lines(path))}: not JSON" in check_run(root, suite).problems


def read_jsonl_lines(path):
    return [line for line in path.read_text().splitlines() if line.strip()]
