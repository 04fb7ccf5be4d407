"""The episode loop end to end: litellm over real HTTP to a local fake server, steps, limits, scoring, replay."""
import itertools
import json
from decimal import Decimal

import numpy as np
import pytest

from benchmark.models import ModelSpec
from benchmark.prompts import OFFICIAL_TOOLS
from benchmark.wording.platform import BUDGET_STUB, INVALID_TEXT_ACTION_NUDGE, SUBMIT_TOOL_NAME, TOOL_BUDGET_NUDGE
from runs.agents import build_agent
from runs.model.routing import TRANSPORTS
from runs.episode.engine import claim_episode, run_episode
from runs.episode.loop import ToolBug
from runs.episode.transcript import replay_messages
from runs.models import Episode, Run, Status, Step
from runs.services import create_run, reset_episode_for_retry
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("steps_keep_their_shapes")]

Kind = Step.Kind
ONE_TOOL_CALL_EPISODE = [Kind.PROMPT, Kind.AGENT_MESSAGE, Kind.TOOL_CALL, Kind.AGENT_MESSAGE, Kind.FINAL_ANSWER]


def spec(name):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of the recording",
            "parameters": {
                "type": "object",
                "properties": {"record_id": {"type": "string"}},
                "required": ["record_id"],
            },
        },
    }


TOOL_SPECS = [spec("get_recording_info"), spec("compute_psd"), spec("compute_windowed_features")]


def build_messages(instance, *, tool_specs):
    names = ", ".join(s["function"]["name"] for s in tool_specs)
    return [
        {"role": "system", "content": f"You analyse EEG ({instance.task.code}). Tools: {names}."},
        {"role": "user", "content": f"Record ID: {instance.record_id}"},
    ]


class Tools:
    """Stand-in for the platform's tools: records each call, answers with a small dict."""

    def __init__(self, results=None):
        self.calls = []
        self.results = results or {}

    def __call__(self, instance, tool_name, arguments):
        self.calls.append((instance.record_id, tool_name, arguments))
        return self.results.get(tool_name) or self.result_of(tool_name, arguments.get("record_id"))

    @staticmethod
    def result_of(tool_name, record_id):
        return {"_meta": {"approx_response_tokens": 12, "truncated": False}, "record_id": record_id,
                "tool": tool_name, "peak_hz": 9.5, "flat": False, "age": None}  # fmt: skip


def tool_call(name="get_recording_info", record_id="rec-t2-7f3a", **arguments):
    arguments = {"record_id": record_id, **arguments}
    return json.dumps({"action": "tool_call", "tool_name": name, "arguments": arguments})


def t2_answer(label="ocular_contaminated"):
    return json.dumps({"action": "final_answer", "classification": label, "findings": ["frontal slow waves"]})


@pytest.fixture
def server():
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(autouse=True)
def fast_retries(settings, monkeypatch):
    settings.EEGAB_PROVIDER_RETRIES = 2
    settings.EEGAB_RETRY_BASE_DELAY_SEC = 0.001
    settings.EEGAB_RETRY_MAX_DELAY_SEC = 0.004
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")


_names = itertools.count()


@pytest.fixture
def make_run(official_suite, server):
    def make(task="T2", *, protocol="text", transport="auto", limits=None, **prices):
        name = f"fake model {next(_names)}"
        model = ModelSpec.objects.create(name=name, provider_model="openai/fake-model", **prices)
        return create_run(
            suite=official_suite,
            model=model,
            tasks=[task],
            api_base=server.api_base,
            api_key_env="FAKE_LLM_KEY",
            settings={"temperature": 0, "max_tokens": 2048, "tool_protocol": protocol, "transport": transport,
                      "timeout_sec": 2},  # fmt: skip
            limits=limits or {},
        )

    return make


def play(run, task="T2", tools=None):
    episode = run.episodes.get(instance__task__code=task)
    return run_episode(
        episode_id=episode.pk, tool_runner=tools or Tools(), build_messages=build_messages, tool_specs=TOOL_SPECS
    )


def kinds(episode):
    return list(episode.steps.values_list("kind", flat=True))


def errors(episode):
    """The episode's error steps, as the official runner logs the end of an unanswered episode."""
    return list(episode.steps.filter(kind=Kind.ERROR).values_list("error", flat=True))


