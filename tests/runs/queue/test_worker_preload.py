"""``manage.py qcluster`` loads what episodes use before its workers fork (``runs.model.litellm_transport.preload_litellm``).

Each check runs in a fresh interpreter: what a process has imported is the thing measured.
"""
import json
import logging
import os
import subprocess
import sys

import pytest
from django.db import OperationalError
from django.core.management import get_commands, load_command_class
from django_q.signals import post_spawn

from runs.management.commands.qcluster import Command as PreloadingCluster

ROOT = __import__("pathlib").Path(__file__).resolve().parents[3]

FIRST_CALL = """
import json, os, sys, threading
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
import litellm
from runs.model.litellm_transport import _unbuilt_pydantic_models, preload_litellm
from runs.queue.worker import warm_worker
from tests.runs.fake_llm import FakeLLM, text

if sys.argv[1] in ("preload", "worker"):
    preload_litellm()
threads_after_preload = [thread.name for thread in threading.enumerate()]
if sys.argv[1] == "worker":  # as a worker of the cluster does when it starts (this process has no database)
    import runs.queue.worker
    runs.queue.worker.open_database = lambda: None
    warm_worker()
with FakeLLM() as server:
    server.add(text("hello"))
    before, unbuilt = set(sys.modules), _unbuilt_pydantic_models()
    reply = litellm.completion(model=sys.argv[2], messages=[{"role": "user", "content": "hi"}],
                               api_base=server.api_base, api_key="sk-test", num_retries=0, max_retries=0)
    loaded = sorted(set(sys.modules) - before)
    built = sorted(model.__qualname__ for model in unbuilt - _unbuilt_pydantic_models())
print(json.dumps({"threads": threads_after_preload, "loaded": loaded, "built": built,
                  "content": reply.choices[0].message.content, "batch": os.sched_getscheduler(0) == os.SCHED_BATCH}))
"""


@pytest.fixture
def quiet_steps(monkeypatch):
    """warm_worker's steps that reach outside the process (litellm's loopback calls, the tool rehearsal, the
    database) made no-ops, for a test to replace the one it is about; the worker module is returned."""
    from runs.queue import worker

    for step in ("warm_up", "rehearse_tools", "open_database"):
        monkeypatch.setattr(worker, step, lambda: None)
    return worker


@pytest.fixture(autouse=True)
def this_process_stays_interactive(monkeypatch):
    """A worker's warm-up called in this process must not make it, and the processes it starts later, batch work."""
    from runs.queue import worker

    monkeypatch.setattr(worker, "batch_scheduling", lambda: False)


