"""Interchange with the official runner: export in its output formats, import its output directories.

The official formats are those written by 528why/EEGAgentBenchmark (``core/result.py``,
``types.py``, ``reporting/official.py``, ``cli.py`` at commit 5ac8aba): the key sets below are
taken from there, and ``runs.jsonl`` rows are checked against its ``result.schema.json``.
"""
import json
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from django.core.management import CommandError, call_command

from benchmark.models import ModelSpec, Suite
from benchmark.scoring import ScoringItem, benchmark_summary, score_task
from benchmark.scoring.files import load_items
from runs import reports, services, specs
from runs.episode.transcript import replay_messages
from runs.interchange import InterchangeError, export_run, import_official_run, official_task_summary
from runs.models import Episode, Run, Status, Step
from runs.queue import worker
from runs.services import create_run
from tests.datafiles import OFFICIAL as UPSTREAM
from tests.runs import fake_llm
from tests.runs.demo_suite import import_demo
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS

pytestmark = pytest.mark.django_db

RESULT_SCHEMA = json.loads((UPSTREAM / "schemas" / "result.schema.json").read_text())

Kind = Step.Kind

# The official summary layout (reporting/official.py: aggregate_task and its _aggregate_* helpers).
SUMMARY_KEYS = {"schema", "official", "task_id", "primary_metric", "primary_score", "completeness", "metrics"}
COMPLETENESS_KEYS = {"expected", "completed", "missing", "extra", "noncompleted"}
CLASSIFICATION_KEYS = {"n", "reference_classes", "accuracy", "macro_f1", "invalid_predictions", "per_class",
                       "confusion"}  # fmt: skip
METRIC_KEYS = {
    "T1": {"accuracy", "invalid_predictions", "confusion"},
    "T2": CLASSIFICATION_KEYS,
    "T3": CLASSIFICATION_KEYS,
    "T4": CLASSIFICATION_KEYS,
    "T5": {"n", "n_subjects", "event_f1", "dice_s", "sensitivity", "precision", "fp_per_24h", "miss_rate",
           "over_alarm_rate", "prediction_warning_count", "event_parameters", "subject_metrics", "pooled"},
    "T6": {"n", "macro_f1", "cohen_kappa", "empty_predictions", "per_record"},
}  # fmt: skip
EVENT_COUNT_KEYS = {"tp", "fp", "fn", "duration_sec", "sensitivity", "precision", "event_based_f1", "fp_per_24h"}
EVENT_PARAMETER_KEYS = {
    "tolerance_start_sec", "tolerance_end_sec", "min_overlap_sec", "min_duration_between_events_sec",
    "max_event_duration_sec", "sampling_frequency_hz",
}  # fmt: skip
ROW_KEYS = ["scenario_id", "status", "invalid", "prediction", "score", "score_details", "usage", "error"]
USAGE_KEYS = {"tool_calls", "turns", "wall_time_sec", "prompt_tokens", "completion_tokens", "total_tokens",
              "protocol_retries", "format_failure"}  # fmt: skip
EVENT_TYPES = {"prompt", "agent_action", "tool_call", "observation", "memory_update", "final_answer", "error"}


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def play(run, **loop_options):
    for episode in run.episodes.order_by("id"):
        worker.play_episode(episode_id=episode.pk, **loop_options)
    return services.finish_run(run_id=run.pk)


def baseline_run(suite, model="baseline/random", **options):
    spec = specs.model_spec_for(model)
    return play(create_run(suite=suite, model=spec, tasks=["T1", "T2", "T3", "T4", "T5", "T6"], **options))


def comparable(summaries):
    return {task: (s["primary_score"], s["metrics"], s["completeness"]) for task, s in summaries.items()}


@pytest.fixture
def demo():
    return import_demo()


# ── export → import ──────────────────────────────────────────────────────────────────────────


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


# ── how our step record maps to the official fields ──────────────────────────────────────────


@pytest.fixture
def server():
    with FakeLLM() as fake:
        yield fake


def build_messages(instance, *, tool_specs):
    return [{"role": "system", "content": "You analyse EEG."}, {"role": "user", "content": instance.record_id}]


def model_run(suite, server, monkeypatch, *, protocol="text", task="T2"):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    for instance in suite.instances.select_related("task"):
        instance.expected_output_schema = OUTPUT_SCHEMAS[instance.task.code]
        instance.save()
    model, _ = ModelSpec.objects.get_or_create(name="fake", provider_model="openai/fake-model")
    settings = {"temperature": 0, "max_tokens": 64, "tool_protocol": protocol, "timeout_sec": 5}
    return create_run(suite=suite, model=model, tasks=[task], api_base=server.api_base, api_key_env="FAKE_LLM_KEY",
                      settings=settings)  # fmt: skip


def tools(instance, name, arguments):
    return {"record_id": arguments.get("record_id"), "tool": name, "peak_hz": 9.5}


def action(**fields):
    return fake_llm.text(json.dumps(fields))


def step_outline(episode):
    return [(step.kind, step.text, (step.result or {}).get("reason")) for step in episode.steps.all()]


