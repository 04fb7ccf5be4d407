"""The run commands: run_benchmark end to end on the demo suite, resume/cancel/rescore, and their errors."""
import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from benchmark.models import ModelSpec
from runs.models import Episode, Run, Status, Step
from runs.queue.dispatch import TASK_FUNCTION
from tests.runs.demo_suite import import_demo
from tests.runs.episode_server import EpisodeLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    return import_demo()


def run_command(*args, **options):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def test_heuristic_baseline_completes_all_six_demo_tasks_with_a_metrics_table(demo):
    out, err = run_command("run_benchmark", "--model", "baseline/heuristic", "--suite", "demo", "--sync")

    run = Run.objects.get()
    assert run.status == Status.COMPLETED and run.model.name == "baseline/heuristic"
    assert run.tasks == ["T1", "T2", "T3", "T4", "T5", "T6"]
    counts = run.progress()
    assert counts[Status.COMPLETED] == demo.instances.count() == sum(counts.values())
    assert not run.episodes.filter(scores={}).exists()
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    for task, metric in [("T1", "accuracy"), ("T2", "macro_f1"), ("T3", "macro_f1"), ("T4", "macro_f1"),
                         ("T5", "event_f1"), ("T6", "macro_f1")]:  # fmt: skip
        assert metric in rows[task] and "partial" in rows[task]
    assert "Overall" in rows and "SYNTHETIC" in out
    # The progress bar ends with every episode done, none failed, and the cost: a baseline is free, on every line.
    assert f"{sum(counts.values())}/{sum(counts.values())} episodes · 0 failed · 0 tokens · free (built-in baseline)" in err
    assert "$" not in err and "cost free (built-in baseline)" in out


def test_json_output_is_one_object_with_official_metric_names(demo):
    out, _ = run_command("run_benchmark", "--model", "baseline/random", "--tasks", "t1, T2", "--limit", "3",
                         "--sync", "--json")  # fmt: skip

    report = json.loads(out)
    run = Run.objects.get()
    assert report["run_id"] == run.pk and report["status"] == "completed"
    assert set(report["tasks"]) == {"T1", "T2"}
    assert report["tasks"]["T1"]["primary_metric"] == "accuracy"
    assert set(report["tasks"]["T2"]["metrics"]) >= {"macro_f1", "accuracy", "invalid_predictions"}
    assert report["tasks"]["T2"]["n_items"] == 3 and report["tasks"]["T2"]["official"] is False
    assert report["overall"] is None and report["overall_official"] is False  # not all six tasks
    assert run.episodes.count() == 6


def test_queued_run_sends_one_task_per_episode_and_returns(demo, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        out, err = run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T3", "--limit", "2",
                               "--concurrency", "8", "--no-wait")  # fmt: skip

    run = Run.objects.get()
    assert out.strip() == str(run.pk) and "qcluster" in err
    payloads = [SignedPackage.loads(task.payload) for task in OrmQ.objects.all()]
    assert sorted(payload["args"][0] for payload in payloads) == sorted(run.episodes.values_list("id", flat=True))
    assert {payload["func"] for payload in payloads} == {TASK_FUNCTION}
    assert run.status == Status.PENDING and run.limits == {"concurrency": 8}


