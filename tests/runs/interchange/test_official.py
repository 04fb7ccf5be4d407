"""How our record maps to the official formats and back, and our scorer's summaries in the official layout.

Nudges, memory, retries and failures become the runner's events and rows, which an import reads
back. The summary format is that written by 528why/EEGAgentBenchmark (``reporting/official.py``
at commit 5ac8aba): the key sets below are taken from there.
"""
import json

import pytest

from benchmark.models import ModelSpec
from benchmark.scoring import ScoringItem, benchmark_summary, score_task
from benchmark.scoring.files import load_items
from runs.episode.transcript import replay_messages
from runs.interchange.export import export_run
from runs.interchange.importing import import_official_run
from runs.interchange.official import official_task_summary
from runs.models import Status, Step
from runs.services import create_run
from tests.datafiles import OFFICIAL as UPSTREAM
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.interchange.played import play, read_jsonl
from tests.runs.test_protocol import OUTPUT_SCHEMAS

pytestmark = pytest.mark.django_db

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
