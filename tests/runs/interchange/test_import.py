"""Import of the official runner's output directories: a browsable, scored run, and refusals that keep nothing.

The run keeps the settings and prompt set the directory's ``run_status.json`` records.
"""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import ModelSpec
from runs.episode.transcript import replay_messages
from runs.interchange.export import export_run
from runs.interchange.importing import import_official_run
from runs.models import Episode, Run, Status, Step
from tests.runs.interchange.played import baseline_run

pytestmark = pytest.mark.django_db

Kind = Step.Kind


def write_official_task_dir(root, instance, *, rows, events):
    (root / "trajectories").mkdir(parents=True)
    (root / "runs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "trajectories" / f"{instance.scenario_id}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def official_rows_and_events(instance):
    failed = {"scenario_id": instance.scenario_id, "status": "failed", "invalid": True, "prediction": {},
              "score": {}, "score_details": {}, "usage": {}, "error": "Connection reset"}  # fmt: skip
    answer = {"action": "final_answer", "classification": "ocular_contaminated", "findings": ["frontal"]}
    completed = {
        "scenario_id": instance.scenario_id, "status": "completed", "invalid": False, "prediction": answer,
        "score": {"artifact_correct": 1.0}, "score_details": {},
        "usage": {"tool_calls": 1, "turns": 2, "wall_time_sec": 3.2, "prompt_tokens": 900, "completion_tokens": 80,
                  "total_tokens": 980, "protocol_retries": 0, "format_failure": False},
        "error": None,
    }  # fmt: skip
    stamp = "2026-05-01T10:00:0{}.000000Z"
    call = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": instance.record_id}}
    events = [
        {"scenario_id": instance.scenario_id, "step": 0, "event_type": "prompt", "timestamp": stamp.format(0),
         "agent_message": {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]}},
        {"scenario_id": instance.scenario_id, "step": 1, "event_type": "agent_action", "timestamp": stamp.format(1),
         "agent_message": {"action_type": "tool_call", "thought": "look at the spectrum", "latency_ms": 812.5,
                           "token_usage": {"prompt_tokens": 400, "completion_tokens": 40, "total_tokens": 440},
                           "raw_content": json.dumps(call)}},
        {"scenario_id": instance.scenario_id, "step": 1, "event_type": "tool_call", "timestamp": stamp.format(2),
         "tool_call": {"name": "compute_psd", "arguments": {"record_id": instance.record_id}},
         "observation": {"status": "ok", "content": {"peak_hz": 2.0}, "latency_ms": 35.0, "error": None}},
        {"scenario_id": instance.scenario_id, "step": 2, "event_type": "agent_action", "timestamp": stamp.format(3),
         "agent_message": {"action_type": "final_answer", "thought": None, "latency_ms": 640.0,
                           "token_usage": {"prompt_tokens": 500, "completion_tokens": 40, "total_tokens": 540},
                           "raw_content": json.dumps(answer)}},
        {"scenario_id": instance.scenario_id, "step": 2, "event_type": "final_answer", "timestamp": stamp.format(4),
         "agent_message": {"thought": None, "final_answer": answer}},
    ]  # fmt: skip
    return [failed, completed], events


def test_an_official_output_directory_imports_as_a_browsable_scored_run(suite, tmp_path):
    instance = suite.instances.get(task__code="T2")
    rows, events = official_rows_and_events(instance)
    write_official_task_dir(tmp_path / "T2", instance, rows=rows, events=events)
    out, err = StringIO(), StringIO()

    call_command("import_official_run", str(tmp_path), "--suite", "tiny", "--model", "GPT-X", stdout=out, stderr=err)

    run = Run.objects.get()
    episode = run.episodes.get()
    assert (run.source, run.status, run.model.name, run.tasks) == ("imported", "completed", "GPT-X", ["T2"])
    assert episode.status == Status.COMPLETED and episode.scores["correct"] is True  # the retried row wins
    assert (episode.n_turns, episode.n_tool_calls, episode.prompt_tokens, episode.wall_time_sec) == (2, 1, 900, 3.2)
    assert episode.started_at.isoformat() == "2026-05-01T10:00:00+00:00"
    kinds = [step.kind for step in episode.steps.all()]
    assert kinds == [Kind.PROMPT, Kind.AGENT_MESSAGE, Kind.TOOL_CALL, Kind.AGENT_MESSAGE, Kind.FINAL_ANSWER]
    tool = episode.steps.get(kind=Kind.TOOL_CALL)
    assert (tool.tool_name, tool.result["content"], tool.latency_ms) == ("compute_psd", {"peak_hz": 2.0}, 35.0)
    assert [m["role"] for m in replay_messages(episode)] == ["system", "user", "assistant", "user", "assistant"]
    assert "Imported 1 result(s)" in err.getvalue() and "T2" in out.getvalue()
    # The official runner made it, in its own wording; what it was called with is not in these files.
    assert (run.prompt_set, run.settings) == ("official", {})


