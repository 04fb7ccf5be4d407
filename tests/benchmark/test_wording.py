"""Prompt sets: every text of the official set comes from the official package, read at run time.

These tests use the stand-in of the package (tests/official_standin: the official module layout
and names, made-up texts), so they run everywhere; tests/benchmark/test_official_wording.py
checks the same against the real package where it is installed.
"""
import ast
import json

import numpy as np
import pytest

from benchmark import wording as prompt_sets
from benchmark.models import ModelSpec
from benchmark.wording import OFFICIAL, PLATFORM, PromptSetUnavailable, check_prompt_set, default_prompt_set, prompt_set
from benchmark.wording.official import OfficialPackageError
from runs.episode.engine import run_episode
from runs.episode.opening import first_request
from runs.models import Episode, Status, Step
from runs.services import create_run
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS
from tools_app import call_tool

pytestmark = pytest.mark.django_db

ASYMMETRY_NOT_APPLICABLE = {
    "_meta": {"approx_response_bytes": 150, "approx_response_kb": 0.1, "approx_response_tokens": 37,
              "truncated": False, "n_rows": 0},
    "record_id": "EEG_0042", "applicable": False, "n_pairs_analyzed": 0, "pairs": [],
    "reason": "Our own words for why no pair is there.", "available_channels": ["EEG"],
}  # fmt: skip


@pytest.fixture
def t3(suite):
    instance = suite.instances.get(task__code="T3")
    instance.expected_output_schema = OUTPUT_SCHEMAS["T3"]
    instance.allowed_tools = ["get_recording_info", "compute_asymmetry", "compute_psd"]
    instance.save()
    return instance


def test_without_the_package_the_platform_set_is_used_and_the_official_one_refused(suite, model_spec):
    assert not prompt_sets.official_available() and default_prompt_set() == PLATFORM
    assert prompt_set(PLATFORM).name == PLATFORM
    with pytest.raises(PromptSetUnavailable, match=r"pip install -e '\.\[official\]'"):
        check_prompt_set(OFFICIAL)
    with pytest.raises(ValueError, match="one of official, platform"):
        check_prompt_set("paper")
    with pytest.raises(PromptSetUnavailable):
        create_run(suite=suite, model=model_spec, tasks=["T1"], prompt_set=OFFICIAL)
    run = create_run(suite=suite, model=model_spec, tasks=["T1"])
    assert run.prompt_set == PLATFORM


def test_every_official_text_comes_from_the_package(official_standin, t3):
    assert prompt_sets.official_available() and default_prompt_set() == OFFICIAL
    wording = prompt_set(OFFICIAL)
    specs = wording.tool_specs(t3)
    assert [spec["function"]["name"] for spec in specs] == t3.allowed_tools  # the scenario's order
    assert specs[0]["function"]["description"] == "Stand-in description of get_recording_info."
    system, user = wording.opening(t3, record_id="EEG_4817", tool_specs=specs)
    assert system == {"role": "system",
                      "content": "Stand-in system prompt of T3; tools: get_recording_info,compute_asymmetry,compute_psd."}
    assert user["content"].startswith("Stand-in user prompt. Record ID**: `EEG_4817`.")
    assert t3.scenario_id not in user["content"]
    assert wording.submit_tool(OUTPUT_SCHEMAS["T3"])["function"]["description"] == "Stand-in submit tool."
    assert wording.repair_nudge(["$.a: x", "$.b: y"], native=False) == "Stand-in repair (text): $.a: x; $.b: y."
    assert wording.repair_nudge(["$.a: x"], native=True) == "Stand-in repair (native): $.a: x."
    assert wording.invalid_action_nudge(native=False) == "Stand-in invalid-action nudge."
    assert wording.invalid_action_nudge(native=True) == wording.empty_answer_nudge() == "Stand-in empty-turn nudge."
    assert wording.tool_budget_nudge() == "Stand-in tool-budget nudge."
    assert wording.budget_stub() == "[Tool not executed: stand-in total budget spent.]"
    assert wording.per_turn_stub() == "[Tool not executed: stand-in turn limit.]"
    assert wording.memory_acknowledgement({"peak": 9}) == (
        "[Tool Result]\n{'note': 'Stand-in memory kept.', 'content': {'peak': 9}}"
    )


