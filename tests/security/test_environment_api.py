"""The environment API refuses what it should not read, and ends what an agent walks away from."""
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone
from django_q.models import Schedule
from rest_framework.test import APIClient

from runs.environment import service as environment
from runs.models import Episode, Run, Status, Step

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()


@pytest.fixture
def agent(suite):
    run, key = environment.open_external_run(agent="attacker", suite=suite, tasks=["T1", "T3"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return run, client


def test_a_ten_megabyte_body_is_refused_unread(agent):
    run, client = agent
    body = b'{"record_id": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    response = client.post(reverse("env:episodes", args=[run.pk]), body, content_type="application/json")
    assert response.status_code == 413 and "larger than 65536 bytes" in response.json()["detail"]
    assert not Step.objects.exists() and run.episodes.filter(status=Status.PENDING).count() == 2


def test_a_body_over_the_setting_is_refused_even_without_a_length(agent, settings):
    settings.EEGAB_ENV_MAX_BODY_BYTES = 2048
    run, client = agent
    started = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").json()
    action = {"action": "final_answer", "answer": "A", "thought": "x" * 4000}
    response = client.post(reverse("env:actions", args=[started["episode"]]), action, format="json")
    assert response.status_code == 413
    assert Episode.objects.get(pk=started["episode"]).n_turns == 0  # the action was not taken


@pytest.mark.parametrize("content_type, body", [
    ("application/x-www-form-urlencoded", "action=final_answer&answer=A"),
    ("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--\r\n"),
    ("text/plain", '{"action": "final_answer", "answer": "A"}'),
])
def test_only_json_bodies_are_read(agent, content_type, body):
    run, client = agent
    started = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").json()
    response = client.generic("POST", reverse("env:actions", args=[started["episode"]]), body, content_type)
    assert response.status_code == 415
    assert Episode.objects.get(pk=started["episode"]).n_turns == 0


@pytest.mark.parametrize("limits, named", [
    ({"max_turns": "many"}, "max_turns must be a whole number"),
    ({"max_turns": 0}, "max_turns must be from 1 to 1000"),
    ({"max_cost_usd": -1}, "max_cost_usd must be at least 0"),
    ({"max_wall_time_sec": float("nan")}, "NaN is not a JSON number"),  # refused as a body already
    ({"max_tool_calls": True}, "max_tool_calls must be a whole number"),
    ({"colour": 3}, "'colour' is no limit"),
])
def test_bad_limits_are_refused_naming_them(client, staff_user, suite, limits, named):
    client.force_login(staff_user)
    body = {"agent": "my-agent", "suite": "tiny", "tasks": ["T1"], "limits": limits}
    response = client.post(reverse("env:runs"), body, content_type="application/json")
    assert response.status_code == 400 and named in str(response.json())
    assert not Run.objects.exists()


def test_the_rate_comes_from_its_setting(agent, settings):
    settings.EEGAB_ENV_API_RATE = "3/min"
    _, client = agent
    assert [client.get(reverse("env:runs")).status_code for _ in range(4)] == [200, 200, 200, 429]


def test_an_abandoned_episode_ends_unanswered_and_its_run_finishes(agent, settings):
    run, client = agent
    first = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").json()
    client.post(reverse("env:actions", args=[first["episode"]]), {"action": "final_answer", "answer": "A"},
                format="json")  # fmt: skip
    second = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").json()
    # The agent walks away. Half an hour later the minute's sweep (a django-q2 schedule) ends it.
    assert Schedule.objects.filter(func="runs.environment.service.end_idle_episodes", schedule_type="I", minutes=1).exists()
    assert environment.end_idle_episodes(now=timezone.now() + timedelta(minutes=29)) == 0
    assert environment.end_idle_episodes(now=timezone.now() + timedelta(minutes=31)) == 1
    episode = Episode.objects.get(pk=second["episode"])
    assert (episode.status, episode.ended_by, episode.prediction) == (Status.COMPLETED, "abandoned", {})
    assert episode.scores and episode.scores.get("correct") is False  # scored, as an unanswered episode is
    assert episode.steps.filter(kind=Step.Kind.ERROR, error__startswith="abandoned: no action for 1800").exists()
    run.refresh_from_db()
    assert run.status == Status.COMPLETED and run.finished_at is not None
    late = client.post(reverse("env:actions", args=[second["episode"]]), {"action": "final_answer", "answer": "A"},
                       format="json")  # fmt: skip
    assert late.status_code == 409  # nothing already stored is changed


def test_an_agent_that_keeps_acting_is_not_abandoned(agent):
    run, client = agent
    started = client.post(reverse("env:episodes", args=[run.pk]), {}, format="json").json()
    Episode.objects.filter(pk=started["episode"]).update(heartbeat_at=timezone.now() - timedelta(minutes=20))
    assert environment.end_idle_episodes() == 0  # its last action was 20 minutes ago
    assert environment.end_idle_episodes(now=timezone.now() + timedelta(minutes=11)) == 1
