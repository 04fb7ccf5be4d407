"""A run played by a process of its own (``run_benchmark --sync``) that is killed does not stay running for ever.

Nothing of such a run is on the queue, so no worker's lease speaks for it: once none of its
episodes has shown a sign of life for longer than the lease, its process is gone
(``runs.queue.leases.lost_runs``). The sweep, or the next run command, ends it as failed, its
episodes ended by ``process_lost``; the runs list says so, and ``resume_run`` plays the rest.
The end-to-end test kills a real ``manage.py run_benchmark --sync`` with SIGKILL.
"""
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from benchmark.models import ModelSpec
from runs import specs
from runs.models import Episode, Run, Status, Step
from runs.queue import leases, lifecycle
from runs.services import create_run
from runs.sweep import sweep_runs
from tests.runs import worker
from tests.runs.demo_suite import import_demo
from tests.runs.episode_server import EpisodeLLM
from tests.runs.worker import wait_until

LOST = Episode.EndedBy.PROCESS_LOST
LEASE_SEC, HEARTBEAT_SEC = 5.0, 0.25  # a lease of several beats: a loaded machine stalls no live run out of it
TOOL_CALLS = 2


def local_run(suite, *, started_ago=600, name="local"):
    """A baseline run of three episodes as ``run_sync`` leaves it: running, nothing sent to the queue."""
    model = ModelSpec.objects.get_or_create(name="random", provider_model="baseline/random")[0]
    run = create_run(suite=suite, model=model, tasks=["T1", "T2", "T3"], name=name, limit=1)
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, started_at=timezone.now() - timedelta(seconds=started_ago))
    return run


def play_first_and_kill_second(run, *, ended_ago=600, silent_for=600):
    """The first episode completed ``ended_ago`` seconds ago, the second running, its lease renewed until ``silent_for`` ago."""
    first, second, third = run.episodes.order_by("id")
    now = timezone.now()
    Episode.objects.filter(pk=first.pk).update(status=Status.COMPLETED, started_at=now - timedelta(seconds=ended_ago + 5),
                                               finished_at=now - timedelta(seconds=ended_ago))  # fmt: skip
    Episode.objects.filter(pk=second.pk).update(status=Status.RUNNING, started_at=now - timedelta(seconds=ended_ago),
                                                heartbeat_at=now - timedelta(seconds=silent_for))  # fmt: skip
    return first, second, third


@pytest.mark.django_db
def test_a_silent_local_run_is_lost_and_a_live_queued_external_or_unstarted_one_is_not(suite):
    lost = local_run(suite, name="lost")
    play_first_and_kill_second(lost)
    beating = local_run(suite, name="beating")
    play_first_and_kill_second(beating, silent_for=5)  # its process renews the lease of the episode it plays
    between = local_run(suite, name="between")
    play_first_and_kill_second(between, ended_ago=600)
    Episode.objects.filter(run=between, status=Status.RUNNING).update(status=Status.PENDING, started_at=None,
                                                                        heartbeat_at=None)  # fmt: skip
    Episode.objects.filter(run=between, status=Status.COMPLETED).update(finished_at=timezone.now())  # one just ended
    queued = local_run(suite, name="queued")
    play_first_and_kill_second(queued)
    queued.episodes.update(queued_at=timezone.now() - timedelta(seconds=600))  # the queue's sweep recovers these
    external = local_run(suite, name="external")
    Run.objects.filter(pk=external.pk).update(source=Run.Source.EXTERNAL)
    play_first_and_kill_second(external)
    unstarted = local_run(suite, name="unstarted")
    Run.objects.filter(pk=unstarted.pk).update(status=Status.PENDING, started_at=None)

    assert set(leases.lost_runs().values_list("name", flat=True)) == {"lost"}


@pytest.mark.django_db
def test_the_sweep_ends_a_lost_run_once_failing_its_running_episode_and_cancelling_the_rest(
    suite, django_capture_on_commit_callbacks
):
    run = local_run(suite)
    done, killed, unplayed = play_first_and_kill_second(run)
    Episode.objects.filter(pk=killed.pk).update(prompt_tokens=120, cost_usd=0)

    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_runs() == {"recovered": 0, "released": 0, "finished": 0, "ended": 1}

    run.refresh_from_db()
    assert run.status == Status.FAILED and run.finished_at is not None
    assert run.prompt_tokens == 120  # what the lost attempt spent counts
    episodes = {episode.pk: episode for episode in run.episodes.all()}
    assert (episodes[done.pk].status, episodes[done.pk].ended_by) == (Status.COMPLETED, "")
    assert (episodes[killed.pk].status, episodes[killed.pk].ended_by) == (Status.FAILED, LOST)
    assert episodes[killed.pk].error_kind == Episode.ErrorKind.INFRASTRUCTURE
    assert "the process playing its run stopped" in episodes[killed.pk].error_message
    assert (episodes[unplayed.pk].status, episodes[unplayed.pk].ended_by) == (Status.CANCELLED, LOST)
    assert sweep_runs()["ended"] == 0  # a second sweep finds nothing
    assert not lifecycle.end_lost_run(run_id=run.pk)