def test_an_import_records_the_settings_its_run_status_gives(suite, tmp_path):
    instance = suite.instances.get(task__code="T2")
    rows, events = official_rows_and_events(instance)
    write_official_task_dir(tmp_path / "T2", instance, rows=rows, events=events)
    agent = {"name": "x", "model": "gpt-x", "base_url": "https://api.example/v1", "temperature": 0, "top_p": None,
             "max_tokens": 8192, "tool_protocol": "text"}  # fmt: skip
    (tmp_path / "T2" / "run_status.json").write_text(json.dumps({"run_config": {"agent": agent}}))
    run = import_official_run(path=tmp_path, suite=suite, model=ModelSpec.objects.create(name="GPT-X",
                                                                                          provider_model="x"))
    assert (run.prompt_set, run.settings) == ("official", {"tool_protocol": "text", "temperature": 0,
                                                           "max_tokens": 8192})  # fmt: skip


def test_an_export_records_the_prompt_set_and_its_import_keeps_it(demo, tmp_path):
    original = baseline_run(demo, "baseline/heuristic", limit=1)
    export_run(run=original, out_dir=tmp_path / "out")
    status = json.loads((tmp_path / "out" / "T1" / "run_status.json").read_text())
    assert status["run_config"]["agent"]["prompt_set"] == original.prompt_set == "platform"
    imported = import_official_run(path=tmp_path / "out", suite=demo, model=original.model, name="back")
    assert imported.prompt_set == "platform" and imported.settings == {
        key: original.settings[key] for key in ("tool_protocol", "temperature", "max_tokens")}


def test_an_import_naming_an_unknown_scenario_creates_nothing(suite, tmp_path):
    instance = suite.instances.get(task__code="T2")
    rows, events = official_rows_and_events(instance)
    rows.append({**rows[1], "scenario_id": "c2_artifact:edn_emg_p2_0009"})
    write_official_task_dir(tmp_path, instance, rows=rows, events=events)

    with pytest.raises(CommandError, match=r"1 result\(s\) name no scenario of suite tiny: c2_artifact:edn_emg_p2"):
        call_command("import_official_run", str(tmp_path), "--suite", "tiny", "--model", "GPT-X", stderr=StringIO())
    assert not Run.objects.exists() and not ModelSpec.objects.filter(name="GPT-X").exists()
    assert not Episode.objects.exists()


@pytest.mark.parametrize("arguments, message", [
    (["{dir}", "--suite", "nope", "--model", "M"], "Unknown suite 'nope'"),
    (["{dir}/missing", "--suite", "tiny", "--model", "M"], "is not a directory"),
    (["{dir}", "--suite", "tiny", "--model", "M"], "holds no runs.jsonl"),
])  # fmt: skip
def test_import_errors_are_command_errors(suite, tmp_path, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("import_official_run", *[a.format(dir=tmp_path) for a in arguments], stderr=StringIO())


@pytest.mark.parametrize(("options", "message"), [
    (["--model", "M" * 101], "name: Ensure this value has at most 100 characters"),
    (["--model", "GPT-X", "--run-name", "R" * 201], "at most 200 fit"),
])  # fmt: skip
def test_names_too_long_to_store_are_refused_and_nothing_is_kept(suite, tmp_path, options, message):
    instance = suite.instances.get(task__code="T2")
    rows, events = official_rows_and_events(instance)
    write_official_task_dir(tmp_path / "T2", instance, rows=rows, events=events)
    with pytest.raises(CommandError, match=message):
        call_command("import_official_run", str(tmp_path), "--suite", "tiny", *options, stderr=StringIO())
    assert not Run.objects.exists() and not ModelSpec.objects.exists()
