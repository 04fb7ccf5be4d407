"""Executing runs: queue tasks, claims and leases, stale-episode recovery, cancel/resume/finish, rate limits."""
import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_q.models import OrmQ

from benchmark.models import ModelSpec
from runs import services, specs
from runs.cost import Pricing, TokenUsage
from runs.model.rate_limit import RateLimitedAgent, RateLimits, in_flight_calls, rate_limit_wait
from runs.model.reply import Reply
from runs.models import Episode, Run, Status, Step
from runs.queue import dispatch, leases, lifecycle, local, worker
from runs.services import append_step, create_run
from runs.tasks import run_episode_task
from tests.runs import fake_llm
from tests.runs.episode_server import EpisodeLLM
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS
from tests.runs.worker import file_database

Kind = Step.Kind


@pytest.fixture
def random_run(suite):
    model = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    return create_run(suite=suite, model=model, tasks=["T1", "T2", "T3"], name="random run")


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.EEGAB_EPISODE_LEASE_SEC = 60
    settings.EEGAB_PROVIDER_RETRIES = 0


def episodes_of(run):
    return list(run.episodes.order_by("id"))


def abandon(episode, *, seconds_ago=3600, steps=2):
    """Leave ``episode`` as a killed worker would: running, a few steps in, silent for a while."""
    then = timezone.now() - timedelta(seconds=seconds_ago)
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING, started_at=then, heartbeat_at=then)
    for kind in [Kind.PROMPT, Kind.AGENT_MESSAGE][:steps]:
        append_step(episode=episode, kind=kind, result={"messages": [], "protocol": "text", "tools": None})
    episode.refresh_from_db()
    return episode


# ── queue tasks ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.django_db
def test_a_task_plays_its_pending_episode_and_the_last_one_finishes_the_run(random_run):
    statuses = [run_episode_task(episode.pk) for episode in episodes_of(random_run)]

    random_run.refresh_from_db()
    assert statuses == ["completed"] * 3
    assert random_run.status == Status.COMPLETED and random_run.finished_at is not None
    assert all(episode.scores for episode in episodes_of(random_run))


@pytest.mark.django_db
def test_a_task_for_a_finished_episode_does_nothing(random_run):
    episode = episodes_of(random_run)[0]
    run_episode_task(episode.pk)
    steps = list(episode.steps.values_list("id", flat=True))

    assert run_episode_task(episode.pk) == "completed"
    episode.refresh_from_db()
    assert episode.attempt == 1 and list(episode.steps.values_list("id", flat=True)) == steps


@pytest.mark.django_db
def test_a_task_for_an_episode_running_under_a_live_lease_does_nothing(random_run):
    episode = abandon(episodes_of(random_run)[0], seconds_ago=1)

    assert run_episode_task(episode.pk) == "running"
    assert episode.steps.count() == 2 and Episode.objects.get(pk=episode.pk).attempt == 1


@pytest.mark.django_db
def test_a_task_for_a_stale_episode_replaces_the_dead_attempt(random_run):
    episode = abandon(episodes_of(random_run)[1])

    assert run_episode_task(episode.pk) == "completed"

    episode.refresh_from_db()
    kinds = list(episode.steps.order_by("index").values_list("index", "kind"))
    assert episode.attempt == 2 and episode.scores
    assert kinds == [(0, Kind.PROMPT), (1, Kind.AGENT_MESSAGE), (2, Kind.FINAL_ANSWER)]


@pytest.mark.django_db
def test_a_worker_lost_on_the_last_attempt_fails_the_episode_instead(random_run, settings):
    settings.EEGAB_MAX_EPISODE_ATTEMPTS = 2
    episode = episodes_of(random_run)[0]
    Episode.objects.filter(pk=episode.pk).update(attempt=2)
    abandon(episode)

    assert run_episode_task(episode.pk) == "failed"
    episode.refresh_from_db()
    assert episode.error_kind == Episode.ErrorKind.INFRASTRUCTURE and "stopped responding" in episode.error_message
    assert episode.scores == {}