def test_model_spec_is_created_once_and_named_after_the_model_string(demo):
    for _ in range(2):
        run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T1", "--limit", "1", "--sync")
    spec = ModelSpec.objects.get(provider_model="baseline/random")
    assert spec.name == "baseline/random" and spec.family == "baseline"
    assert Run.objects.filter(model=spec).count() == 2


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--suite", "nope"], "Unknown suite 'nope'"),
        (["--tasks", "T7"], "Unknown task(s) T7"),
        (["--tasks", ","], "Unknown task"),
        (["--model", "baseline/oracle"], "Unknown baseline 'baseline/oracle'"),
        (["--model", "no-such-model"], "Unknown model 'no-such-model'"),
        (["--limit", "0"], "--limit must be a positive whole number"),
        (["--limit", "-2"], "--limit must be a positive whole number"),
        (["--limit", "many"], "invalid int value"),
        (["--concurrency", "0"], "--concurrency must be a positive whole number"),
        (["--api-key-env", "sk-123"], "environment variable"),
        (["--api-key-env", "UNSET_TEST_API_KEY"], "UNSET_TEST_API_KEY (named by --api-key-env) is not set"),
        (["--api-key-env", "SECRET_KEY"], "SECRET_KEY is a setting of the platform"),
        (["--api-key-env", "HOME"], "HOME is not a key variable runs may name"),
        (["--api-base", "https://user:secret@example.org/v1"], "The API base may not hold credentials"),
        (["--model-name", "M" * 101], "name: Ensure this value has at most 100 characters"),
        (["--run-name", "R" * 201], "Ensure this value has at most 200 characters"),
        (["--transport", "grpc"], "invalid choice: 'grpc'"),
        (["--max-tokens", "0"], "--max-tokens must be a positive whole number"),
        (["--temperature", "2.5"], "--temperature must be between 0 and 2"),
        (["--temperature", "-1"], "--temperature must be between 0 and 2"),
        (["--protocol", "json"], "invalid choice: 'json'"),
        (["--prompt-set", "paper"], "invalid choice: 'paper'"),
        (["--prompt-set", "official"], "pip install -e '.[official]'"),
    ],
)
def test_run_benchmark_errors_are_command_errors(demo, arguments, message):
    options = {"--model": "baseline/random", "--suite": "demo", "--sync": None}
    base = [part for name, value in options.items() for part in (name, value) if part is not None]
    if "--model" in arguments:
        base = base[2:]
    with pytest.raises(CommandError, match=re.escape(message)):
        run_command("run_benchmark", *base, *arguments)
    assert not Run.objects.exists() and not ModelSpec.objects.exists()


def test_without_suite_the_demo_suite_is_required():
    with pytest.raises(CommandError, match="no 'demo' suite"):
        run_command("run_benchmark", "--model", "baseline/random")


def test_a_task_the_suite_lacks_is_refused(suite):
    suite.instances.filter(task__code="T6").delete()
    with pytest.raises(CommandError, match="Suite tiny has no instances of T6"):
        run_command("run_benchmark", "--model", "baseline/random", "--suite", "tiny", "--tasks", "T6")


@pytest.mark.parametrize("command", ["resume_run", "cancel_run", "rescore_run"])
def test_commands_on_an_unknown_run_are_refused(db, command):
    with pytest.raises(CommandError, match="There is no run 999"):
        run_command(command, "999")


def test_cancel_then_resume_plays_the_cancelled_episodes(demo):
    run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T2", "--limit", "3", "--no-wait")
    run = Run.objects.get()

    out, _ = run_command("cancel_run", str(run.pk))
    assert f"Run {run.pk} is cancelled: 3 cancelled." in out

    out, err = run_command("resume_run", str(run.pk), "--sync", "--json")
    assert "3 episode(s) reset, 3 to play" in err
    assert json.loads(out)["status"] == "completed"
    assert set(run.episodes.values_list("status", "attempt")) == {(Status.COMPLETED, 2)}


def test_a_finished_run_cannot_be_cancelled(demo):
    run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T1", "--limit", "1", "--sync")
    with pytest.raises(CommandError, match="has already ended \\(completed\\)"):
        run_command("cancel_run", str(Run.objects.get().pk))


def test_rescore_recomputes_scores_from_stored_predictions(demo):
    run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T1,T6", "--limit", "2", "--sync")
    run = Run.objects.get()
    expected = dict(run.episodes.values_list("id", "scores"))
    run.episodes.update(scores={"stale": True})
    steps = Step.objects.count()

    out, err = run_command("rescore_run", str(run.pk))

    assert "4 completed episode(s) rescored" in err and "Overall" in out
    assert dict(run.episodes.values_list("id", "scores")) == expected
    assert Step.objects.count() == steps  # no model was called


