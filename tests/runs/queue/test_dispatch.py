"""Sending a run's episodes to the queue within its concurrency, through one broker connection."""
import pytest
from django_q.models import OrmQ

from runs.models import Episode, Run
from runs.queue import dispatch
from runs.tasks import run_episode_task
from tests.runs.queue.helpers import episodes_of


@pytest.mark.django_db
def test_release_keeps_at_most_the_runs_concurrency_in_flight(random_run, django_capture_on_commit_callbacks):
    Run.objects.filter(pk=random_run.pk).update(limits={"concurrency": 2})
    by_task = {episode.instance.task.code: episode for episode in episodes_of(random_run)}
    question, segment, record = by_task["T1"], by_task["T2"], by_task["T3"]  # no recording, 2 s, 23.6 s

    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch.queue_run(run_id=random_run.pk) == [record.pk, segment.pk]  # the longest recordings first
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch.release_episodes(run_id=random_run.pk) == []
    assert OrmQ.objects.count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        run_episode_task(record.pk)  # ends, and releases the next one
    assert OrmQ.objects.count() == 3
    assert Episode.objects.get(pk=question.pk).queued_at is not None


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
