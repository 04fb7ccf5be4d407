"""A queue worker killed in the middle of an episode, and the run resumed: every episode scored once, no duplicates.

This uses the real thing: ``manage.py qcluster`` in a subprocess (sentinel, pusher, monitor
and two workers, django-q2's ORM broker) on an SQLite file, litellm over HTTP to a fake model
that answers each turn after 0.4 s, and SIGKILL to the whole cluster while an episode is
between turns.
"""
import time

import pytest
from django.db.models import Count

from runs import models
from runs import specs
from runs.models import Episode, Run, Status, Step
from runs.queue import dispatch, leases, lifecycle
from runs.services import create_run
from tests.runs import worker
from tests.runs.worker import wait_until
from tests.runs.demo_suite import import_demo
from tests.runs.episode_server import EpisodeLLM

Kind = Step.Kind
TOOL_CALLS = 2
LEASE_SEC, HEARTBEAT_SEC = 2.0, 0.25
# The steps of one T2 episode of the fake model: two tool calls, then the answer.
EPISODE_KINDS = [
    Kind.PROMPT, *[Kind.AGENT_MESSAGE, Kind.TOOL_CALL] * TOOL_CALLS, Kind.AGENT_MESSAGE, Kind.FINAL_ANSWER
]


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker, settings):
    settings.EEGAB_EPISODE_LEASE_SEC = LEASE_SEC
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as path:
        yield path


def start_cluster(database, tmp_path, name):
    return worker.start(
        database,
        workers=2,
        log=tmp_path / f"{name}.log",
        EEGAB_EPISODE_LEASE_SEC=LEASE_SEC,
        EEGAB_HEARTBEAT_SEC=HEARTBEAT_SEC,
        EEGAB_PROVIDER_RETRIES=0,
        EEGAB_PROVIDER_KEY_ENVS=["FAKE_LLM_KEY"],
    )


@pytest.mark.sqlite_file
def test_a_killed_worker_leaves_its_episode_rerunnable_and_resume_scores_every_episode_once(
    shared_database, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = import_demo()
    model = specs.model_spec_for("openai/fake-model")
    with EpisodeLLM(tool_calls=TOOL_CALLS, delay_sec=0.4) as server:
        run = create_run(
            suite=suite, model=model, tasks=["T2"], limit=4, api_base=server.api_base, api_key_env="FAKE_LLM_KEY",
            settings={"temperature": 0, "max_tokens": 256, "tool_protocol": "text", "timeout_sec": 10},
            limits={"concurrency": 4},
        )  # fmt: skip
        dispatch.queue_run(run_id=run.pk)
        cluster = start_cluster(shared_database, tmp_path, "first")
        try:
            # Kill the cluster while an episode is between its turns.
            victim = wait_until(
                lambda: run.episodes.filter(status=Status.RUNNING)
                .annotate(n=Count("steps"))
                .filter(n__gte=3, n__lt=len(EPISODE_KINDS) - 1)
                .first(),
                timeout=60,
                what="an episode in the middle of its turns",
            )
        finally:
            worker.kill(cluster)
        killed = {e.pk: e.steps.count() for e in run.episodes.filter(status=Status.RUNNING)}
        assert victim.pk in killed
        time.sleep(2 * HEARTBEAT_SEC)
        assert Episode.objects.get(pk=victim.pk).status == Status.RUNNING  # nobody is left to finish it

        stale = lambda: set(leases.stale_episodes(run.episodes.all()).values_list("id", flat=True))  # noqa: E731
        assert not stale() & set(killed)  # their leases have not run out yet
        wait_until(lambda: stale() == set(killed), timeout=10, what="the abandoned episodes to become stale")

        resumed = lifecycle.resume_run(run_id=run.pk)
        assert resumed.reset == len(killed)
        dispatch.queue_run(run_id=run.pk)
        with worker.qcluster(shared_database, workers=2, log=tmp_path / "second.log",
                             EEGAB_EPISODE_LEASE_SEC=LEASE_SEC, EEGAB_HEARTBEAT_SEC=HEARTBEAT_SEC,
                             EEGAB_PROVIDER_KEY_ENVS=["FAKE_LLM_KEY"]):  # fmt: skip
            run = wait_until(
                lambda: Run.objects.filter(pk=run.pk, status__in=models.FINISHED).first(),
                timeout=60,
                what="the resumed run to finish",
            )

    assert run.status == Status.COMPLETED
    for episode in run.episodes.all():
        steps = list(episode.steps.order_by("index"))
        assert [step.index for step in steps] == list(range(len(steps)))
        assert [step.kind for step in steps] == EPISODE_KINDS, episode.pk  # one attempt's record, nothing doubled
        assert episode.status == Status.COMPLETED and episode.scores and episode.prediction["classification"] == "clean"
        assert episode.attempt == (2 if episode.pk in killed else 1)
    assert Step.objects.filter(episode__run=run, kind=Kind.FINAL_ANSWER).count() == run.episodes.count() == 4
    assert run.finished_at is not None