@pytest.mark.django_db
def test_a_task_that_ends_recovers_the_stale_episodes_of_its_run_and_queues_them(
    random_run, django_capture_on_commit_callbacks
):
    first, stale, _ = episodes_of(random_run)
    abandon(stale)
    Run.objects.filter(pk=random_run.pk).update(limits={"concurrency": 1})

    with django_capture_on_commit_callbacks(execute=True):
        run_episode_task(first.pk)

    stale.refresh_from_db()
    assert (stale.status, stale.attempt, stale.steps.count()) == (Status.PENDING, 2, 0)
    assert stale.queued_at is not None and OrmQ.objects.count() == 1


@pytest.mark.django_db
def test_a_task_for_a_deleted_episode_does_nothing(db):
    assert run_episode_task(123456) == "missing"


# ── leases ───────────────────────────────────────────────────────────────────────────────────


@pytest.mark.django_db
def test_stale_means_silent_for_longer_than_the_lease_by_heartbeat_else_start(random_run):
    now = timezone.now()
    fresh, silent, never_beat = episodes_of(random_run)
    Episode.objects.filter(pk=fresh.pk).update(status=Status.RUNNING, started_at=now - timedelta(hours=2),
                                               heartbeat_at=now - timedelta(seconds=5))  # fmt: skip
    Episode.objects.filter(pk=silent.pk).update(status=Status.RUNNING, started_at=now - timedelta(hours=2),
                                                heartbeat_at=now - timedelta(seconds=90))  # fmt: skip
    Episode.objects.filter(pk=never_beat.pk).update(status=Status.RUNNING, started_at=now - timedelta(seconds=61))

    assert set(leases.stale_episodes().values_list("id", flat=True)) == {silent.pk, never_beat.pk}


@pytest.mark.django_db
def test_the_heartbeat_renews_the_running_episodes_it_holds_only(random_run):
    held, other, pending = episodes_of(random_run)
    old = timezone.now() - timedelta(minutes=5)
    Episode.objects.filter(pk__in=[held.pk, other.pk]).update(status=Status.RUNNING, heartbeat_at=old)
    heartbeat = leases.Heartbeat()

    with heartbeat.hold(held.pk), heartbeat.hold(pending.pk):
        assert heartbeat.beat() == 1
    assert heartbeat.beat() == 0

    beats = dict(Episode.objects.values_list("id", "heartbeat_at"))
    assert beats[held.pk] > old and beats[other.pk] == old and beats[pending.pk] is None


