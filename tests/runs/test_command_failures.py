"""A run that cannot start, or does not complete, says why and ends the command with exit status 1.

Before, ``run_benchmark --model openai/not-a-real-model-xyz`` without a key printed a report
saying "failed" and exited 0, and ``--model gpt-4o`` waited through a minute of retries first.
Now the model's name (where litellm's bundled map lists its provider's models) and its key are
checked before anything is stored, and a run that fails names its first failure's reason.
"""
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import ModelSpec
from runs.models import Run, Status
from tests.runs import worker
from tests.runs.demo_suite import import_demo
from tests.runs.fake_llm import FakeLLM, http_error, text

ROOT = Path(__file__).resolve().parents[2]
UNAUTHORISED = "Incorrect API key provided: sk-test. You can find your API key at your provider."


@pytest.fixture
def demo(db, settings):
    settings.EEGAB_PROVIDER_RETRIES = 0
    return import_demo()


def run_benchmark(*arguments):
    out, err = StringIO(), StringIO()
    try:
        call_command("run_benchmark", "--tasks", "T3", "--limit", "2", *arguments, stdout=out, stderr=err)
    except CommandError as error:
        return out.getvalue(), err.getvalue(), str(error)
    return out.getvalue(), err.getvalue(), None


def test_a_model_name_litellm_does_not_list_is_refused_with_the_closest_it_lists(demo, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _, _, error = run_benchmark("--model", "openai/gpt-4o-mini-2024", "--sync")
    assert error.startswith("Unknown model 'openai/gpt-4o-mini-2024': litellm's model map")
    assert "The closest it lists: openai/gpt-4o-mini-2024-07-18" in error and "--unlisted-model" in error
    assert not Run.objects.exists() and not ModelSpec.objects.exists()


def test_an_unlisted_model_runs_when_asked_and_any_name_runs_at_an_api_base(demo, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert run_benchmark("--model", "openai/a-model-newer-than-litellm", "--unlisted-model", "--no-wait")[2] is None
    assert run_benchmark("--model", "openai/my-own-model", "--api-base", "http://127.0.0.1:9/v1", "--no-wait")[2] is None
    assert Run.objects.count() == 2


@pytest.mark.parametrize("model", ["gpt-4o", "openai/gpt-4o-mini"])
def test_a_sync_run_whose_key_is_not_set_is_refused_at_once(demo, monkeypatch, model):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _, _, error = run_benchmark("--model", model, "--sync")
    assert error == (f"{model} reads its API key from OPENAI_API_KEY, which is not set. Set it (export "
                     "OPENAI_API_KEY=...), or name the variable that holds the key with --api-key-env.")  # fmt: skip
    assert not Run.objects.exists()


def test_a_queued_run_whose_key_is_not_set_here_is_queued_with_a_note(demo, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out, err, error = run_benchmark("--model", "openai/gpt-4o-mini", "--no-wait")
    assert error is None
    assert "Note: openai/gpt-4o-mini reads its API key from OPENAI_API_KEY, which is not set." in err
    assert "The queue workers (manage.py qcluster) read the key from their own environment" in err
    assert "No queue worker is running now: start one with `python manage.py qcluster`" in err
    assert Run.objects.get().episodes.filter(queued_at__isnull=False).count() == 2


def fake_model(server, *more):
    return ["--model", "openai/fake-model", "--api-base", server.api_base, "--api-key-env", "FAKE_LLM_KEY",
            "--sync", "--concurrency", "1", *more]  # fmt: skip


def test_a_run_whose_every_episode_fails_names_the_first_reason(demo, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    with FakeLLM().add(http_error(401, UNAUTHORISED), http_error(401, UNAUTHORISED)) as server:
        out, _, error = run_benchmark(*fake_model(server))
    run = Run.objects.get()
    first = run.episodes.order_by("finished_at", "pk").first()
    assert f"Run {run.pk} · openai/fake-model on suite demo (SYNTHETIC data) · failed" in out  # the report first
    assert error.startswith(f"Run {run.pk} failed: every episode failed, each with a provider error. "
                            f"The first (T3, episode {first.pk}): AuthenticationError (HTTP 401)")  # fmt: skip
    assert UNAUTHORISED in error
    assert error.endswith(f"Once that is fixed, play them again with: python manage.py resume_run {run.pk} --sync")


def test_a_run_with_one_failed_episode_of_two_fails_the_command_too(demo, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    answer = text('{"action": "final_answer", "classification": "normal", "findings": []}')
    with FakeLLM().add(answer, http_error(401, UNAUTHORISED)) as server:
        _, _, error = run_benchmark(*fake_model(server))
    run = Run.objects.get()
    assert sorted(run.episodes.values_list("status", flat=True)) == [Status.COMPLETED, Status.FAILED]
    assert error.startswith(f"Run {run.pk} failed: 1 of its 2 episodes failed, each with a provider error.")


def test_a_completed_run_ends_the_command_quietly(demo):
    out, err, error = run_benchmark("--model", "baseline/heuristic", "--sync")
    assert error is None and "· completed" in out


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), worker.file_database(tmp_path / "db.sqlite3") as path:
        yield path


def manage(database, *arguments, **env):
    """``manage.py`` in a process of its own on the SQLite file ``database``: its exit status, stdout and stderr."""
    environment = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "OPENAI_API_KEY")}
    environment |= {"DATABASE_URL": f"sqlite:///{database}", "EEGAB_PROVIDER_RETRIES": "0",
                    "EEGAB_PROVIDER_KEY_ENVS": "FAKE_LLM_KEY", **env}
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.sqlite_file
@pytest.mark.slow
def test_the_command_exits_1_with_its_reason(shared_database):
    import_demo()
    status, out, err = manage(shared_database, "run_benchmark", "--model", "openai/not-a-real-model-xyz", "--sync")
    assert status == 1 and out == ""
    assert "CommandError: Unknown model 'openai/not-a-real-model-xyz'" in err

    status, out, err = manage(shared_database, "run_benchmark", "--model", "gpt-4o", "--sync")
    assert status == 1 and "CommandError: gpt-4o reads its API key from OPENAI_API_KEY, which is not set." in err
    assert not Run.objects.exists()

    with FakeLLM().add(http_error(401, UNAUTHORISED)) as server:
        status, out, err = manage(shared_database, "run_benchmark", "--tasks", "T3", "--limit", "1",
                                  *fake_model(server), FAKE_LLM_KEY="sk-test")  # fmt: skip
    assert status == 1 and "· failed" in out
    assert "failed: every episode failed, each with a provider error." in err and UNAUTHORISED in err
