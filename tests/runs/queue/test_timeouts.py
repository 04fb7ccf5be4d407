"""Timeouts that fit: the loop's wall-clock cap ends an episode before the queue's timeout kills its
worker, and the sweep takes up the episodes of workers that were killed anyway.

The last test uses the real thing: ``manage.py qcluster`` in a subprocess with a worker timeout
of four seconds, a model that answers each turn after 0.3 s (the loop's cap ends its episode) and
one whose first answer takes longer than the timeout (the worker is killed; the sweep ends the
episode and its run).
"""
import threading
import time
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from benchmark.models import Instance, ModelSpec, Release, Suite, Task
from leaderboard.models import RunSummary
from runs import models
from runs import specs
from runs.cost import Pricing
from runs.episode.engine import run_episode
from runs.episode.limits import EpisodeLimits, played_limits
from runs.model.reply import Reply
from runs.models import Episode, Run, Status, Step
from runs.queue import dispatch, leases
from runs.services import append_step, create_run
from runs.sweep import SWEEP_FUNCTION, sweep_runs
from tests.conftest import TINY_INSTANCES
from tests.runs import worker
from tests.runs.worker import wait_until
from tests.runs.episode_server import EpisodeLLM
from tests.runs.episode.test_engine import TOOL_SPECS, Tools, build_messages, tool_call
from tests.test_settings import load_settings

Kind = Step.Kind
COST_CAP = Episode.EndedBy.COST_CAP


@pytest.fixture(autouse=True)
def short_lease(settings):
    settings.EEGAB_EPISODE_LEASE_SEC = 60


def baseline_run(suite, *, name="random run", tasks=("T1", "T2", "T3"), **options):
    model = ModelSpec.objects.get_or_create(name="random", provider_model="baseline/random")[0]
    return create_run(suite=suite, model=model, tasks=list(tasks), name=name, **options)


def abandon(episode, *, started_ago=3600, silent_for=3600, queued=True):
    """Leave ``episode`` as a killed worker would: running two steps in, its lease renewed until ``silent_for`` ago."""
    now = timezone.now()
    Episode.objects.filter(pk=episode.pk).update(
        status=Status.RUNNING,
        started_at=now - timedelta(seconds=started_ago),
        heartbeat_at=now - timedelta(seconds=silent_for),
        queued_at=now - timedelta(seconds=started_ago) if queued else None,
    )
    for kind in (Kind.PROMPT, Kind.AGENT_MESSAGE):
        append_step(episode=episode, kind=kind, result={"messages": [], "protocol": "text", "tools": None})
    episode.refresh_from_db()
    return episode


def end(episode):
    Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED, finished_at=timezone.now())


# ── the default cap ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("timeout", "wall"), [("3600", 3420.0), ("86400", 82080.0), ("600", 540.0), ("100", 50.0), ("4", 2.0)]
)
def test_the_default_cap_leaves_the_timeout_less_max_of_60_s_and_5_percent_at_most_half(monkeypatch, timeout, wall):
    monkeypatch.delenv("EEGAB_EPISODE_WALL_SEC", raising=False)
    loaded = load_settings(monkeypatch, EEGAB_EPISODE_TIMEOUT=timeout)
    assert loaded.EEGAB_EPISODE_WALL_SEC == wall
    assert loaded.EEGAB_EPISODE_WALL_SEC < loaded.Q_CLUSTER["timeout"]


def test_the_cap_can_be_set_below_the_timeout(monkeypatch):
    monkeypatch.setenv("EEGAB_EPISODE_WALL_SEC", "1800")
    assert load_settings(monkeypatch, EEGAB_EPISODE_TIMEOUT="3600").EEGAB_EPISODE_WALL_SEC == 1800.0


@pytest.mark.parametrize("wall", ["3600", "5000"])
def test_a_cap_that_does_not_fit_in_the_timeout_is_refused(monkeypatch, wall):
    monkeypatch.setenv("EEGAB_EPISODE_WALL_SEC", wall)
    with pytest.raises(ImproperlyConfigured, match="EEGAB_EPISODE_WALL_SEC .* must be shorter than EEGAB_EPISODE_TIMEOUT"):
        load_settings(monkeypatch, EEGAB_EPISODE_TIMEOUT="3600")


