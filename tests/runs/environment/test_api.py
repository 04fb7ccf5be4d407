"""The environment API: keys and permissions on every endpoint, the whole protocol, and the example client."""
import json
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import ModelSpec
from leaderboard.models import RunSummary
from runs.environment import service as environment
from runs.cost import Pricing
from runs.episode import engine
from runs.episode.engine import run_episode
from runs.model.reply import Reply
from runs.models import EnvironmentToken, Episode, Run, Status, Step
from runs.services import create_run
from tests.runs.demo_suite import import_demo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("steps_keep_their_shapes")]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()


def external_run(suite, *, tasks=("T1",), agent="my-agent", **options):
    return environment.open_external_run(agent=agent, suite=suite, tasks=list(tasks), **options)


def agent_client(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def start(client, run, **body):
    return client.post(reverse("env:episodes", args=[run.pk]), body, format="json")


def act(client, episode_id, action):
    return client.post(reverse("env:actions", args=[episode_id]), action, format="json")


# ── keys and permissions ─────────────────────────────────────────────────────────────────────


def test_command_creates_an_external_run_whose_key_is_stored_only_as_a_hash(suite):
    out = StringIO()
    call_command("create_env_token", "--agent", "my-agent", "--suite", "tiny", "--tasks", "T1", "T2", stdout=out)

    run = Run.objects.get()
    key = out.getvalue().split("Key (shown only now): ")[1].strip()
    assert run.source == Run.Source.EXTERNAL and run.tasks == ["T1", "T2"] and run.episodes.count() == 2
    assert run.model.name == "my-agent" and run.model.family == "external"
    assert run.environment_token.key_hash == EnvironmentToken.hash_key(key) != key
    assert environment.token_for_key(key).run == run


def test_staff_open_a_run_over_the_api_and_others_may_not(suite, staff_user, visitor):
    body = {"agent": "my-agent", "suite": "tiny", "tasks": ["T1", "T3"]}
    client = APIClient()
    assert client.post(reverse("env:runs"), body, format="json").status_code == 401
    client.force_login(visitor)
    assert client.post(reverse("env:runs"), body, format="json").status_code == 403
    client.force_login(staff_user)

    response = client.post(reverse("env:runs"), body, format="json")

    assert response.status_code == 201, response.data
    run = Run.objects.get(pk=response.data["run"])
    assert run.created_by == staff_user and run.progress()[Status.PENDING] == 2
    # The platform wording (the official package is absent) and the official configs' settings, as advice.
    assert (response.data["prompt_set"], run.prompt_set) == ("platform", "platform")
    assert response.data["settings"] == {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}
    refused = client.post(reverse("env:runs"), {**body, "prompt_set": "official"}, format="json")
    assert refused.status_code == 400 and "pip install -e '.[official]'" in refused.data["detail"]
    assert agent_client(response.data["key"]).get(reverse("env:runs")).data["run"] == run.pk
    _, other_key = external_run(suite)
    assert agent_client(other_key).post(reverse("env:runs"), body, format="json").status_code == 403


def test_an_agent_name_of_a_litellm_model_is_refused(suite, model_spec):
    with pytest.raises(ValueError, match="already used"):
        external_run(suite, agent=model_spec.name)


@pytest.mark.parametrize("header", [None, "Bearer not-a-key", "Bearer", "Token abc"])
def test_every_endpoint_refuses_requests_without_a_valid_key(suite, header):
    run, _ = external_run(suite)
    episode = run.episodes.get()
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get(reverse("env:runs")).status_code in (401, 403)
    assert start(client, run).status_code in (401, 403)
    assert act(client, episode.pk, {"action": "final_answer", "answer": "B"}).status_code in (401, 403)
    assert not episode.steps.exists()


def test_a_revoked_key_is_refused(suite):
    run, key = external_run(suite)
    EnvironmentToken.objects.filter(run=run).update(revoked=True)
    assert start(agent_client(key), run).status_code == 401


def test_a_key_cannot_start_or_act_on_another_runs_episodes(suite):
    run, key = external_run(suite)
    other, other_key = external_run(suite, agent="other-agent")
    other_episode = start(agent_client(other_key), other).data["episode"]
    client = agent_client(key)

    assert start(client, other).status_code == 403
    response = act(client, other_episode, {"action": "final_answer", "answer": "B"})

    assert response.status_code == 403
    assert Episode.objects.get(pk=other_episode).status == Status.RUNNING
    assert Step.objects.filter(episode_id=other_episode).count() == 1  # its prompt only


def test_finished_and_unstarted_episodes_reject_actions(suite):
    run, key = external_run(suite, tasks=("T1", "T2"))
    client = agent_client(key)
    record_id = run.episodes.get(instance__task__code="T1").record_id
    episode = start(client, run, record_id=record_id).data["episode"]
    unstarted = run.episodes.get(instance__task__code="T2").pk
    assert act(client, episode, {"action": "final_answer", "answer": "B"}).data["done"]

    finished = act(client, episode, {"action": "final_answer", "answer": "C"})
    not_started = act(client, unstarted, {"action": "final_answer", "classification": "clean"})

    assert finished.status_code == 409 and "ended" in finished.data["detail"]
    assert not_started.status_code == 409 and "not started" in not_started.data["detail"]
    assert Episode.objects.get(pk=episode).final_answer["answer"] == "B"
    assert start(client, run, record_id=record_id).status_code == 409


def test_keys_are_throttled_one_by_one(suite, settings):
    settings.EEGAB_ENV_API_RATE = "2/min"
    run, key = external_run(suite)
    _, other_key = external_run(suite, agent="other-agent")
    client = agent_client(key)
    assert [client.get(reverse("env:runs")).status_code for _ in range(3)] == [200, 200, 429]
    assert agent_client(other_key).get(reverse("env:runs")).status_code == 200


# ── the protocol ─────────────────────────────────────────────────────────────────────────────


def test_an_episode_starts_with_the_prompts_tools_and_schema_and_records_its_prompt(suite):
    run, key = external_run(suite, tasks=("T1", "T3"))

    body = start(agent_client(key), run).data

    episode = Episode.objects.get(pk=body["episode"])
    assert body["task"] == "T1" and body["record_id"] == episode.record_id != episode.instance.record_id
    assert body["tools"] == []
    assert body["limits"] == {"max_turns": 1000, "max_tool_calls": 0}
    assert body["output_schema"] == {"answer": "A|B|C|D"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["user_prompt"] == body["messages"][1]["content"]
    assert "c1_knowledge" not in str(body)  # the scenario id names the label
    assert episode.status == Status.RUNNING and Run.objects.get(pk=run.pk).status == Status.RUNNING
    prompt = episode.steps.get()
    assert prompt.kind == Step.Kind.PROMPT and prompt.result["protocol"] == "text"
    assert prompt.result["prompt_set"] == body["prompt_set"] == "platform"

    second = start(agent_client(key), run).data
    assert second["task"] == "T3" and len(second["tools"]) == 10
    assert start(agent_client(key), run).status_code == 409  # none left


def test_an_invalid_answer_is_nudged_then_a_valid_one_is_scored_and_the_run_reaches_the_leaderboard(
    official_suite,
):
    run, key = external_run(official_suite)
    client = agent_client(key)
    episode = start(client, run).data["episode"]

    nudged = act(client, episode, {"action": "final_answer", "answer": 7}).data
    done = act(client, episode, {"action": "final_answer", "answer": "B", "thought": "alpha"}).data

    assert nudged["done"] is False and nudged["status"] == "invalid_final_answer" and nudged["errors"]
    assert "does not match the output schema" in nudged["observation"]
    assert nudged["messages"] == [{"role": "user", "content": nudged["observation"]}]
    assert done["done"] is True and done["ended_by"] == "final_answer" and done["scores"]["correct"] is True
    assert done["usage"] == {"turns": 2, "tool_calls": 0}
    stored = Episode.objects.get(pk=episode)
    kinds = list(stored.steps.values_list("kind", flat=True))
    assert kinds == ["prompt", "agent_message", "nudge", "agent_message", "final_answer"]
    assert stored.steps.get(index=3).result["final_answer"]["answer"] == "B"
    run.refresh_from_db()
    assert run.status == Status.COMPLETED and run.finished_at is not None
    assert RunSummary.objects.get(run=run).tasks["T1"]["metrics"]["accuracy"] == 1.0
    board = APIClient().get(reverse("api:leaderboard"), {"suite": "tiny"}).data
    assert "my-agent" in str(board)


def test_an_agents_actions_and_a_models_replies_go_through_one_engine_to_the_same_record(official_suite):
    """The environment drives the episode engine a queue worker drives: the same texts, the same steps, the same end."""
    actions = [{"action": "final_answer", "answer": 7}, {"action": "final_answer", "answer": "B", "thought": "alpha"}]
    run, key = external_run(official_suite)
    client = agent_client(key)
    external = start(client, run).data["episode"]
    for action in actions:
        act(client, external, action)

    class Scripted:
        """A model whose replies are the same actions, as text."""

        protocol, pricing = "text", Pricing()

        def __init__(self):
            self.replies = iter(actions)

        def respond(self, messages, *, tools=None):
            return Reply(content=json.dumps(next(self.replies), ensure_ascii=False), latency_ms=None)

    model_run = create_run(
        suite=official_suite, model=ModelSpec.objects.create(name="scripted", provider_model="openai/scripted"),
        tasks=["T1"],
    )
    played = run_episode(episode_id=model_run.episodes.get().pk, agent=Scripted())

    def record(episode):
        episode = Episode.objects.get(pk=episode.pk if isinstance(episode, Episode) else episode)
        steps = [(step.kind, step.text, step.error, step.result, step.arguments) for step in episode.steps.order_by("index")]
        return steps, (episode.status, episode.ended_by, episode.prediction, episode.scores, episode.n_turns)

    assert record(external) == record(played)
    assert [kind for kind, *_ in record(played)[0]] == ["prompt", "agent_message", "nudge", "agent_message", "final_answer"]


def test_after_three_nudges_the_answer_is_scored_as_given(official_suite):
    run, key = external_run(official_suite)
    client = agent_client(key)
    episode = start(client, run).data["episode"]

    replies = [act(client, episode, {"action": "final_answer", "answer": "Z"}).data for _ in range(4)]

    assert [reply["done"] for reply in replies] == [False, False, False, True]
    assert replies[-1]["ended_by"] == "format_failure" and replies[-1]["prediction"]["answer"] == "Z"
    assert replies[-1]["scores"]["correct"] is False


def test_an_unreadable_action_is_nudged_like_a_models(suite):
    run, key = external_run(suite)
    client = agent_client(key)
    episode = start(client, run).data["episode"]

    reply = act(client, episode, {"say": "hello"}).data

    assert reply["status"] == "invalid_action" and not reply["done"]


def test_t1_has_no_tool_calls(suite):
    run, key = external_run(suite)
    client = agent_client(key)
    episode = start(client, run).data["episode"]

    reply = act(client, episode, {"action": "tool_call", "tool_name": "get_recording_info", "arguments": {}}).data

    assert reply["status"] == "tool_budget" and "used up your tool calls" in reply["observation"]
    assert Episode.objects.get(pk=episode).n_tool_calls == 0


def test_the_run_turn_limit_ends_the_episode_without_an_answer(suite):
    run, key = external_run(suite, limits={"max_turns": 2})
    client = agent_client(key)
    episode = start(client, run).data["episode"]

    first = act(client, episode, {"say": "hello"}).data
    second = act(client, episode, {"say": "hello"}).data

    assert not first["done"] and second["done"] and second["ended_by"] == "turn_limit"
    assert act(client, episode, {"action": "final_answer", "answer": "B"}).status_code == 409


def test_a_tool_that_raises_fails_the_episode_as_a_tool_bug_telling_what_the_tool_did(suite, monkeypatch):
    run, key = external_run(suite, tasks=("T3",))
    client = agent_client(key)
    started = start(client, run).data

    def broken(instance, tool_name, arguments):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(environment, "episode_tools", lambda episode, call: broken)
    call = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": started["record_id"]}}
    done = act(client, started["episode"], call).data

    episode = Episode.objects.get(pk=started["episode"])
    assert done["done"] is True and done["status"] == Status.FAILED
    assert (episode.error_kind, episode.error_message) == (
        Episode.ErrorKind.TOOL_BUG, "compute_psd raised ZeroDivisionError: division by zero"
    )
    assert "ZeroDivisionError" in episode.steps.order_by("index").last().error  # the traceback, for the staff


def test_an_episode_that_cannot_be_opened_stays_pending_and_the_agent_is_told_why(suite, monkeypatch):
    from benchmark.wording import PromptSetUnavailable

    run, key = external_run(suite)

    def unreadable(run):
        raise PromptSetUnavailable("The official prompt set needs the official package.")

    monkeypatch.setattr(engine, "run_wording", unreadable)
    refused = start(agent_client(key), run)

    assert refused.status_code == 503 and "official package" in refused.data["detail"]
    episode = run.episodes.get()
    assert (episode.status, episode.started_at, episode.steps.count()) == (Status.PENDING, None, 0)
    assert Run.objects.get(pk=run.pk).status == Status.PENDING


def test_a_cancelled_run_ends_its_running_episode_at_the_next_action(suite):
    from runs.queue.lifecycle import cancel_run

    run, key = external_run(suite)
    client = agent_client(key)
    episode = start(client, run).data["episode"]
    cancel_run(run_id=run.pk)

    reply = act(client, episode, {"action": "final_answer", "answer": "B"}).data

    assert reply["done"] and reply["status"] == Status.CANCELLED and reply["scores"] == {}


def test_a_turn_already_taken_is_refused(suite):
    run, key = external_run(suite)
    episode = Episode.objects.get(pk=start(agent_client(key), run).data["episode"])
    stale = Episode.objects.get(pk=episode.pk)
    Episode.objects.filter(pk=episode.pk).update(n_turns=1)  # another request took this turn

    with pytest.raises(environment.Conflict, match="one action at a time"):
        environment._claim_turn(stale)


def test_an_action_under_way_when_its_episode_is_restarted_writes_nothing(suite, monkeypatch):
    from runs.services import reset_episode_for_retry

    run, key = external_run(suite, tasks=("T2",))
    client = agent_client(key)
    episode = Episode.objects.get(pk=start(client, run).data["episode"])

    def tool_while_the_episode_is_restarted(instance, tool_name, arguments):
        reset_episode_for_retry(episode=episode)  # its lease lapsed: resume_run made it pending as attempt 2
        return {"_meta": {}, "record_id": arguments["record_id"]}

    monkeypatch.setattr(environment, "episode_tools", lambda episode, call: tool_while_the_episode_is_restarted)
    call = {"action": "tool_call", "tool_name": "get_recording_info", "arguments": {"record_id": "x"}}
    reply = act(client, episode.pk, call)

    assert reply.status_code == 409 and "ended or was restarted" in str(reply.data)
    stored = Episode.objects.get(pk=episode.pk)
    assert (stored.attempt, stored.status, stored.steps.count(), stored.n_tool_calls) == (2, Status.PENDING, 0, 0)


@pytest.fixture
def demo():
    return import_demo()


@pytest.mark.slow
def test_tools_read_only_the_episodes_record_and_episodes_run_side_by_side(demo):
    run, key = external_run(demo, tasks=("T2",), limit=2)
    client = agent_client(key)
    first, second = start(client, run).data, start(client, run).data

    info = act(client, first["episode"], {
        "action": "tool_call", "tool_name": "get_recording_info", "arguments": {"record_id": first["record_id"]},
    }).data
    foreign = act(client, first["episode"], {
        "action": "tool_call", "tool_name": "get_recording_info", "arguments": {"record_id": second["record_id"]},
    }).data
    power = act(client, second["episode"], {
        "action": "tool_call", "tool_name": "compute_band_power", "arguments": {"record_id": second["record_id"]},
    }).data

    assert info["status"] == "ok" and info["result"]["record_id"] == first["record_id"]
    assert info["observation"].startswith("[Tool Result]\n")
    assert "error" in foreign["result"] and foreign["result"]["record_id"] == second["record_id"]
    assert power["status"] == "ok" and "error" not in power["result"]
    assert Episode.objects.get(pk=first["episode"]).n_tool_calls == 2
    call = Step.objects.filter(episode_id=second["episode"], kind=Step.Kind.TOOL_CALL).get()
    assert call.tool_name == "compute_band_power" and call.result["content"] == power["result"]
    for body in (first, second):
        done = act(client, body["episode"], {
            "action": "final_answer", "record_id": body["record_id"], "classification": "clean", "findings": [],
        }).data
        assert done["done"] and "correct" in done["scores"]
    assert Run.objects.get(pk=run.pk).status == Status.COMPLETED


# ── the example client ───────────────────────────────────────────────────────────────────────


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_example_client_plays_an_episode_against_a_live_server(live_server, demo, monkeypatch, capsys):
    run, key = external_run(demo, tasks=("T6",), limit=1)
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import env_client

    assert env_client.main(["--url", live_server.url, "--token", key]) == 0

    out = capsys.readouterr().out
    assert "get_recording_info: ok" in out and "compute_band_power: ok" in out and "done (final_answer)" in out
    episode = run.episodes.get()
    assert episode.status == Status.COMPLETED and episode.ended_by == "final_answer"
    assert episode.n_tool_calls == 2 and episode.scores
    assert Run.objects.get(pk=run.pk).status == Status.COMPLETED
    sys.modules.pop("env_client", None)
