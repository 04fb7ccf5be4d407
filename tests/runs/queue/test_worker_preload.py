"""``manage.py qcluster`` loads what episodes use before its workers fork (``runs.model.litellm_transport.preload_litellm``).

Each check runs in a fresh interpreter: what a process has imported is the thing measured.
"""
import json
import subprocess
import sys

from django.core.management import get_commands, load_command_class

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
from tests.runs.fake_llm import FakeLLM, text

if sys.argv[1] == "preload":
    preload_litellm()
threads_after_preload = [thread.name for thread in threading.enumerate()]
with FakeLLM() as server:
    server.add(text("hello"))
    before, unbuilt = set(sys.modules), _unbuilt_pydantic_models()
    reply = litellm.completion(model="openai/fake-model", messages=[{"role": "user", "content": "hi"}],
                               api_base=server.api_base, api_key="sk-test", num_retries=0, max_retries=0)
    loaded = sorted(set(sys.modules) - before)
    built = sorted(model.__qualname__ for model in unbuilt - _unbuilt_pydantic_models())
print(json.dumps({"threads": threads_after_preload, "loaded": loaded, "built": built,
                  "content": reply.choices[0].message.content}))
"""


def first_call(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", FIRST_CALL, mode], cwd=ROOT, capture_output=True, text=True,
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


def test_qcluster_is_the_preloading_command_of_runs():
    assert get_commands()["qcluster"] == "runs"
    assert isinstance(load_command_class("runs", "qcluster"), PreloadingCluster)


def test_the_preloading_command_loads_before_it_starts_the_cluster(monkeypatch):
    from django_q.management.commands import qcluster as django_q_command

    from runs.management.commands import qcluster

    calls = []
    monkeypatch.setattr(qcluster, "settle_process", lambda *, model: calls.append(("settle", model)))
    monkeypatch.setattr(django_q_command.Command, "handle", lambda self, *a, **o: calls.append(("cluster", o["run_once"])))
    PreloadingCluster().handle(run_once=True)
    assert calls == [("settle", None), ("cluster", True)]


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


def test_a_settled_process_reuses_the_memory_of_a_freed_temporary_instead_of_faulting_in_fresh_pages():
    def faults(mode: str) -> tuple[str, int]:
        done = subprocess.run([sys.executable, "-c", FREED_AND_REUSED, mode], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, check=True)  # fmt: skip
        kept, count = done.stdout.split()
        return kept, int(count)

    kept, count = faults("keep")
    assert kept == "True" and count < 20
    assert faults("default")[1] > count  # glibc's default hands the block back and faults it in again