@pytest.mark.parametrize(
    ("run_limits", "cap", "expected"),
    [({}, None, None), ({}, 100.0, 100.0), ({"max_wall_time_sec": 50}, 100.0, 50), ({"max_wall_time_sec": 500}, 100.0, 100.0)],
)
def test_a_runs_smaller_wall_clock_cap_applies_and_a_larger_one_is_lowered_to_the_platforms(run_limits, cap, expected):
    task = Task(code="T2", max_turns=1000, max_tool_calls=999)
    assert EpisodeLimits.for_episode(task, run_limits, wall_time_cap_sec=cap).max_wall_time_sec == expected


@pytest.mark.django_db
def test_every_episode_played_here_has_the_platforms_cap(suite, settings):
    settings.EEGAB_EPISODE_WALL_SEC = 120.0
    capped, uncapped = baseline_run(suite, limits={"max_wall_time_sec": 30}), baseline_run(suite, name="other")
    assert played_limits(capped.episodes.first()).max_wall_time_sec == 30
    assert played_limits(uncapped.episodes.first()).max_wall_time_sec == 120.0


class SlowAgent:
    """Calls get_recording_info every turn, each reply after ``delay_sec``."""

    protocol = "text"
    pricing = Pricing.free()

    def __init__(self, delay_sec):
        self.delay_sec = delay_sec
        self.calls = 0

    def respond(self, messages, *, tools=None):
        self.calls += 1
        time.sleep(self.delay_sec)
        return Reply(content=tool_call(), finish_reason="stop")


@pytest.mark.django_db
@pytest.mark.parametrize("run_limits", [{}, {"max_wall_time_sec": 3600}])
def test_the_loop_ends_a_long_episode_at_the_platforms_cap_scored_unanswered(suite, settings, run_limits):
    settings.EEGAB_EPISODE_WALL_SEC = 0.3
    run = baseline_run(suite, tasks=["T2"], limits=run_limits)
    agent = SlowAgent(delay_sec=0.05)
    episode = run_episode(episode_id=run.episodes.get().pk, agent=agent, tool_runner=Tools(),
                          build_messages=build_messages, tool_specs=TOOL_SPECS)  # fmt: skip

    assert (episode.status, episode.ended_by, episode.prediction) == (Status.COMPLETED, COST_CAP, {})
    assert "correct" in episode.scores  # scored, as an empty answer
    assert episode.error_message.startswith("wall-clock cap of 0.3 s reached")
    assert 2 <= agent.calls <= 8 and episode.n_turns == agent.calls
    assert episode.steps.order_by("-index").first().error.startswith("stopped: wall-clock cap of 0.3 s")


# ── recovering an episode whose worker was killed ───────────────────────────────────────────


@pytest.mark.django_db
def test_a_stale_attempt_that_lived_until_its_cap_ends_at_the_cap_instead_of_being_replayed(suite, settings):
    settings.EEGAB_EPISODE_WALL_SEC = 100.0
    episode = abandon(baseline_run(suite).episodes.first(), started_ago=1000, silent_for=880)

    assert leases.recover_stale_episode(episode_id=episode.pk)

    episode.refresh_from_db()
    assert (episode.status, episode.ended_by, episode.attempt) == (Status.COMPLETED, COST_CAP, 1)
    assert episode.prediction == {} and episode.scores and episode.finished_at is not None
    steps = list(episode.steps.order_by("index"))
    assert [step.kind for step in steps] == [Kind.PROMPT, Kind.AGENT_MESSAGE, Kind.ERROR]
    assert steps[-1].error.startswith("stopped: wall-clock cap of 100.0 s reached after 120.0 s")
    assert not leases.recover_stale_episode(episode_id=episode.pk)


@pytest.mark.django_db
def test_a_stale_attempt_lost_before_its_cap_is_played_again(suite, settings):
    settings.EEGAB_EPISODE_WALL_SEC = 100.0
    episode = abandon(baseline_run(suite).episodes.first(), started_ago=1000, silent_for=950)

    assert leases.recover_stale_episode(episode_id=episode.pk)

    episode.refresh_from_db()
    assert (episode.status, episode.attempt, episode.steps.count(), episode.queued_at) == (Status.PENDING, 2, 0, None)


# ── the sweep ────────────────────────────────────────────────────────────────────────────────


def test_the_sweep_is_scheduled_every_minute(db):
    schedule = Schedule.objects.get(func=SWEEP_FUNCTION)
    assert (schedule.schedule_type, schedule.minutes) == (Schedule.MINUTES, 1)