def nudges(episode):
    return [step.result["reason"] for step in episode.steps.filter(kind=Kind.NUDGE)]


def assert_replay_matches_what_was_sent(episode, server):
    """Every request's messages are a prefix of the replay, and the replay ends with the last reply."""
    replay = replay_messages(episode)
    for request in server.requests:
        assert request["messages"] == replay[: len(request["messages"])]
    assert len(replay) >= len(server.requests[-1]["messages"])


# ── text protocol ────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_text_episode_is_recorded_step_by_step_scored_and_replayable(make_run, server, transport):
    server.add(
        fake_llm.text(tool_call(), reasoning="check the recording first",
                      usage_body=fake_llm.usage(100, 20, cached=50, cache_write=5, reasoning=3)),
        fake_llm.text(t2_answer(), usage_body=fake_llm.usage(200, 30)),
    )  # fmt: skip
    tools = Tools()
    episode = play(make_run(transport=transport), tools=tools)

    assert episode.status == Status.COMPLETED
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert episode.prediction == json.loads(t2_answer())
    assert episode.final_answer == episode.prediction
    assert episode.scores == {"gold": "ocular_contaminated", "predicted": "ocular_contaminated", "correct": True}
    assert (episode.n_turns, episode.n_tool_calls) == (2, 1)
    assert (episode.prompt_tokens, episode.completion_tokens) == (300, 50)
    assert (episode.cache_read_tokens, episode.cache_write_tokens, episode.reasoning_tokens) == (50, 5, 3)
    assert episode.cost_usd is None  # unpriced model
    assert episode.wall_time_sec > 0 and episode.finished_at is not None
    assert kinds(episode) == ONE_TOOL_CALL_EPISODE

    first_turn, call = episode.steps.get(index=1), episode.steps.get(index=2)
    assert first_turn.reasoning == "check the recording first"
    assert (first_turn.prompt_tokens, first_turn.cache_read_tokens, first_turn.latency_ms > 0) == (100, 50, True)
    assert tools.calls == [("rec-t2-7f3a", "get_recording_info", {"record_id": "rec-t2-7f3a"})]
    assert call.tool_name == "get_recording_info"
    assert call.result["content"] == Tools.result_of("get_recording_info", "rec-t2-7f3a")
    # The model reads the tool result as the official runner sends it: a Python repr after a marker.
    assert call.text.startswith("[Tool Result]\n{'_meta': {'approx_response_tokens': 12, 'truncated': False}")
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": call.text}
    assert_replay_matches_what_was_sent(episode, server)
    assert replay_messages(episode)[-1] == {"role": "assistant", "content": t2_answer()}


def test_failed_attempts_are_steps_with_their_tokens_and_do_not_change_the_conversation(make_run, server):
    server.add(fake_llm.empty_choices(fake_llm.usage(40, 0)), fake_llm.http_error(429), fake_llm.text(t2_answer()))
    episode = play(make_run())
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert kinds(episode) == [Kind.PROMPT, Kind.ERROR, Kind.ERROR, Kind.AGENT_MESSAGE, Kind.FINAL_ANSWER]
    assert episode.prompt_tokens == 140
    assert server.requests[0]["messages"] == server.requests[2]["messages"]
    assert_replay_matches_what_was_sent(episode, server)


def test_an_invalid_final_answer_gets_a_repair_nudge_naming_its_errors(make_run, server):
    server.add(fake_llm.text(t2_answer("blink")), fake_llm.text(t2_answer()))
    episode = play(make_run())
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    nudge = episode.steps.get(kind=Kind.NUDGE)
    error = "$.classification: value is not in enum"
    assert nudge.result == {"reason": "invalid_final_answer", "attempt": 1, "errors": [error]}
    assert error in server.requests[1]["messages"][-1]["content"]
    assert_replay_matches_what_was_sent(episode, server)


def test_the_fourth_invalid_final_answer_is_scored_as_given(make_run, server):
    server.add(*[fake_llm.text(t2_answer("ocular"))] * 4)
    episode = play(make_run())
    assert len(server.requests) == 4
    assert nudges(episode) == ["invalid_final_answer"] * 3
    assert episode.status == Status.COMPLETED
    assert episode.ended_by == Episode.EndedBy.FORMAT_FAILURE
    assert episode.prediction == episode.final_answer == json.loads(t2_answer("ocular"))
    assert episode.scores["correct"] is True  # the official scorer maps the alias "ocular"