def first_call(mode: str, model: str = "openai/fake-model") -> dict:
    done = subprocess.run([sys.executable, "-c", FIRST_CALL, mode, model], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_after_the_preload_a_first_model_call_imports_and_builds_almost_nothing_and_no_thread_was_left_running():
    cold, warm = first_call("cold"), first_call("preload")
    assert cold["content"] == warm["content"] == "hello"
    assert len(cold["loaded"]) >= 50  # litellm's first call loads its provider code, httpx transports, ...
    assert len(warm["loaded"]) <= len(cold["loaded"]) // 5
    # … and builds the validators of the models a reply is read into (litellm defers them to first use)
    assert {"ChatCompletion", "ModelResponse", "Usage"} <= set(cold["built"])
    assert warm["built"] == []
    assert warm["threads"] == ["MainThread"]  # the parent forks workers next: it must have no other thread


def test_after_the_preload_a_priced_models_first_call_loads_almost_nothing_either():
    """A hosted model litellm prices takes other paths (its provider's configurations, its cost) than an unpriced one."""
    cold, warm = first_call("cold", "openai/gpt-4o-mini"), first_call("preload", "openai/gpt-4o-mini")
    assert cold["content"] == warm["content"] == "hello"
    assert len(cold["loaded"]) >= 50
    assert len(warm["loaded"]) <= 5 and warm["built"] == []


def test_a_worker_that_warmed_up_as_it_started_loads_and_builds_nothing_on_its_first_call():
    worker = first_call("worker", "openai/gpt-4o-mini")
    assert worker["content"] == "hello"
    assert (worker["loaded"], worker["built"]) == ([], [])
    assert worker["batch"] is True  # scheduled as batch work, as a worker is
    assert first_call("preload")["batch"] is False


def test_qcluster_is_the_preloading_command_of_runs():
    assert get_commands()["qcluster"] == "runs"
    assert isinstance(load_command_class("runs", "qcluster"), PreloadingCluster)


def test_the_preloading_command_loads_and_counts_its_free_workers_before_it_starts_the_cluster(monkeypatch, settings):
    from django_q.conf import Conf
    from django_q.management.commands import qcluster as django_q_command
    from django_q.signals import post_execute_in_worker

    from runs.management.commands import qcluster

    calls = []
    monkeypatch.setattr(Conf, "WORKERS", 3)
    monkeypatch.setattr(qcluster, "settle_process", lambda *, model: calls.append(("settle", model)))
    monkeypatch.setattr(qcluster, "count_free_workers", lambda workers: calls.append(("count", workers)))
    monkeypatch.setattr(django_q_command.Command, "handle", lambda self, *a, **o: calls.append(("cluster", o["run_once"])))
    monkeypatch.setattr(qcluster, "warm_worker", lambda name: calls.append(("warm", name)))
    monkeypatch.setattr(qcluster, "worker_free", lambda: calls.append(("free", None)))
    try:
        PreloadingCluster().handle(run_once=True)
        assert calls == [("settle", None), ("count", 3), ("cluster", True)]

        post_spawn.send(sender="django_q", proc_name="Process-1:1")  # what django-q2 sends in each new worker
        assert calls[-2:] == [("warm", "Process-1:1"), ("free", None)]  # free for a task once warmed up
        post_execute_in_worker.send(sender="django_q", func=None, task={})  # ... and after each task
        assert calls[-1] == ("free", None) and len(calls) == 6
    finally:  # this process is no cluster: its later tests must not warm up or count on a signal
        post_spawn.disconnect(dispatch_uid="runs.warm_spawned_worker")
        post_execute_in_worker.disconnect(dispatch_uid="runs.free_after_task")


@pytest.mark.parametrize("step, error, logged", [
    ("warm_up", ConnectionRefusedError("no loopback here"), "warm-up failed"),
    ("rehearse_tools", OSError("no temporary directory is writable"), "tool rehearsal failed"),
    ("open_database", OperationalError("the database server is not up yet"), "could not query its database"),
])
def test_a_worker_whose_warm_up_step_fails_logs_it_and_goes_on(quiet_steps, monkeypatch, caplog, step, error, logged):
    def failing():
        raise error

    monkeypatch.setattr(quiet_steps, step, failing)
    with caplog.at_level(logging.INFO, logger="runs.queue.worker"):
        quiet_steps.warm_worker()
    assert logged in caplog.text and str(error) in caplog.text
    assert "ready for episodes" in caplog.text  # it goes on: a cluster waiting for its workers is not kept waiting


def test_a_warmed_worker_says_it_is_ready_with_its_name_at_info(quiet_steps, caplog):
    worker = quiet_steps
    with caplog.at_level(logging.INFO, logger="runs.queue.worker"):
        worker.warm_worker("Process-1:7")
    [record] = [r for r in caplog.records if r.name == "runs.queue.worker"]
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith(f"Process-1:7 (pid {os.getpid()}) warmed up in ")
    assert record.getMessage().endswith("ready for episodes")


def test_a_deployment_s_logging_shows_a_worker_s_readiness():
    """With DEBUG off (a deployment), the readiness line reaches the service's journal (stderr)."""
    script = (
        "import logging, os, sys; sys.path.insert(0, os.getcwd());"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; import django; django.setup();"
        "from runs.queue import worker; worker.warm_up = worker.open_database = worker.rehearse_tools = lambda: None;"
        "worker.warm_worker('Process-1:3')"
    )
    environment = {**os.environ, "DEBUG": "false", "SECRET_KEY": "test-not-secret"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "INFO runs.queue.worker Process-1:3 (pid " in done.stderr and "ready for episodes" in done.stderr
def test_a_prompt_set_that_fails_to_load_ahead_is_logged_and_the_process_still_settles(monkeypatch, caplog):
    from runs.queue import worker

    def broken(name):
        raise RuntimeError(f"the {name} package is half installed")

    monkeypatch.setattr(worker, "_settled_pid", None)
    monkeypatch.setattr(worker, "prompt_set", broken)
    monkeypatch.setattr(worker.gc, "freeze", lambda: None)  # this test process's objects stay collectable
    worker.settle_process(model="baseline/random")
    assert worker._settled_pid is not None
    assert "could not be loaded ahead" in caplog.text and "half installed" in caplog.text


FREED_AND_REUSED = """
import os, resource, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
import numpy as np
from runs.queue.worker import keep_freed_memory

kept = keep_freed_memory() if sys.argv[1] == "keep" else None
temporary = np.ones(2_000_000)  # 16 MB, the size of a tool's temporary over a long recording
del temporary
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
again = np.ones(2_000_000)
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


TEMPORARIES_AFTER_THE_WARM_UP = """
import os, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
import numpy as np
from runs.queue.worker import fault_in_heap, keep_freed_memory

def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

keep_freed_memory()
done = fault_in_heap() if sys.argv[1] == "fault-in" else None
before = resident_mb()
temporaries = [np.ones(1_500_000), np.ones(1_000_000), np.ones(500_000)]  # 24 MB a first episode's tools hold
print(done, round(resident_mb() - before))
"""


def test_a_worker_s_tools_find_their_temporaries_memory_faulted_in_by_the_warm_up():
    def grown_mb(mode: str) -> tuple[str, int]:
        """The memory the process gained for the temporaries (pages the kernel had to fault in and zero)."""
        done = subprocess.run([sys.executable, "-c", TEMPORARIES_AFTER_THE_WARM_UP, mode], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        told, grown = done.stdout.split()
        return told, int(grown)

    told, grown = grown_mb("fault-in")
    assert told == "True" and grown <= 1
    assert grown_mb("plain")[1] >= 20  # without the warm-up's pages, the temporaries need 24 MB of fresh ones


def test_nothing_is_faulted_in_where_freed_memory_would_go_straight_back(monkeypatch):
    from runs.queue import worker

    monkeypatch.setattr(worker, "keep_freed_memory", lambda: False)
    assert worker.fault_in_heap() is False


def test_the_warm_up_faults_in_the_heap(quiet_steps, monkeypatch):
    worker = quiet_steps
    calls = []
    monkeypatch.setattr(worker, "rehearse_tools", lambda: calls.append("rehearsal"))
    monkeypatch.setattr(worker, "fault_in_heap", lambda: calls.append("heap"))
    worker.warm_worker()
    assert calls == ["heap", "rehearsal"]


@pytest.mark.django_db
def test_the_warm_up_makes_the_worker_s_first_database_query_and_leaves_the_connection_open(monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.queue import worker

    monkeypatch.setattr(worker, "warm_up", lambda: None)
    monkeypatch.setattr(worker, "fault_in_heap", lambda: None)
    monkeypatch.setattr(worker, "rehearse_tools", lambda: 0)
    with CaptureQueriesContext(connection) as queries:
        worker.warm_worker()
    assert [query["sql"] for query in queries] and all('"runs_episode"' in query["sql"] for query in queries)
    assert connection.connection is not None  # open for the worker's first task


def test_a_settled_process_reuses_the_memory_of_a_freed_temporary_instead_of_faulting_in_fresh_pages():
    def faults(mode: str) -> tuple[str, int]:
        done = subprocess.run([sys.executable, "-c", FREED_AND_REUSED, mode], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, check=True)  # fmt: skip
        kept, count = done.stdout.split()
        return kept, int(count)

    kept, count = faults("keep")
    assert kept == "True" and count < 20
    assert faults("default")[1] > count  # glibc's default hands the block back and faults it in again


def test_a_worker_s_tool_rehearsal_calls_every_tool_with_a_result_and_leaves_nothing_behind(tmp_path, monkeypatch):
    import tempfile

    from runs.queue import worker
    from tools_app import recording
    from tools_app.registry import TOOL_NAMES
    from tools_app.signal import stored

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the rehearsal's recording is written
    previous = stored.stats_dir()
    stored.configure(tmp_path / "stats")
    try:
        assert worker.rehearse_tools() == len(TOOL_NAMES)  # every call gave a result, none an error
    finally:
        stored.configure(previous)
    assert {name for name, _ in worker.REHEARSAL} == set(TOOL_NAMES)
    assert list(scratch.iterdir()) == []  # the recording and its directory are removed
    assert not [key for key in recording._cache if key[0].startswith(str(scratch))]  # and no longer cached
    assert not (tmp_path / "stats").exists()  # too short for statistics to be kept


def test_the_cluster_loads_the_rehearsal_s_edf_writer_before_it_forks_its_workers():
    """Each worker would otherwise import it (and scipy.io, 40 modules, about 50 ms) for its rehearsal."""
    script = (
        "import os, sys; sys.path.insert(0, os.getcwd()); os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings';"
        "import django; django.setup(); from runs.queue import worker; worker.preload_litellm = lambda: None;"
        "worker.settle_process(model=None); print('benchmark.demo.raw' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)  # fmt: skip
    assert done.stdout.split()[-1] == "True"
