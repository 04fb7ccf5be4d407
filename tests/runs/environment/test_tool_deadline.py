"""A tool call made by a web request runs under a deadline: past it, the call is stopped and is its step's result."""
import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import Release
from runs.environment import service as environment
from runs.models import Episode, Status, Step
from tools_app import processes
from tools_app.registry import REGISTRY, tool_specs

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("steps_keep_their_shapes")]


@pytest.fixture
def bonn_suite(suite, tmp_path):
    """The tiny suite with its T3 recording on disk (a Bonn text file)."""
    path = tmp_path / "data" / "bonn" / "S" / "S001.txt"
    path.parent.mkdir(parents=True)
    np.savetxt(path, np.random.default_rng(5).integers(-200, 200, 4097), fmt="%d")
    Release.objects.filter(pk=suite.release_id).update(source=str(tmp_path))
    return suite


@pytest.fixture
def request_processes(monkeypatch):
    """The requests' tool process, forked afresh after the test's patches, and ended after the test."""
    fresh = processes._PerProcess(processes=1)
    monkeypatch.setattr(processes, "_for_requests", fresh)
    yield fresh
    if fresh.pool is not None:
        fresh.pool.close()


@pytest.fixture
def stuck_psd(monkeypatch):
    """compute_psd never returns (in the processes forked from now on)."""
    import time

    def stuck(*args, **kwargs):
        time.sleep(600)

    tool_specs()  # the tools registered
    spec = REGISTRY["compute_psd"]
    monkeypatch.setitem(REGISTRY, "compute_psd", type(spec)(**{**spec.__dict__, "function": stuck}))


def test_a_call_past_the_deadline_is_its_steps_tool_error_and_the_episode_goes_on(
    bonn_suite, request_processes, stuck_psd, settings
):
    settings.EEGAB_TOOL_DEADLINE_SEC = 0.5
    run, key = environment.open_external_run(agent="my-agent", suite=bonn_suite, tasks=["T3"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    started = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").data
    record_id = started["record_id"]

    def act(action):
        return client.post(reverse("env:actions", args=[started["episode"]]), action, format="json")

    stuck = act({"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": record_id}})

    assert stuck.status_code == 200 and stuck.data["done"] is False and stuck.data["status"] == "ok"
    error = stuck.data["result"]
    assert (error["record_id"], error["error_code"], error["deadline_sec"]) == (record_id, "timeout", 0.5)
    assert "took longer than the 0.5 s a call may take here" in error["error"] and "Rescope" in error["error"]
    assert "took longer than" in stuck.data["observation"]
    stopped = request_processes.pool
    assert not stopped.alive()  # its process was ended, not left computing
    episode = Episode.objects.get(pk=started["episode"])
    steps = list(episode.steps.order_by("index"))
    assert [step.kind for step in steps] == [Step.Kind.PROMPT, Step.Kind.AGENT_MESSAGE, Step.Kind.TOOL_CALL]
    assert steps[-1].result["content"] == error and steps[-1].result["status"] == "ok"
    assert (episode.status, episode.n_turns, episode.n_tool_calls) == (Status.RUNNING, 1, 1)

    # The next request forks another tool process, and the episode plays on to its answer.
    power = act({"action": "tool_call", "tool_name": "compute_band_power", "arguments": {"record_id": record_id}})
    assert power.data["status"] == "ok" and "error" not in power.data["result"]
    assert request_processes.pool is not stopped and request_processes.pool.alive()
    done = act({"action": "final_answer", "classification": "epileptic", "findings": []}).data
    assert done["done"] and done["status"] == Status.COMPLETED
    assert Episode.objects.get(pk=started["episode"]).n_tool_calls == 2