def test_turns_without_an_action_end_as_a_format_failure_with_an_empty_prediction(make_run, server):
    server.add(*[fake_llm.text("I think this is probably ocular.")] * 4)
    episode = play(make_run())
    assert nudges(episode) == ["invalid_action"] * 3
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": INVALID_TEXT_ACTION_NUDGE}
    assert episode.ended_by == Episode.EndedBy.FORMAT_FAILURE
    assert (episode.prediction, episode.final_answer) == ({}, None)
    assert episode.scores["correct"] is False
    assert errors(episode) == ["Action type not recognised.", "protocol recovery exhausted: no parseable action"]


def test_an_empty_text_turn_is_replayed_with_a_placeholder(make_run, server):
    server.add(fake_llm.text(""), fake_llm.text(t2_answer()))
    episode = play(make_run())
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": "(no output)"}
    assert_replay_matches_what_was_sent(episode, server)


def test_a_usable_action_resets_the_count_of_failed_turns(make_run, server):
    unusable = fake_llm.text("?")
    server.add(unusable, unusable, unusable, fake_llm.text(tool_call()), unusable, fake_llm.text(t2_answer()))
    episode = play(make_run())
    assert nudges(episode) == ["invalid_action"] * 4
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER


def test_t6_answers_must_cover_every_epoch(make_run, server):
    def night(*segments):
        return json.dumps({
            "action": "final_answer",
            "hypnogram_rle": [{"start_epoch": s, "end_epoch": e, "stage": stage} for s, e, stage in segments],
            "architecture": {"REM_pct": 0.0, "N3_pct": 0.0, "sleep_efficiency": 0.75},
        })

    server.add(
        fake_llm.text(night((0, 0, "W"), (1, 2, "N2"))),
        fake_llm.text(night((0, 0, "W"), (1, 1, "N1"), (2, 3, "N2"))),
    )
    episode = play(make_run("T6"), task="T6")
    assert "must cover epochs 0..3; ended at 2" in episode.steps.get(kind=Kind.NUDGE).text
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert episode.scores["macro_f1"] == pytest.approx(0.6)  # three stages right, N3 and REM absent score 0
    assert episode.scores["cohen_kappa"] == pytest.approx(1.0)


def test_several_text_tool_calls_run_up_to_three(make_run, server):
    calls = [{"tool_name": "compute_psd", "arguments": {"record_id": "rec-t2-7f3a", "tmin": t}} for t in range(4)]
    server.add(fake_llm.text(json.dumps(calls)), fake_llm.text(t2_answer()))
    tools = Tools()
    episode = play(make_run(), tools=tools)
    assert [arguments["tmin"] for _, _, arguments in tools.calls] == [0, 1, 2]
    assert episode.n_tool_calls == 3
    assert [m["content"][:13] for m in server.requests[1]["messages"][-3:]] == ["[Tool Result]"] * 3


def test_an_unknown_tool_gets_the_official_not_allowed_result(make_run, server):
    server.add(fake_llm.text(tool_call("read_file")), fake_llm.text(t2_answer()))
    tools = Tools()
    episode = play(make_run(), tools=tools)
    call = episode.steps.get(kind=Kind.TOOL_CALL)
    assert tools.calls == []
    assert call.result == {"status": "tool_not_available", "content": None, "tool_call_id": "call_0_0"}
    assert call.text == "[Tool Result]\nTool 'read_file' is not allowed for this scenario."
    assert episode.n_tool_calls == 1


def test_a_memory_update_is_acknowledged_in_the_conversation(make_run, server):
    memory = json.dumps({"action": "memory_update", "memory": {"alpha_peak_hz": 9.5}})
    server.add(fake_llm.text(memory), fake_llm.text(t2_answer()))
    episode = play(make_run())
    assert server.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "[Tool Result]\n{'message': 'Memory stored.', 'content': {'alpha_peak_hz': 9.5}}",
    }
    assert nudges(episode) == ["memory_update"]
    assert episode.n_tool_calls == 0