def test_resume_refuses_an_imported_run(demo):
    run_command("run_benchmark", "--model", "baseline/random", "--tasks", "T1", "--limit", "1", "--sync")
    run = Run.objects.get()
    Run.objects.filter(pk=run.pk).update(source=Run.Source.IMPORTED)
    with pytest.raises(CommandError, match="only runs played here can be resumed"):
        run_command("resume_run", str(run.pk))
    assert Episode.objects.get().attempt == 1


def test_a_run_against_a_model_has_the_official_defaults(demo, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    with EpisodeLLM(tool_calls=1) as server:
        run_command("run_benchmark", "--model", "openai/fake-model", "--api-base", server.api_base,
                    "--api-key-env", "FAKE_LLM_KEY", "--tasks", "T3", "--limit", "1", "--sync", "--concurrency", "1")  # fmt: skip
        requests = list(server.requests)
    run = Run.objects.get()
    assert run.settings == {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}
    assert run.prompt_set == "platform"  # the official package is not installed (tests/conftest.py)
    assert requests and all("tools" not in request and request["max_tokens"] == 8192 and request["temperature"] == 0
                            for request in requests)  # fmt: skip
    assert run.episodes.get().status == Status.COMPLETED


def test_protocol_tokens_and_temperature_are_set_from_the_command_line(demo, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    with EpisodeLLM(tool_calls=0) as server:
        run_command("run_benchmark", "--model", "openai/fake-model", "--api-base", server.api_base,
                    "--api-key-env", "FAKE_LLM_KEY", "--tasks", "T3", "--limit", "1", "--sync", "--concurrency", "1",
                    "--protocol", "native",
                    "--max-tokens", "1024", "--temperature", "0.3", "--prompt-set", "platform")  # fmt: skip
        request = server.requests[0]
    run = Run.objects.get()
    assert run.settings == {"tool_protocol": "native", "temperature": 0.3, "max_tokens": 1024}
    assert (request["max_tokens"], request["temperature"]) == (1024, 0.3)
    assert [tool["function"]["name"] for tool in request["tools"]][-1] == "submit_final_answer"


def test_show_prompt_prints_the_first_request_as_the_model_gets_it(demo):
    instance = demo.instances.filter(task__code="T3").select_related("task").first()
    out, _ = run_command("show_prompt", "demo", instance.scenario_id, "--json")
    shown = json.loads(out)
    assert (shown["prompt_set"], shown["protocol"], shown["record_id"]) == ("platform", "text", instance.record_id)
    assert [message["role"] for message in shown["messages"]] == ["system", "user"] and shown["tools"] == []
    assert f"`{instance.record_id}`" in shown["messages"][1]["content"]
    assert instance.scenario_id not in out
    native = json.loads(run_command("show_prompt", "demo", instance.scenario_id, "--json", "--protocol", "native")[0])
    assert len(native["tools"]) == 11 and native["tools"][-1]["function"]["name"] == "submit_final_answer"
    readable, _ = run_command("show_prompt", "demo", instance.scenario_id)
    assert readable.startswith(f"# prompt set platform, text protocol, record {instance.record_id}")
    assert "── system ─" in readable and "── user ─" in readable


@pytest.mark.parametrize("arguments, message", [
    (["nope", "x"], "Unknown suite 'nope'"),
    (["demo", "c9_nothing"], "Suite demo has no scenario 'c9_nothing'"),
    (["demo", "c9_nothing", "--prompt-set", "official"], "Suite demo has no scenario"),
])
def test_show_prompt_errors_are_command_errors(demo, arguments, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run_command("show_prompt", *arguments)


def test_show_prompt_of_the_official_set_without_the_package_names_the_install(demo):
    instance = demo.instances.first()
    with pytest.raises(CommandError, match=re.escape("pip install -e '.[official]'")):
        run_command("show_prompt", "demo", instance.scenario_id, "--prompt-set", "official")