def test_tool_results_read_as_the_official_runner_sends_them(official_standin):
    wording = prompt_set(OFFICIAL)
    info = {"record_id": "EEG_0042", "reference": 0}
    assert wording.tool_result("get_recording_info", info, "", native=False) == (
        "[Tool Result]\n{'record_id': 'EEG_0042', 'reference': 0 (FIFFV_MNE_CUSTOM_REF_OFF)}"
    )
    assert wording.tool_result("get_recording_info", info, "", native=True).startswith("{'record_id'")
    assert wording.tool_result("x", None, "Tool 'x' is not allowed for this scenario.", native=True) == (
        "Tool 'x' is not allowed for this scenario."
    )
    # The asymmetry tool's not-applicable reason is the package's own, and the sizes are measured again.
    text = wording.tool_result("compute_asymmetry", ASYMMETRY_NOT_APPLICABLE, "", native=True)
    shown = ast.literal_eval(text)  # the repr of plain data
    assert shown["reason"] == "Stand-in reason: no left/right pairs."
    body = {key: value for key, value in shown.items() if key != "_meta"}
    size = len(json.dumps(body, ensure_ascii=False))
    assert shown["_meta"] == {"approx_response_bytes": size, "approx_response_kb": round(size / 1024, 1),
                              "approx_response_tokens": size // 4, "truncated": False, "n_rows": 0}  # fmt: skip
    assert ASYMMETRY_NOT_APPLICABLE["reason"] == "Our own words for why no pair is there."  # the stored one stays


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_a_windowed_refusal_reads_as_upstreams_under_the_official_set_and_gives_the_record_under_ours(
    official_standin, tmp_path, native
):
    # A call with tmax 4080 on a 30,900-s night (one channel at 10 Hz: the budget counts windows).
    path = tmp_path / "night.npy"
    np.save(path, np.random.default_rng(4).standard_normal(309_000))
    arguments = {"record_id": "EEG_0042", "window_sec": 1, "tmin": 0, "tmax": 4080}
    content = call_tool(path, "compute_windowed_features", arguments, record_id="EEG_0042",
                        metadata={"sampling_rate": 10.0})
    official_object = {key: value for key, value in content.items()
                       if key not in ("error_code", "range_sec", "record_sec")}  # fmt: skip
    prefix = "" if native else "[Tool Result]\n"

    official = prompt_set(OFFICIAL).tool_result("compute_windowed_features", content, "", native=native)
    assert official == prefix + str(official_object)  # byte for byte what the official tool's object prints
    assert "(record is 4080.0s long)" in official and "30900" not in official

    platform = prompt_set(PLATFORM).tool_result("compute_windowed_features", content, "", native=native)
    assert platform == official.replace("(record is 4080.0s long)",
                                        "(the range asked for is 4080.0s long, of a 30900.0s record)")
    assert "range_sec" not in platform and "error_code" not in platform


def test_the_first_request_shows_what_the_model_gets(official_standin, t3):
    messages, tools = first_request(t3, prompt_set(OFFICIAL), native=True)
    assert [message["role"] for message in messages] == ["system", "user"]
    assert [tool["function"]["name"] for tool in tools] == [*t3.allowed_tools, "submit_final_answer"]
    assert first_request(t3, prompt_set(OFFICIAL), native=False)[1] is None


class Tools:
    def __init__(self):
        self.calls = []

    def __call__(self, instance, tool_name, arguments):
        self.calls.append(tool_name)
        if tool_name == "compute_asymmetry":
            return dict(ASYMMETRY_NOT_APPLICABLE, record_id=arguments["record_id"])
        return {"record_id": arguments["record_id"], "reference": 0}


def official_run(suite, api_base, *, protocol="text"):
    model = ModelSpec.objects.create(name=f"fake {protocol}", provider_model="openai/fake-model")
    return create_run(
        suite=suite, model=model, tasks=["T3"], api_base=api_base, api_key_env="FAKE_LLM_KEY", prompt_set=OFFICIAL,
        settings={"tool_protocol": protocol, "temperature": 0, "max_tokens": 8192, "timeout_sec": 2},
    )  # fmt: skip


def test_an_official_text_episode_speaks_only_the_packages_words(official_standin, t3, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    with FakeLLM() as server:
        run = official_run(t3.suite, server.api_base)
        record = run.episodes.get().record_id  # the episode's own, not the instance's
        server.add(
            fake_llm.text(json.dumps({"action": "tool_call", "tool_name": "get_recording_info",
                                      "arguments": {"record_id": record}})),
            fake_llm.text("I will think about it."),
            fake_llm.text(json.dumps({"action": "tool_call", "tool_name": "compute_asymmetry",
                                      "arguments": {"record_id": record}})),
            fake_llm.text(json.dumps({"action": "memory_update", "memory": "no pairs"})),
            fake_llm.text(json.dumps({"action": "final_answer", "classification": "maybe", "findings": []})),
            fake_llm.text(json.dumps({"action": "final_answer", "classification": "normal", "findings": []})),
        )  # fmt: skip
        episode = run_episode(episode_id=run.episodes.get().pk, tool_runner=Tools())
        requests = list(server.requests)
    assert episode.status == Status.COMPLETED and episode.prediction["classification"] == "normal"
    assert "tools" not in requests[0] and (requests[0]["max_tokens"], requests[0]["temperature"]) == (8192, 0)
    assert requests[0]["messages"][0]["content"].startswith("Stand-in system prompt of T3")
    assert f"`{record}`" in requests[0]["messages"][1]["content"] and record != t3.record_id
    sent = [message["content"] for message in requests[-1]["messages"] if message["role"] == "user"][1:]
    assert sent == [
        f"[Tool Result]\n{{'record_id': '{record}', 'reference': 0 (FIFFV_MNE_CUSTOM_REF_OFF)}}",
        "Stand-in invalid-action nudge.",
        sent[2],
        "[Tool Result]\n{'note': 'Stand-in memory kept.', 'content': 'no pairs'}",
        "Stand-in repair (text): $.classification: value is not in enum.",
    ]
    assert "'reason': 'Stand-in reason: no left/right pairs.'" in sent[2]
    prompt = episode.steps.get(kind=Step.Kind.PROMPT)
    assert prompt.result["prompt_set"] == OFFICIAL == run.prompt_set


def test_an_official_native_episode_gets_the_packages_tools_and_stubs(official_standin, t3, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    record = t3.record_id
    calls = [("compute_psd", {"record_id": record, "tmin": t}) for t in range(4)]
    with FakeLLM() as server:
        server.add(fake_llm.tool_calls(*calls),
                   fake_llm.tool_calls(("submit_final_answer", {"classification": "normal", "findings": []})))
        run = official_run(t3.suite, server.api_base, protocol="native")
        episode = run_episode(episode_id=run.episodes.get().pk, tool_runner=Tools())
        requests = list(server.requests)
    assert episode.status == Status.COMPLETED
    tools = requests[0]["tools"]
    assert [tool["function"]["name"] for tool in tools] == [*t3.allowed_tools, "submit_final_answer"]
    assert {tool["function"]["description"] for tool in tools} >= {"Stand-in submit tool.",
                                                                   "Stand-in description of compute_psd."}
    answered = [message["content"] for message in requests[1]["messages"] if message["role"] == "tool"]
    assert answered[3] == "[Tool not executed: stand-in turn limit.]"


def test_a_worker_without_the_package_fails_the_episode_as_infrastructure(official_standin, t3, model_spec):
    run = create_run(suite=t3.suite, model=model_spec, tasks=["T3"], prompt_set=OFFICIAL)
    with pytest.MonkeyPatch.context() as patch:  # the worker: the package is not installed there
        patch.setattr("benchmark.wording.official_available", lambda: False)
        episode = run_episode(episode_id=run.episodes.get().pk)
    assert episode.status == Status.FAILED and episode.error_kind == Episode.ErrorKind.INFRASTRUCTURE
    assert "pip install -e '.[official]'" in episode.error_message
    assert not episode.steps.filter(kind=Step.Kind.PROMPT).exists()  # nothing reached a model


def test_a_package_without_what_the_set_reads_is_a_clear_error(official_standin, monkeypatch):
    from benchmark.wording import official

    runner = __import__("eeg_agent_bench.runners.run_scenario", fromlist=["run_scenario"])
    monkeypatch.setattr(runner, "run_scenario", lambda history: history)  # no stub texts in it
    monkeypatch.setattr(official, "_loaded", None)
    with pytest.raises(OfficialPackageError, match="not-executed stubs"):
        prompt_set(OFFICIAL)


def test_the_official_extra_installs_the_package_at_the_pinned_commit():
    import tomllib

    from benchmark.wording import OFFICIAL_COMMIT
    from tests.datafiles import DATA

    project = tomllib.loads((DATA.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (requirement,) = project["optional-dependencies"]["official"]
    assert requirement == f"eeg-agent-bench @ git+https://github.com/528why/EEGAgentBenchmark@{OFFICIAL_COMMIT}"