# ── native protocol ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_native_episode_runs_three_calls_a_turn_and_answers_the_rest_with_a_stub(make_run, server, transport):
    four = [("compute_psd", {"record_id": "rec-t2-7f3a", "tmin": t}) for t in range(4)]
    answer = {"classification": "ocular_contaminated", "findings": []}
    server.add(
        fake_llm.tool_calls(*four, content="Four windows."), fake_llm.tool_calls((SUBMIT_TOOL_NAME, answer))
    )
    tools = Tools()
    episode = play(make_run(protocol="native", transport=transport), tools=tools)

    first = server.requests[0]
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "get_recording_info", "compute_psd", "compute_windowed_features", SUBMIT_TOOL_NAME,
    ]  # fmt: skip
    assert first["tools"][-1]["function"]["parameters"] == OUTPUT_SCHEMAS["T2"]
    assert first["tool_choice"] == "auto"

    sent = server.requests[1]["messages"]
    assert sent[2]["role"] == "assistant" and sent[2]["content"] == "Four windows."
    assert [call["id"] for call in sent[2]["tool_calls"]] == ["call_0", "call_1", "call_2", "call_3"]
    assert [(m["role"], m["tool_call_id"]) for m in sent[3:]] == [("tool", f"call_{i}") for i in range(4)]
    assert sent[3]["content"].startswith("{'_meta'")
    assert sent[6]["content"] == "[Tool not executed: at most 3 tool calls run per turn.]"
    assert len(tools.calls) == episode.n_tool_calls == 3
    assert episode.prediction == answer
    assert episode.scores["correct"] is True
    assert_replay_matches_what_was_sent(episode, server)


def test_an_empty_native_answer_gets_two_nudges_before_the_repair_nudges(make_run, server):
    empty = fake_llm.tool_calls((SUBMIT_TOOL_NAME, {}))
    server.add(empty, empty, empty, fake_llm.tool_calls((SUBMIT_TOOL_NAME, {"classification": "clean"})))
    episode = play(make_run(protocol="native"))
    assert nudges(episode) == ["empty_answer", "empty_answer", "invalid_final_answer"]
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert_replay_matches_what_was_sent(episode, server)


def test_an_empty_native_turn_is_an_invalid_action(make_run, server):
    server.add(fake_llm.text(""), fake_llm.tool_calls((SUBMIT_TOOL_NAME, {"classification": "clean"})))
    episode = play(make_run(protocol="native"))
    assert nudges(episode) == ["invalid_action"]
    assert "submit_final_answer" in server.requests[1]["messages"][-1]["content"]


def test_t1_has_no_tools_only_the_submit_function(make_run, server):
    server.add(
        fake_llm.tool_calls(("compute_psd", {"record_id": "rec-t1-7f3a"})),
        fake_llm.tool_calls((SUBMIT_TOOL_NAME, {"answer": "B"})),
    )
    tools = Tools()
    episode = play(make_run("T1", protocol="native"), task="T1", tools=tools)
    assert [tool["function"]["name"] for tool in server.requests[0]["tools"]] == [SUBMIT_TOOL_NAME]
    assert server.requests[1]["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "call_0", "content": BUDGET_STUB},
        {"role": "user", "content": TOOL_BUDGET_NUDGE},
    ]
    assert tools.calls == []
    assert (episode.ended_by, episode.scores["correct"]) == (Episode.EndedBy.FINAL_ANSWER, True)


# ── limits ───────────────────────────────────────────────────────────────────────────────────


def test_tool_budget_nudge_then_tool_call_limit_with_an_empty_prediction(make_run, server):
    server.add(*[fake_llm.text(tool_call())] * 6)
    episode = play(make_run(limits={"max_tool_calls": 2}))
    assert nudges(episode) == ["tool_budget_used", "tool_budget", "tool_budget", "tool_budget"]
    assert server.requests[2]["messages"][-1] == {"role": "user", "content": TOOL_BUDGET_NUDGE}
    assert (episode.status, episode.ended_by) == (Status.COMPLETED, Episode.EndedBy.TOOL_CALL_LIMIT)
    assert (episode.prediction, episode.n_tool_calls, episode.n_turns) == ({}, 2, 6)
    assert episode.scores["correct"] is False
    assert errors(episode) == ["tool budget exhausted before a valid final answer"]