@pytest.mark.django_db
def test_the_sweep_recovers_stale_episodes_of_every_run_and_sends_their_tasks(
    suite, settings, django_capture_on_commit_callbacks
):
    settings.EEGAB_EPISODE_WALL_SEC = 100.0
    first, second = baseline_run(suite, name="first"), baseline_run(suite, name="second")
    for run in (first, second):  # queued, each episode's task sent
        Run.objects.filter(pk=run.pk).update(status=Status.RUNNING)
        run.episodes.update(queued_at=timezone.now())
    replayed = abandon(first.episodes.order_by("id")[0])
    capped = abandon(second.episodes.order_by("id")[0], started_ago=1000, silent_for=500)

    with django_capture_on_commit_callbacks(execute=True):
        swept = sweep_runs()

    assert swept == {"recovered": 2, "released": 1, "finished": 0, "ended": 0}
    replayed.refresh_from_db()
    capped.refresh_from_db()
    assert (replayed.status, replayed.attempt) == (Status.PENDING, 2) and replayed.queued_at is not None
    assert (capped.status, capped.ended_by) == (Status.COMPLETED, COST_CAP)
    assert [task.func() for task in OrmQ.objects.all()] == ["runs.tasks.run_episode_task"]
    assert OrmQ.objects.get().task["args"] == (replayed.pk,)
    assert sweep_runs() == {"recovered": 0, "released": 0, "finished": 0, "ended": 0}  # nothing left to do


@pytest.mark.django_db
def test_the_sweep_finishes_a_run_whose_last_episode_was_lost(suite, settings):
    settings.EEGAB_MAX_EPISODE_ATTEMPTS = 1
    failed_run, capped_run, done_run = (baseline_run(suite, name=name, tasks=["T1", "T2"]) for name in "abc")
    settings.EEGAB_EPISODE_WALL_SEC = 100.0
    for run in (failed_run, capped_run, done_run):
        Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, started_at=timezone.now())
        end(run.episodes.order_by("id")[0])
    abandon(failed_run.episodes.order_by("id")[1])  # its last attempt lost: failed, not replayed
    abandon(capped_run.episodes.order_by("id")[1], started_ago=1000, silent_for=500)
    end(done_run.episodes.order_by("id")[1])  # its task was killed after the episode, before finishing the run

    assert sweep_runs() == {"recovered": 2, "released": 0, "finished": 3, "ended": 0}

    statuses = {run.name: run.status for run in Run.objects.filter(pk__in=[failed_run.pk, capped_run.pk, done_run.pk])}
    assert statuses == {"a": Status.FAILED, "b": Status.COMPLETED, "c": Status.COMPLETED}
    assert Run.objects.filter(finished_at__isnull=True).count() == 0
    assert RunSummary.objects.filter(run__in=[failed_run, capped_run, done_run]).count() == 3  # on the board


@pytest.mark.django_db
def test_the_sweep_leaves_live_episodes_in_process_runs_external_runs_and_unplayed_runs_alone(suite):
    live, in_process, unplayed = (baseline_run(suite, name=name) for name in ("live", "in process", "unplayed"))
    external = baseline_run(suite, name="external", source=Run.Source.EXTERNAL)
    abandon(live.episodes.first(), silent_for=1)
    abandon(in_process.episodes.first(), queued=False)  # played by run_sync: resume_run's to take up
    abandon(external.episodes.first())
    before = list(Episode.objects.order_by("id").values_list("id", "status", "attempt", "queued_at"))

    assert sweep_runs() == {"recovered": 0, "released": 0, "finished": 0, "ended": 0}
    assert list(Episode.objects.order_by("id").values_list("id", "status", "attempt", "queued_at")) == before
    assert set(Run.objects.values_list("status", flat=True)) == {Status.PENDING}


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker, settings):
    settings.EEGAB_EPISODE_LEASE_SEC = 2.0
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as path:
        yield path


def tiny_suite(n_instances):
    release = Release.objects.create(name="tiny", version="1", source="tests")
    suite = Suite.objects.create(name="tiny", release=release)
    task = Task.objects.get(code="T1")
    for number in range(n_instances):
        Instance.objects.create(suite=suite, task=task, record_id=f"rec-{number}", position=number,
                                **{**TINY_INSTANCES["T1"], "scenario_id": f"c1_knowledge_{number}"})  # fmt: skip
    return suite


