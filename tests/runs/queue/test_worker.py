"""The queue's task: playing an episode under its lease, recovering a stale one, looking after its run."""
import pytest
from django_q.models import OrmQ

from runs.models import Episode, Run, Status, Step
from runs.tasks import run_episode_task
from tests.runs.queue.helpers import abandon, episodes_of

Kind = Step.Kind


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
    by_task = {episode.instance.task.code: episode for episode in episodes_of(random_run)}
    first, stale = by_task["T2"], by_task["T3"]  # the stale one has the longest recording: it goes out first
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