def test_nudges_memory_and_retries_map_to_the_official_events_and_back(suite, server, monkeypatch, tmp_path, settings):
    settings.EEGAB_PROVIDER_RETRIES, settings.EEGAB_RETRY_BASE_DELAY_SEC = 1, 0.001
    run = model_run(suite, server, monkeypatch)
    server.add(
        fake_llm.text("let me think"),
        action(action="tool_call", tool_name="compute_psd", arguments={"record_id": "rec-t2-7f3a"}),
        fake_llm.http_error(503),
        action(action="final_answer", classification="noise"),
        action(action="memory_update", memory="peak at 9.5 Hz"),
        action(action="final_answer", classification="clean", findings=["alpha"]),
    )
    play(run, build_messages=build_messages, tool_runner=tools)
    export_run(run=run, out_dir=tmp_path)

    row = read_jsonl(tmp_path / "T2" / "runs.jsonl")[0]
    assert row["usage"]["protocol_retries"] == 2 and row["usage"]["format_failure"] is False
    assert row["usage"]["turns"] == 5 and row["usage"]["tool_calls"] == 1
    assert row["usage"]["total_tokens"] == row["usage"]["prompt_tokens"] + row["usage"]["completion_tokens"] == 600
    events = read_jsonl(tmp_path / "T2" / "trajectories" / f"{row['scenario_id']}.jsonl")
    assert [(e["step"], e["event_type"]) for e in events] == [
        (0, "prompt"), (1, "agent_action"), (1, "error"), (2, "agent_action"), (2, "tool_call"), (3, "error"),
        (3, "agent_action"), (3, "error"), (4, "agent_action"), (4, "memory_update"), (5, "agent_action"),
        (5, "final_answer"),
    ]  # fmt: skip
    errors = [e["error"] for e in events if e["event_type"] == "error"]
    assert errors[0] == "unparseable action; protocol repair 1/3"
    assert errors[1].startswith("provider attempt 1 failed: ")
    assert errors[2].startswith("final-answer schema repair 1/3: $.classification")
    assert events[1]["agent_message"]["action_type"] == "invalid_action"
    assert events[9]["agent_message"] == {"memory_content": "peak at 9.5 Hz"}

    imported = import_official_run(path=tmp_path, suite=suite, model=run.model)
    before, after = run.episodes.get(), imported.episodes.get()
    assert step_outline(after) == step_outline(before)
    assert replay_messages(after) == replay_messages(before)
    assert after.scores == before.scores and after.cost_usd is None  # an unpriced model stays unpriced


def test_a_format_failure_and_an_infrastructure_failure_as_official_rows(suite, server, monkeypatch, tmp_path):
    run = model_run(suite, server, monkeypatch, task="T3")
    server.add(*[action(action="final_answer", classification="maybe")] * 4)
    play(run, build_messages=build_messages, tool_runner=tools)
    failed_run = model_run(suite, server, monkeypatch, task="T4")
    server.add(fake_llm.http_error(500))
    play(failed_run, build_messages=build_messages, tool_runner=tools)
    export_run(run=run, out_dir=tmp_path / "format")
    export_run(run=failed_run, out_dir=tmp_path / "failed")

    row = read_jsonl(tmp_path / "format" / "T3" / "runs.jsonl")[0]
    assert row["status"] == "completed" and row["usage"]["format_failure"] is True
    assert row["usage"]["protocol_retries"] == 3 and row["prediction"]["classification"] == "maybe"
    assert row["error"] == "protocol recovery exhausted: final answer failed schema: $.classification: value is not in enum"
    events = read_jsonl(tmp_path / "format" / "T3" / "trajectories" / f"{row['scenario_id']}.jsonl")
    assert [event["error"] for event in events if event["event_type"] == "error"] == [
        *(f"final-answer schema repair {n}/3: $.classification: value is not in enum" for n in (1, 2, 3)),
        row["error"],
    ]  # the official runner's log of the same episode
    failed = read_jsonl(tmp_path / "failed" / "T4" / "runs.jsonl")[0]
    assert (failed["status"], failed["invalid"], failed["prediction"], failed["score"]) == ("failed", True, {}, {})
    assert failed["error"]
    assert json.loads((tmp_path / "failed" / "T4" / "failed_cases.json").read_text()) == [failed]

    imported = import_official_run(path=tmp_path / "failed" / "T4", suite=suite, model=run.model)
    episode = imported.episodes.get()
    assert imported.status == Status.FAILED
    assert (episode.status, episode.error_kind, episode.scores) == (Status.FAILED, "infrastructure", {})


