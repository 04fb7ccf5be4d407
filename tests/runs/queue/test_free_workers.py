"""A cluster pulls a task off the broker only for a free worker (``runs.queue.dispatch.cluster_broker``).

The first tests drive the broker in this process, with the count a cluster makes before it forks;
the last runs a real ``manage.py qcluster`` and looks at what it leaves on the queue.
"""
import time

import pytest
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.tasks import async_task

from runs.queue import dispatch
from tests.runs import worker
from tests.runs.worker import wait_until


@pytest.fixture
def cluster_count(monkeypatch):
    """This process counts its free workers as a cluster's do (two workers, none free yet)."""
    monkeypatch.setattr(dispatch, "_free_workers", None)
    monkeypatch.setattr(dispatch, "FREE_WORKER_WAIT_SEC", 0.05)
    monkeypatch.setattr(Conf, "POLL", 0.01)
    dispatch.count_free_workers(2)
    return dispatch._free_workers


def enqueue(count: int, broker) -> None:
    for number in range(count):
        async_task("math.sqrt", number, broker=broker)


def test_outside_a_cluster_the_broker_is_django_q2_s_own(db):
    broker = dispatch.cluster_broker(list_key="runs-test")
    assert type(broker) is ORM  # the tests' settings have no Redis: the database's broker


@pytest.mark.django_db
def test_a_cluster_pulls_a_task_only_for_a_free_worker(cluster_count):
    broker = dispatch.cluster_broker(list_key="runs-test")
    assert isinstance(broker, ORM) and type(broker) is not ORM
    enqueue(3, broker)

    assert not broker.dequeue()  # no worker has warmed up yet
    dispatch.worker_free()
    assert len(broker.dequeue()) == 1
    assert not broker.dequeue()  # that worker was promised the task
    dispatch.worker_free()
    dispatch.worker_free()
    assert len(broker.dequeue()) == 1 and len(broker.dequeue()) == 1
    assert not broker.dequeue()


@pytest.mark.django_db
def test_a_pull_that_finds_nothing_or_fails_leaves_the_worker_free(cluster_count, monkeypatch):
    broker = dispatch.cluster_broker(list_key="runs-test")
    dispatch.worker_free()
    assert not broker.dequeue()  # an empty queue
    enqueue(1, broker)
    assert len(broker.dequeue()) == 1  # the same worker, still free

    dispatch.worker_free()
    monkeypatch.setattr(ORM, "dequeue", lambda self: (_ for _ in ()).throw(ConnectionError("broker down")))
    with pytest.raises(ConnectionError):
        broker.dequeue()
    assert cluster_count.acquire(timeout=0)  # the free worker was counted back


@pytest.mark.django_db
def test_the_count_never_exceeds_the_cluster_s_workers(cluster_count):
    broker = dispatch.cluster_broker(list_key="runs-test")
    enqueue(4, broker)
    for _ in range(3):  # a recycled worker's replacement counts itself free once more
        dispatch.worker_free()
    assert len(broker.dequeue()) == 1 and len(broker.dequeue()) == 1
    assert not broker.dequeue()


@pytest.mark.django_db
def test_a_broker_that_pulls_several_tasks_at_once_takes_a_free_worker_for_each(cluster_count, monkeypatch):
    broker = dispatch.cluster_broker(list_key="runs-test")
    monkeypatch.setattr(Conf, "BULK", 2)
    enqueue(2, broker)
    dispatch.worker_free()
    dispatch.worker_free()
    assert len(broker.dequeue()) == 2
    assert not cluster_count.acquire(timeout=0)  # both free workers were taken


@pytest.mark.sqlite_file
def test_a_running_cluster_leaves_on_the_queue_what_its_busy_workers_cannot_take(
    tmp_path, django_db_setup, django_db_blocker
):
    """One worker, busy for seconds: the three tasks behind it stay on the broker for any other cluster."""
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as database:
        for _ in range(4):
            async_task("time.sleep", 3)
        with worker.qcluster(database, workers=1, log=tmp_path / "cluster.log"):
            wait_until(lambda: waiting() < 4, timeout=60, what="the cluster to take its first task")
            time.sleep(1.0)  # the worker is busy; django-q2's own broker would pull one or two more meanwhile
            assert waiting() == 3, (tmp_path / "cluster.log").read_text()


def waiting() -> int:
    """Tasks on the database's queue that no cluster has pulled (a pulled task is locked until its retry time)."""
    return OrmQ.objects.filter(lock__lte=timezone.now()).count()