@pytest.mark.django_db
def test_a_step_numbered_by_its_writer_is_refused_at_a_taken_index(random_run):
    episode = episodes_of(random_run)[0]
    append_step(episode=episode, kind=Kind.PROMPT, index=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        append_step(episode=episode, kind=Kind.AGENT_MESSAGE, index=0)
    assert append_step(episode=episode, kind=Kind.AGENT_MESSAGE).index == 1  # counted, as before


# ── releasing episodes to the queue ──────────────────────────────────────────────────────────


@pytest.mark.django_db
def test_release_keeps_at_most_the_runs_concurrency_in_flight(random_run, django_capture_on_commit_callbacks):
    Run.objects.filter(pk=random_run.pk).update(limits={"concurrency": 2})
    first, second, third = episodes_of(random_run)

    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch.queue_run(run_id=random_run.pk) == [first.pk, second.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch.release_episodes(run_id=random_run.pk) == []
    assert OrmQ.objects.count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        run_episode_task(first.pk)  # ends, and releases the next one
    assert OrmQ.objects.count() == 3
    assert Episode.objects.get(pk=third.pk).queued_at is not None


@pytest.mark.django_db
def test_a_runs_queue_tasks_go_out_through_one_broker_connection(random_run, django_capture_on_commit_callbacks,
                                                                 monkeypatch):  # fmt: skip
    import django_q.brokers
    import django_q.tasks

    made = []
    real = django_q.brokers.get_broker

    def counting(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(django_q.brokers, "get_broker", counting)
    monkeypatch.setattr(django_q.tasks, "get_broker", counting)
    with django_capture_on_commit_callbacks(execute=True):
        assert len(dispatch.queue_run(run_id=random_run.pk)) == 3
    assert OrmQ.objects.count() == 3 and len(made) == 1


# ── cancel, resume, finish ───────────────────────────────────────────────────────────────────


class ScriptedAgent:
    """A text-protocol agent that replies with the given actions in turn and calls ``hook`` before each."""

    protocol = "text"
    pricing = Pricing.free()

    def __init__(self, actions, hook=lambda turn: None):
        self.actions = list(actions)
        self.hook = hook
        self.turn = 0

    def respond(self, messages, *, tools=None):
        self.hook(self.turn)
        action = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        return Reply(content=json.dumps(action), usage=TokenUsage(10, 5), cost_usd=None, finish_reason="stop")


TOOL_CALL = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": "rec-t2-7f3a"}}
T2_ANSWER = {"action": "final_answer", "classification": "clean", "findings": []}


@pytest.mark.django_db
def test_cancel_stops_pending_episodes_at_once_and_running_ones_at_their_next_turn(random_run):
    t1, t2, t3 = episodes_of(random_run)
    cancel = lambda turn: turn == 0 and lifecycle.cancel_run(run_id=random_run.pk)  # noqa: E731
    agent = ScriptedAgent([TOOL_CALL, T2_ANSWER], hook=cancel)

    played = worker.play_episode(episode_id=t2.pk, agent=agent, tool_runner=lambda *args: {"ok": True})

    assert played.status == Status.CANCELLED and played.ended_by == Episode.EndedBy.CANCELLED
    assert agent.turn == 1  # the second turn never asked the model
    assert played.steps.last().error == "the run was cancelled"
    assert set(Episode.objects.filter(pk__in=[t1.pk, t3.pk]).values_list("status", flat=True)) == {Status.CANCELLED}
    assert run_episode_task(t1.pk) == "cancelled"  # its queued task does nothing
    random_run.refresh_from_db()
    assert random_run.status == Status.CANCELLED and random_run.finished_at is not None


@pytest.mark.django_db
def test_resume_resets_failed_cancelled_and_stale_episodes_and_keeps_completed_ones(random_run):
    completed, failed, stale = episodes_of(random_run)
    run_episode_task(completed.pk)
    Episode.objects.filter(pk=failed.pk).update(status=Status.FAILED, error_kind="infrastructure")
    abandon(stale)
    kept = list(completed.steps.values_list("id", flat=True))

    resumed = lifecycle.resume_run(run_id=random_run.pk)

    assert (resumed.reset, resumed.pending, resumed.running) == (2, 2, 0)
    assert resumed.run.status == Status.RUNNING and resumed.run.finished_at is None
    states = {e.pk: (e.status, e.attempt, e.steps.count()) for e in episodes_of(random_run)}
    assert states[failed.pk] == (Status.PENDING, 2, 0) and states[stale.pk] == (Status.PENDING, 2, 0)
    assert list(completed.steps.values_list("id", flat=True)) == kept and states[completed.pk][:2] == ("completed", 1)

    local.run_sync(run_id=random_run.pk)
    assert Run.objects.get(pk=random_run.pk).status == Status.COMPLETED


@pytest.mark.django_db
def test_a_run_is_finished_only_when_no_episode_is_pending_or_running(random_run):
    first, second, third = episodes_of(random_run)
    run_episode_task(first.pk)
    assert services.finish_run(run_id=random_run.pk).status == Status.RUNNING
    Episode.objects.filter(pk=second.pk).update(status=Status.FAILED)
    run_episode_task(third.pk)

    run = Run.objects.get(pk=random_run.pk)
    assert run.status == Status.FAILED and run.finished_at is not None


@pytest.fixture
def fake_server():
    with FakeLLM() as server:
        yield server


def model_run(suite, api_base, *, tasks=("T1",), limits=None):
    for instance in suite.instances.select_related("task"):
        instance.expected_output_schema = OUTPUT_SCHEMAS[instance.task.code]
        instance.save()
    model, _ = ModelSpec.objects.get_or_create(name="fake", provider_model="openai/fake-model")
    return create_run(
        suite=suite, model=model, tasks=list(tasks), api_base=api_base, api_key_env="FAKE_LLM_KEY",
        settings={"temperature": 0, "max_tokens": 64, "tool_protocol": "text", "timeout_sec": 5},
        limits=limits or {},
    )  # fmt: skip


@pytest.mark.django_db
def test_a_provider_failure_is_an_unscored_infrastructure_failure_that_resume_retries(suite, fake_server, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    run = model_run(suite, fake_server.api_base)
    fake_server.add(fake_llm.http_error(503, "overloaded"))

    local.run_sync(run_id=run.pk)

    episode = run.episodes.get()
    assert (episode.status, episode.error_kind, episode.scores) == (Status.FAILED, "infrastructure", {})
    assert Run.objects.get(pk=run.pk).status == Status.FAILED
    assert len(fake_server.requests) == 1  # retried in the adapter only (here: not at all)

    fake_server.add(fake_llm.text(json.dumps({"action": "final_answer", "answer": "B"})))
    lifecycle.resume_run(run_id=run.pk)
    local.run_sync(run_id=run.pk)

    episode.refresh_from_db()
    assert (episode.status, episode.attempt, episode.scores["correct"]) == (Status.COMPLETED, 2, True)
    assert [step.kind for step in episode.steps.all()] == [Kind.PROMPT, Kind.AGENT_MESSAGE, Kind.FINAL_ANSWER]


# ── in-process runs on a thread pool ─────────────────────────────────────────────────────────


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), file_database(tmp_path / "db.sqlite3"):
        yield


def tiny_suite(code: str, count: int):
    """A suite of ``count`` instances of task ``code``, each a copy of its tiny instance under its own ids."""
    from benchmark.models import Instance, Release, Suite, Task
    from tests.conftest import TINY_INSTANCES

    suite = Suite.objects.create(name="tiny", release=Release.objects.create(name="tiny", version="1", source="tests"))
    task, tiny = Task.objects.get(code=code), TINY_INSTANCES[code]
    for number in range(count):
        Instance.objects.create(suite=suite, task=task, record_id=f"rec-{number}", position=number,
                                **{**tiny, "scenario_id": f"{tiny['scenario_id']}_{number}"})  # fmt: skip
    return suite


@pytest.mark.sqlite_file
def test_a_sync_run_plays_model_episodes_on_a_thread_pool(shared_database, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = tiny_suite("T1", 4)
    with EpisodeLLM(tool_calls=0, delay_sec=0.3) as server:
        run = model_run(suite, server.api_base, limits={"concurrency": 4})
        ended = []
        local.run_sync(run_id=run.pk, concurrency=4, on_episode=lambda episode, error: ended.append(error))

    assert ended == [None] * 4
    episodes = list(run.episodes.all())
    assert {episode.status for episode in episodes} == {Status.COMPLETED}
    # All four waited on the model at once: their model calls overlap in time.
    assert max(e.started_at for e in episodes) < min(e.finished_at for e in episodes)


@pytest.mark.sqlite_file
def test_a_sync_run_on_a_thread_pool_makes_its_tool_calls_in_tool_processes_with_the_same_answers(
    shared_database, monkeypatch
):
    from pathlib import Path

    from tools_app import call_tool
    from tools_app.processes import ToolProcesses

    made = []

    class CountedProcesses(ToolProcesses):
        def call(self, path, tool_name, arguments, **options):
            made.append(tool_name)
            return super().call(path, tool_name, arguments, **options)

    counted = CountedProcesses(2)
    monkeypatch.setattr(local, "shared_tool_processes", lambda: counted)
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = tiny_suite("T3", 3)
    # A header tool, answered in this process, then one that reads samples, made in a tool process.
    with EpisodeLLM(tool_calls=2, tools=("get_recording_info", "compute_temporal_features")) as server:
        run = model_run(suite, server.api_base, tasks=("T3",), limits={"concurrency": 3})
        try:
            local.run_sync(run_id=run.pk, concurrency=3)
        finally:
            counted.close()

    steps = list(Step.objects.filter(episode__run=run, kind=Step.Kind.TOOL_CALL).select_related("episode__instance"))
    assert len(steps) == 6 and sorted(made) == ["compute_temporal_features"] * 3 + ["get_recording_info"] * 3
    for step in steps:
        instance, record_id = step.episode.instance, step.episode.record_id
        here = call_tool(Path("tests") / instance.recording_path, step.tool_name, step.arguments, record_id=record_id,
                         metadata=instance.metadata)  # fmt: skip
        assert step.result["status"] == "ok" and step.result["content"] == here


# ── rate limits ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "calls, limits, in_flight, expected",
    [
        ([], RateLimits(1, None), 0, 0.0),
        ([(40.0, 10)], RateLimits(2, None), 0, 0.0),
        ([(40.0, 10), (50.0, 10)], RateLimits(2, None), 0, 40.0),  # the call at 40 s leaves at 100 s
        ([(40.0, 10)], RateLimits(2, None), 1, 40.0),  # one more in flight fills the minute
        ([(40.0, 10)], RateLimits(1, None), 1, 60.0),  # only calls in flight: wait for them
        ([(-5.0, 10)], RateLimits(1, None), 0, 0.0),  # older than the window
        ([(30.0, 600), (45.0, 500)], RateLimits(None, 1000), 0, 30.0),  # 1100 tokens: the first must leave
        ([(30.0, 600), (45.0, 500)], RateLimits(None, 500), 0, 45.0),  # both must leave
        ([(30.0, 100)], RateLimits(None, 1000), 0, 0.0),
    ],
)
def test_rate_limit_wait(calls, limits, in_flight, expected):
    assert rate_limit_wait(calls, now=60.0, limits=limits, in_flight=in_flight) == pytest.approx(expected)


@pytest.mark.django_db
def test_a_rate_limited_agent_waits_while_the_last_minute_is_full(random_run):
    episode = episodes_of(random_run)[0]
    for _ in range(2):
        append_step(episode=episode, kind=Kind.AGENT_MESSAGE, prompt_tokens=10, completion_tokens=5)
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 3:
            raise TimeoutError

    inner = ScriptedAgent([T2_ANSWER])
    agent = RateLimitedAgent(lambda: inner, run_id=random_run.pk, limits=RateLimits(2, None), sleep=sleep)
    with pytest.raises(TimeoutError):
        agent.respond([])
    assert waits == [1.0, 1.0, 1.0] and inner.turn == 0

    free = RateLimitedAgent(lambda: inner, run_id=random_run.pk, limits=RateLimits(3, None), sleep=sleep)
    assert free.respond([]).content and inner.turn == 1 and free.protocol == "text"


@pytest.mark.django_db
def test_calls_in_flight_in_this_process_count_against_the_limit(random_run):
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        raise TimeoutError

    agent = RateLimitedAgent(lambda: ScriptedAgent([T2_ANSWER]), run_id=random_run.pk, limits=RateLimits(1, None),
                             sleep=sleep)  # fmt: skip
    with in_flight_calls.call(random_run.pk), pytest.raises(TimeoutError):
        agent.respond([])
    assert waits == [1.0]
    assert agent.respond([]).content  # once the other call has ended


# ── model specs ──────────────────────────────────────────────────────────────────────────────


@pytest.mark.django_db
def test_model_spec_for_reuses_a_spec_of_the_model_and_refuses_a_name_taken_by_another():
    ModelSpec.objects.create(name="GPT-4o", provider_model="openai/gpt-4o")
    assert specs.model_spec_for("openai/gpt-4o").name == "GPT-4o"
    assert specs.model_spec_for("openai/gpt-4o", name="GPT-4o").name == "GPT-4o"
    with pytest.raises(ValueError, match="already used for openai/gpt-4o"):
        specs.model_spec_for("openai/gpt-4o-mini", name="GPT-4o")
    assert specs.model_spec_for("baseline/heuristic").is_open_weight is True