@pytest.mark.django_db
def test_the_next_run_command_ends_a_lost_run_and_says_so(demo_suite):
    lost = local_run(demo_suite)
    play_first_and_kill_second(lost)
    err = StringIO()
    call_command("run_benchmark", "--model", "baseline/random", "--tasks", "T1", "--limit", "1", "--sync",
                 stdout=StringIO(), stderr=err)  # fmt: skip
    assert f"Run {lost.pk} was left running by a process that stopped" in err.getvalue()
    assert f"python manage.py resume_run {lost.pk} --sync" in err.getvalue()
    assert Run.objects.get(pk=lost.pk).status == Status.FAILED


@pytest.fixture
def demo_suite(db):
    return import_demo()


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker, settings):
    settings.EEGAB_EPISODE_LEASE_SEC = LEASE_SEC
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as path:
        yield path


@pytest.mark.sqlite_file
@pytest.mark.slow
def test_a_killed_sync_run_is_ended_by_the_sweep_shown_so_and_resumed(shared_database, tmp_path, monkeypatch, client):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = import_demo()
    specs.model_spec_for("openai/fake-model")
    with EpisodeLLM(tool_calls=TOOL_CALLS, delay_sec=0.4) as server:
        command = ["run_benchmark", "--model", "openai/fake-model", "--api-base", server.api_base,
                   "--api-key-env", "FAKE_LLM_KEY", "--suite", suite.name, "--tasks", "T2", "--limit", "3",
                   "--sync", "--concurrency", "1"]  # fmt: skip
        process = worker.start_command(
            shared_database, command, log=tmp_path / "run.log", EEGAB_EPISODE_LEASE_SEC=LEASE_SEC,
            EEGAB_HEARTBEAT_SEC=HEARTBEAT_SEC, EEGAB_PROVIDER_RETRIES=0, EEGAB_PROVIDER_KEY_ENVS=["FAKE_LLM_KEY"],
        )  # fmt: skip
        try:
            victim = wait_until(
                lambda: Episode.objects.filter(status=Status.RUNNING).annotate(n=Count("steps")).filter(n__gte=3).first(),
                timeout=60, what="an episode of the --sync run in the middle of its turns",
            )  # fmt: skip
        finally:
            worker.kill(process)
        assert process.returncode == -9
        run = Run.objects.get()
        assert run.status == Status.RUNNING and not leases.lost_runs().exists()  # its lease has not run out yet
        wait_until(lambda: leases.lost_runs().filter(pk=run.pk).exists(), timeout=20, what="the run to be lost")

        assert sweep_runs()["ended"] == 1
        run.refresh_from_db()
        assert run.status == Status.FAILED
        victim.refresh_from_db()
        assert (victim.status, victim.ended_by) == (Status.FAILED, LOST)
        assert set(run.episodes.exclude(pk=victim.pk).values_list("status", flat=True)) <= {Status.COMPLETED,
                                                                                           Status.CANCELLED}  # fmt: skip
        listed = client.get(reverse("leaderboard:runs")).content.decode()
        assert "ended: process lost" in listed

        out, err = StringIO(), StringIO()
        call_command("resume_run", str(run.pk), "--sync", stdout=out, stderr=err)

    run.refresh_from_db()
    assert run.status == Status.COMPLETED, err.getvalue()
    for episode in run.episodes.all():
        kinds = list(episode.steps.order_by("index").values_list("kind", flat=True))
        assert kinds.count(Step.Kind.FINAL_ANSWER) == 1 and kinds[0] == Step.Kind.PROMPT  # one attempt's record
        assert episode.status == Status.COMPLETED and episode.prediction["classification"] == "clean"
    assert run.episodes.get(pk=victim.pk).attempt == 2
    assert "ended: process lost" not in client.get(reverse("leaderboard:runs")).content.decode()