@pytest.mark.sqlite_file
def test_two_sweeps_at_once_recover_each_episode_once_and_send_one_task_for_it(shared_database):
    run = baseline_run(tiny_suite(6), tasks=["T1"])
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    for episode in run.episodes.all():
        abandon(episode)
    barrier, results = threading.Barrier(2), []

    def sweep():
        barrier.wait()
        try:
            results.append(sweep_runs())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sum(result["recovered"] for result in results) == 6 == sum(result["released"] for result in results)
    assert set(run.episodes.values_list("status", "attempt")) == {(Status.PENDING, 2)}
    sent = sorted(task.task["args"][0] for task in OrmQ.objects.all())
    assert sent == sorted(run.episodes.values_list("id", flat=True))


# ── a real queue with a timeout of four seconds ─────────────────────────────────────────────

TIMEOUT_SEC = 4
LEASE_SEC, HEARTBEAT_SEC = 2.0, 0.25


@pytest.mark.slow
@pytest.mark.sqlite_file
def test_with_a_qcluster_and_a_timeout_of_a_few_seconds_every_run_finishes_scored(
    shared_database, tmp_path, monkeypatch
):
    from tests.runs.demo_suite import import_demo

    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    monkeypatch.setenv("EEGAB_EPISODE_TIMEOUT", str(TIMEOUT_SEC))  # read by the cluster: a cap of 2 s
    monkeypatch.delenv("EEGAB_EPISODE_WALL_SEC", raising=False)
    suite = import_demo()
    model = specs.model_spec_for("openai/fake-model")
    settings = {"temperature": 0, "max_tokens": 256, "tool_protocol": "text", "timeout_sec": 60}
    log = tmp_path / "cluster.log"
    # One model keeps calling tools, each answer after 0.3 s; the other's first answer outlasts the timeout.
    with EpisodeLLM(tool_calls=1000, delay_sec=0.3) as steady, EpisodeLLM(delay_sec=40) as stuck:
        runs = {
            name: create_run(suite=suite, model=model, tasks=["T2"], limit=1, name=name, api_base=server.api_base,
                             api_key_env="FAKE_LLM_KEY", settings=settings)  # fmt: skip
            for name, server in (("steady", steady), ("stuck", stuck))
        }
        for run in runs.values():
            dispatch.queue_run(run_id=run.pk)
        started = time.monotonic()
        with worker.qcluster(shared_database, workers=2, log=log, EEGAB_EPISODE_LEASE_SEC=LEASE_SEC,
                             EEGAB_HEARTBEAT_SEC=HEARTBEAT_SEC, EEGAB_PROVIDER_RETRIES=0,
                             EEGAB_PROVIDER_KEY_ENVS=["FAKE_LLM_KEY"]):  # fmt: skip
            steady_run = wait_until(
                lambda: Run.objects.filter(pk=runs["steady"].pk, status__in=models.FINISHED).first(),
                timeout=15, what="the loop's cap to end the steady episode",
            )  # fmt: skip
            capped_after = time.monotonic() - started
            stuck_run = wait_until(
                lambda: Run.objects.filter(pk=runs["stuck"].pk, status__in=models.FINISHED).first(),
                timeout=50, what="the sweep to end the episode of the killed worker",
            )  # fmt: skip
        elapsed = time.monotonic() - started

    assert capped_after < 15 and elapsed < 50
    assert "after timeout" in log.read_text()  # the stuck episode's worker was killed by the timeout
    for run in (steady_run, stuck_run):
        episode = run.episodes.get()
        assert (run.status, episode.status, episode.ended_by) == (Status.COMPLETED, Status.COMPLETED, COST_CAP)
        assert episode.attempt == 1 and episode.prediction == {} and "correct" in episode.scores
        assert episode.error_message.startswith("wall-clock cap of 2.0 s reached")
    steady_episode, stuck_episode = steady_run.episodes.get(), stuck_run.episodes.get()
    assert steady_episode.n_turns >= 2 and steady_episode.wall_time_sec < TIMEOUT_SEC
    kinds = list(stuck_episode.steps.order_by("index").values_list("kind", flat=True))
    assert kinds == [Kind.PROMPT, Kind.ERROR]  # the model never answered; the sweep ended it
    assert "its worker was lost" in stuck_episode.steps.get(kind=Kind.ERROR).error
