"""A run's life cycle: cancel, resume, and finishing only when nothing is left to play."""
import json

import pytest

from runs import services
from runs.models import Episode, Run, Status, Step
from runs.queue import lifecycle, local, worker
from runs.tasks import run_episode_task
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.queue.helpers import abandon, episodes_of, model_run
from tests.runs.scripted_agent import T2_ANSWER, TOOL_CALL, ScriptedAgent

Kind = Step.Kind


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


@pytest.mark.django_db
@pytest.mark.parametrize("source", [Run.Source.RUN, Run.Source.IMPORTED])
@pytest.mark.parametrize("status", Status.values)
def test_cancel_and_resume_do_exactly_what_the_runs_buttons_offer(random_run, status, source):
    """``Run.can_cancel`` and ``can_resume`` decide the buttons; the services refuse whatever they do not offer."""
    Run.objects.filter(pk=random_run.pk).update(status=status, source=source)
    run = Run.objects.get(pk=random_run.pk)
    for allowed, act in [(run.can_cancel(), lifecycle.cancel_run), (run.can_resume(), lifecycle.resume_run)]:
        if allowed:
            act(run_id=run.pk)
        else:
            with pytest.raises(ValueError):
                act(run_id=run.pk)
        Run.objects.filter(pk=run.pk).update(status=status)
    assert run.can_cancel() is (status in (Status.PENDING, Status.RUNNING))
    assert run.can_resume() is (source == Run.Source.RUN and status != Status.COMPLETED)
