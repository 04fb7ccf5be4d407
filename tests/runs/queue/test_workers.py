"""runs.queue.workers and runs.queue.dispatch: a live ``manage.py qcluster`` is seen by another process (and by a run page), and is gone once it stops."""
import os

import pytest
from django.urls import reverse
from django.utils import timezone

from benchmark.models import ModelSpec
from runs.models import Status
from runs.services import create_run

from runs.queue.dispatch import live_clusters, workers_alive
from runs.queue.workers import running_worker
from tests.runs import worker
from tests.runs.demo_suite import import_demo
from tests.runs.worker import wait_until


def status_cache(path) -> dict:
    """``CACHES`` with django-q2's status cache in ``path``, for this process and a cluster alike."""
    return {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "queue-status": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(path)},
    }


@pytest.mark.django_db  # the ORM broker asks the database's connection
def test_no_worker_is_alive_when_no_cluster_ever_ran(settings, tmp_path):
    settings.CACHES = status_cache(tmp_path / "queue-status")
    assert live_clusters() == []
    assert workers_alive() is False


@pytest.mark.slow
@pytest.mark.sqlite_file
def test_a_running_cluster_is_alive_for_another_process_and_not_once_stopped(
    settings, tmp_path, django_db_setup, django_db_blocker
):
    caches = status_cache(tmp_path / "queue-status")
    settings.CACHES = caches
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as database:
        cluster = worker.start(database, workers=1, log=tmp_path / "qcluster.log", CACHES=caches)
        try:
            [stat] = wait_until(
                lambda: [stat for stat in live_clusters() if stat.workers], timeout=60,
                what="the cluster to report itself with its worker",
            )
            assert len(stat.workers) == 1 and stat.sentinel != stat.workers[0]
            assert workers_alive() is True
        finally:
            worker.stop(cluster)
        # Its last report says it stopped (and expires in 3 s): it takes no more tasks.
        assert workers_alive() is False


@pytest.mark.slow
@pytest.mark.sqlite_file
def test_the_worker_child_of_demo_runs_and_is_stopped_with_its_whole_group_when_the_block_fails(
    settings, tmp_path, django_db_setup, django_db_blocker
):
    settings.CACHES = status_cache(tmp_path / "releases" / "queue-status")  # where the child's settings put it
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as database:
        env = {"DATABASE_URL": f"sqlite:///{database}", "EEGAB_DATA_ROOT": str(tmp_path / "releases")}
        with pytest.raises(RuntimeError, match="the server failed"):
            with running_worker(env=env) as process:
                wait_until(lambda: [stat for stat in live_clusters() if stat.workers], timeout=60,
                           what="the worker child to report itself")
                raise RuntimeError("the server failed")
        assert process.returncode is not None
        with pytest.raises(ProcessLookupError):
            os.killpg(process.pid, 0)  # nothing of its process group is left
        assert workers_alive() is False


@pytest.mark.slow
@pytest.mark.sqlite_file
def test_a_run_page_waiting_for_a_worker_says_so_until_a_qcluster_runs(
    client, settings, tmp_path, django_db_setup, django_db_blocker
):
    caches = status_cache(tmp_path / "live-status")
    settings.CACHES = caches
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as database:
        suite = import_demo()
        model = ModelSpec.objects.create(name="Idle", provider_model="baseline/random")
        queued = create_run(suite=suite, model=model, tasks=["T3"], limit=1)
        # Queued by hand, with no task sent: the cluster has nothing to take, so the episode stays pending.
        queued.episodes.update(queued_at=timezone.now())
        url = reverse("leaderboard:run", args=[queued.pk])
        assert 'id="no-worker"' in client.get(url).content.decode()
        with worker.qcluster(database, workers=1, log=tmp_path / "qcluster.log", CACHES=caches):
            wait_until(lambda: 'id="no-worker"' not in client.get(url).content.decode(), timeout=60,
                       what="the run page to see the cluster")
            assert queued.episodes.get().status == Status.PENDING