def test_turn_limit_ends_with_an_empty_prediction(make_run, server):
    server.add(*[fake_llm.text(tool_call())] * 2)
    episode = play(make_run(limits={"max_turns": 2}))
    assert (episode.status, episode.ended_by) == (Status.COMPLETED, Episode.EndedBy.TURN_LIMIT)
    assert episode.prediction == {}
    assert (episode.n_turns, len(server.requests)) == (2, 2)
    assert episode.scores["correct"] is False
    assert errors(episode) == ["max turns exceeded before a valid final answer"]


def test_a_task_that_allows_no_turn_ends_at_the_turn_limit_without_asking_the_model(make_run, server):
    from benchmark.models import Task

    Task.objects.filter(code="T2").update(max_turns=0)
    episode = play(make_run())
    assert (episode.status, episode.ended_by, episode.n_turns) == (Status.COMPLETED, Episode.EndedBy.TURN_LIMIT, 0)
    assert server.requests == [] and errors(episode) == ["max turns exceeded before a valid final answer"]


def test_run_limits_cannot_raise_the_task_limits(make_run, server):
    server.add(
        fake_llm.text(tool_call("compute_psd", record_id="rec-t1-7f3a")),
        fake_llm.text('{"answer": "B", "action": "final_answer"}'),
    )
    episode = play(make_run("T1", limits={"max_tool_calls": 50}), task="T1")
    assert episode.n_tool_calls == 0
    assert nudges(episode) == ["tool_budget"]


@pytest.mark.parametrize(
    ("limits", "requests"),
    [({"max_cost_usd": 0.05}, 1), ({"max_total_tokens": 100}, 1), ({"max_wall_time_sec": 0}, 0)],
)
def test_caps_end_the_episode_unanswered(make_run, server, limits, requests):
    server.add(*[fake_llm.text(tool_call(), usage_body=fake_llm.usage(100, 20))] * 3)
    run = make_run(limits=limits, input_price_per_mtok=1000, output_price_per_mtok=1000)
    episode = play(run)
    assert len(server.requests) == requests
    assert (episode.status, episode.ended_by) == (Status.COMPLETED, Episode.EndedBy.COST_CAP)
    assert episode.prediction == {}
    assert "cap" in episode.error_message
    assert "correct" in episode.scores


# ── failures ─────────────────────────────────────────────────────────────────────────────────


def test_provider_failure_is_an_infrastructure_failure_counted_and_re_runnable(make_run, server):
    server.add(*[fake_llm.empty_choices(fake_llm.usage(40, 0))] * 3)
    run = make_run()
    episode = play(run)
    assert len(server.requests) == 3  # one call and two retries, nothing more
    assert episode.status == Status.FAILED
    assert episode.error_kind == Episode.ErrorKind.INFRASTRUCTURE
    assert episode.ended_by == Episode.EndedBy.PROVIDER_ERROR
    assert (episode.prediction, episode.scores) == (None, {})
    assert episode.prompt_tokens == 120  # every attempt's tokens count
    assert kinds(episode) == [Kind.PROMPT, Kind.ERROR, Kind.ERROR, Kind.ERROR]

    episode = reset_episode_for_retry(episode=episode)
    server.add(fake_llm.text(t2_answer()))
    episode = play(run)
    assert (episode.status, episode.attempt, episode.scores["correct"]) == (Status.COMPLETED, 2, True)


def test_context_overflow_after_the_shrunk_retry_is_context_exceeded(make_run, server):
    server.add(fake_llm.context_overflow(), fake_llm.context_overflow())
    episode = play(make_run())
    assert episode.status == Status.FAILED
    assert episode.error_kind == Episode.ErrorKind.INFRASTRUCTURE
    assert episode.ended_by == Episode.EndedBy.CONTEXT_EXCEEDED
    assert [request["max_tokens"] for request in server.requests] == [2048, 191]


def test_a_tool_that_raises_is_a_tool_bug(make_run, server):
    def broken(instance, tool_name, arguments):
        raise ZeroDivisionError("division by zero")

    server.add(fake_llm.text(tool_call()))
    run = make_run()
    with pytest.raises(ToolBug):
        play(run, tools=broken)
    episode = run.episodes.get()
    assert (episode.status, episode.error_kind) == (Status.FAILED, Episode.ErrorKind.TOOL_BUG)
    assert "ZeroDivisionError" in episode.steps.last().error


def test_a_cancelled_run_stops_its_episode(make_run, server):
    run = make_run()
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)
    episode = play(run)
    assert (episode.status, episode.ended_by, episode.scores) == (Status.CANCELLED, Episode.EndedBy.CANCELLED, {})
    assert server.requests == []