def test_native_calls_answered_with_a_stub_are_not_exported(suite, server, monkeypatch, tmp_path):
    run = model_run(suite, server, monkeypatch, protocol="native")
    calls = [("compute_psd", {"record_id": "rec-t2-7f3a"})] * 4
    server.add(fake_llm.tool_calls(*calls),
               fake_llm.tool_calls(("submit_final_answer", {"classification": "clean", "findings": []})))  # fmt: skip
    play(run, build_messages=build_messages, tool_runner=tools)
    assert run.episodes.get().steps.filter(kind=Kind.TOOL_CALL).count() == 4  # three run, one stub

    export_run(run=run, out_dir=tmp_path)

    row = read_jsonl(tmp_path / "T2" / "runs.jsonl")[0]
    events = read_jsonl(tmp_path / "T2" / "trajectories" / f"{row['scenario_id']}.jsonl")
    tool_events = [e for e in events if e["event_type"] == "tool_call"]
    assert len(tool_events) == row["usage"]["tool_calls"] == 3
    assert {e["observation"]["status"] for e in tool_events} == {"ok"}


# ── the official summary formats ─────────────────────────────────────────────────────────────


def synthetic_complete_items(task):
    if task == "T5":
        items = []
        for index in range(280):
            subject = f"chb{index % 24 + 1:02d}"
            gold = [[100.0, 160.0]] if index < 140 else []
            predicted = [{"onset_sec": 110.0, "offset_sec": 150.0}] if index % 3 else []
            items.append(ScoringItem(f"c5_seizure_{subject}_{index:03d}", {"seizure_events": gold},
                                     {"seizure_events": predicted}, duration_sec=3600.0))  # fmt: skip
        return items
    stages = ["W", "N1", "N2", "N3", "REM"]
    return [
        ScoringItem(f"c6_sleep_{index:03d}", {"epoch_labels_aasm": [stages[(index + e) % 5] for e in range(10)]},
                    {"hypnogram_rle": [{"start_epoch": 0, "end_epoch": 9, "stage": "N2"}]}, n_epochs=10)
        for index in range(197)
    ]  # fmt: skip


def official_summaries(tmp_path):
    summaries = {}
    for task in ("T1", "T2"):
        answers = [json.loads(line) for line in (UPSTREAM / "answer_keys" / f"{task}.jsonl").read_text().splitlines()]
        key = "answer" if task == "T1" else "classification"
        predictions = tmp_path / f"{task}.jsonl"
        predictions.write_text("\n".join(
            json.dumps({"scenario_id": row["scenario_id"], "status": "completed",
                        "prediction": {key: row["gold"]["answer" if task == "T1" else "label"]}})
            for row in answers
        ))  # fmt: skip
        _, items, _ = load_items(UPSTREAM / "scenarios" / f"{task}.jsonl", UPSTREAM / "answer_keys" / f"{task}.jsonl",
                                 predictions)  # fmt: skip
        summaries[task] = score_task(task, items)
    for task in ("T5", "T6"):
        summaries[task] = score_task(task, synthetic_complete_items(task))
    return summaries


def test_complete_task_summaries_have_the_official_layout(tmp_path):
    for task, summary in official_summaries(tmp_path).items():
        official = official_task_summary(summary)
        assert official["official"] is True and set(official) == SUMMARY_KEYS, task
        assert set(official["completeness"]) == COMPLETENESS_KEYS
        assert set(official["metrics"]) == METRIC_KEYS[task], task
        assert official["primary_score"] == official["metrics"][official["primary_metric"]]
        if task == "T5":
            assert all(set(counts) == EVENT_COUNT_KEYS for counts in official["metrics"]["subject_metrics"].values())
            assert set(official["metrics"]["pooled"]) == EVENT_COUNT_KEYS
            assert set(official["metrics"]["event_parameters"]) == EVENT_PARAMETER_KEYS
            assert len(official["metrics"]["subject_metrics"]) == official["metrics"]["n_subjects"] == 24
        if task == "T6":
            assert len(official["metrics"]["per_record"]) == 197
            assert set(next(iter(official["metrics"]["per_record"].values()))) == {"macro_f1", "cohen_kappa"}
        if task in ("T1", "T2"):
            assert official["primary_score"] == 1.0  # gold answers
        json.dumps(official, allow_nan=False)


def test_the_benchmark_summary_has_the_official_layout_only_when_all_six_are_official():
    summary = {"official": True, "primary_score": 0.5}
    complete = benchmark_summary({task: summary for task in ("T1", "T2", "T3", "T4", "T5", "T6")})
    assert set(complete) == {"schema", "official", "overall", "primary_scores", "definition"}
    assert complete["overall"] == 0.5
    assert benchmark_summary({"T1": summary})["official"] is False


# ── import of the official runner's own output ───────────────────────────────────────────────


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


def test_export_command_writes_the_official_layout(demo, tmp_path):
    run = baseline_run(demo, limit=1)
    out = StringIO()
    call_command("export_run", str(run.pk), "--out", str(tmp_path / "x"), stdout=out)
    assert "6 trajectories" in out.getvalue()
    assert (tmp_path / "x" / "T5" / "summary.json").is_file() and (tmp_path / "x" / "benchmark_summary.json").is_file()
    with pytest.raises(CommandError, match="There is no run 999"):
        call_command("export_run", "999", "--out", str(tmp_path / "y"))
    assert Suite.objects.filter(name="demo").exists()