# ── claiming ─────────────────────────────────────────────────────────────────────────────────


def test_a_finished_episode_is_never_played_again(make_run, server):
    server.add(fake_llm.text(t2_answer()))
    run = make_run()
    first = play(run)
    steps = kinds(first)
    again = play(run)
    assert (again.status, kinds(again), len(server.requests)) == (Status.COMPLETED, steps, 1)


def test_of_two_claims_of_one_episode_the_first_gets_it_and_starts_the_run(make_run):
    run = make_run()
    episode = run.episodes.get()

    first, second = claim_episode(episode.pk), claim_episode(episode.pk)

    assert first is not None and first.pk == episode.pk and second is None
    stored = Episode.objects.get(pk=episode.pk)
    assert stored.status == Status.RUNNING and stored.started_at == stored.heartbeat_at == first.started_at
    assert Run.objects.get(pk=run.pk).status == Status.RUNNING
    assert claim_episode(episode.pk + 1000) is None  # no such episode


def test_a_running_episode_is_not_claimed_twice(make_run, server):
    run = make_run()
    run.episodes.update(status=Status.RUNNING)
    episode = play(run)
    assert (episode.status, episode.steps.count(), server.requests) == (Status.RUNNING, 0, [])


@pytest.mark.steps_by_hand  # the other attempt's step is a marker of the test's own
@pytest.mark.parametrize("stalls_in", ["tool", "model"])
def test_a_worker_that_stalled_past_its_lease_writes_nothing_into_the_next_attempt(make_run, server, stalls_in):
    """While this worker waits, its lease lapses and another worker plays the episode again as attempt 2."""
    run = make_run()
    episode = run.episodes.get()

    def another_worker_takes_over():
        reset_episode_for_retry(episode=episode)  # as recover_stale_episode does
        Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING, n_turns=1)
        Step.objects.create(episode=episode, index=0, kind=Kind.PROMPT, result={"by": "attempt 2"})

    def stalling_tool(instance, tool_name, arguments):
        another_worker_takes_over()
        return Tools.result_of(tool_name, arguments.get("record_id"))

    class StallingModel:
        def __init__(self, agent):
            self.agent = agent

        def __getattr__(self, name):
            return getattr(self.agent, name)

        def respond(self, messages, *, tools=None):
            another_worker_takes_over()
            return self.agent.respond(messages, tools=tools)

    server.add(fake_llm.text(tool_call()), fake_llm.text(t2_answer()))
    stalling = stalls_in == "model"
    stored = run_episode(
        episode_id=episode.pk,
        agent=StallingModel(build_agent(run, episode.instance)) if stalling else None,
        tool_runner=Tools() if stalling else stalling_tool,
        build_messages=build_messages,
        tool_specs=TOOL_SPECS,
    )

    assert (stored.attempt, stored.status, stored.n_turns, stored.scores) == (2, Status.RUNNING, 1, {})
    assert list(stored.steps.values_list("index", "result")) == [(0, {"by": "attempt 2"})]


def test_the_run_starts_with_its_first_episode_and_keeps_totals(make_run, server):
    server.add(
        fake_llm.text(tool_call(), usage_body=fake_llm.usage(1000, 100)),
        fake_llm.text(t2_answer(), usage_body=fake_llm.usage(2000, 200)),
    )
    run = make_run(input_price_per_mtok=2, output_price_per_mtok=10)
    episode = play(run)
    assert list(episode.steps.exclude(cost_usd=None).values_list("cost_usd", flat=True)) == [
        Decimal("0.003"), Decimal("0.006")
    ]  # fmt: skip
    assert episode.cost_usd == Decimal("0.009")
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.started_at is not None
    assert (run.prompt_tokens, run.completion_tokens, run.cost_usd) == (3000, 300, Decimal("0.009"))


# ── baselines through the same loop ──────────────────────────────────────────────────────────


def test_the_heuristic_baseline_plays_through_the_loop_with_tools(run):
    temporal = {"channels": [{"channel": "EEG", "rms_uv": 320.0, "line_length_uv_s": 9000.0}]}
    tools = Tools({"compute_temporal_features": temporal})
    episode = play(run, task="T3", tools=tools)
    assert [name for _, name, _ in tools.calls] == ["compute_temporal_features"]
    assert kinds(episode) == ONE_TOOL_CALL_EPISODE
    assert episode.prediction["classification"] == "epileptic"
    assert (episode.ended_by, episode.scores["correct"], episode.cost_usd) == ("final_answer", True, Decimal(0))
    assert replay_messages(episode)[-1]["role"] == "assistant"


def test_the_random_baseline_answers_t6_validly(run, official_suite):
    run.model.provider_model = "baseline/random"
    run.model.save()
    episode = play(run, task="T6")
    assert episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert set(episode.scores) >= {"macro_f1", "cohen_kappa"}
    assert sum(s["end_epoch"] - s["start_epoch"] + 1 for s in episode.prediction["hypnogram_rle"]) == 4


# ── with the platform's own prompts and tools ────────────────────────────────────────────────


@pytest.fixture
def t2_recording(official_suite, tmp_path):
    """The suite's T2 instance backed by a real 2-s, 256-Hz .npy epoch (µV) in a release directory."""
    rng = np.random.default_rng(0)
    times = np.arange(512) / 256.0
    signal = 20 * np.sin(2 * np.pi * 10 * times) + 5 * rng.standard_normal(512)
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "epoch.npy", signal.astype(np.float32))
    release = official_suite.release
    release.source = str(tmp_path)
    release.save()
    instance = official_suite.instances.get(task__code="T2")
    instance.recording_path = "data/epoch.npy"
    instance.metadata = {"sampling_rate": 256.0, "channels": 1, "channel_names": ["EEG"], "duration_sec": 2.0}
    instance.save()
    return instance


def test_the_heuristic_runs_on_the_platform_tools_and_prompts(run, t2_recording):
    episode = run_episode(episode_id=run.episodes.get(instance=t2_recording).pk)
    assert kinds(episode)[-1] == Kind.FINAL_ANSWER
    prompt = episode.steps.get(kind=Kind.PROMPT).result["messages"]
    assert [message["role"] for message in prompt] == ["system", "user"]
    assert episode.record_id in prompt[1]["content"] and t2_recording.record_id not in prompt[1]["content"]
    calls = episode.steps.filter(kind=Kind.TOOL_CALL)
    assert [call.tool_name for call in calls] == ["compute_band_power", "compute_temporal_features"]
    assert all("_meta" in call.result["content"] for call in calls)  # real results, not errors
    assert episode.prediction["classification"] == "clean"  # a 10-Hz rhythm in light noise


def test_a_native_model_is_offered_the_ten_platform_tools(make_run, server, t2_recording):
    run = make_run(protocol="native")
    server.add(
        fake_llm.tool_calls(("compute_psd", {"record_id": run.episodes.get().record_id})),
        fake_llm.tool_calls((SUBMIT_TOOL_NAME, {"classification": "clean"})),
    )
    episode = run_episode(episode_id=run.episodes.get().pk)
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert offered == [*OFFICIAL_TOOLS, SUBMIT_TOOL_NAME]
    result = episode.steps.get(kind=Kind.TOOL_CALL).result["content"]
    assert result["global_alpha_peak_hz"] == pytest.approx(10.0, abs=0.5)
    assert_replay_matches_what_was_sent(episode, server)


def test_a_t6_night_is_scored_over_the_answer_keys_epoch_count_as_the_official_scorer_does():
    from benchmark.models import Instance, Task
    from runs.episode.scoring import score_prediction

    labels = ["W"] * 3 + ["N2"] * 5 + ["REM"] * 2
    night = Instance(  # unsaved: no database needed
        task=Task(code="T6"), scenario_id="c3_sleep_sc_SC4001E0", prompt_input={}, duration_sec=None,
        reference={"epoch_labels_aasm": labels, "n_epochs_total": 10},
        metadata={"n_epochs_total": 8}, n_epochs=8,  # the scenario's count disagrees with the answer key's
    )
    rle = [{"start_epoch": 0, "end_epoch": 2, "stage": "W"}, {"start_epoch": 3, "end_epoch": 7, "stage": "N2"},
           {"start_epoch": 8, "end_epoch": 9, "stage": "REM"}]
    scores = score_prediction(night, {"hypnogram_rle": rle})
    assert scores["cohen_kappa"] == 1.0 and scores["macro_f1"] == pytest.approx(0.6)
