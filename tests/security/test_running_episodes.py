"""An agent driving an episode looks its answer up on the site and the API, and finds nothing.

The attacker is an agent on the environment API (or a model with web access): it knows its record
id and its episode's number, and the site is public.
"""
import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import ModelSpec
from runs.environment import service as environment
from runs.episode.engine import run_episode
from runs.models import Episode, Status
from runs.services import create_run
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()


@pytest.fixture
def demo():
    return import_demo()


@pytest.fixture
def attack(demo):
    """An earlier, finished run on the demo T2 epochs, and an agent's running episode on one of them."""
    heuristic, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    earlier = create_run(suite=demo, model=heuristic, tasks=["T2"], name="earlier")
    for episode in earlier.episodes.all():
        run_episode(episode_id=episode.pk)
    run, key = environment.open_external_run(agent="attacker", suite=demo, tasks=["T2"])
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    started = agent.post(reverse("env:episodes", args=[run.pk]), {}, format="json").data
    episode = Episode.objects.select_related("instance").get(pk=started["episode"])
    call = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": started["record_id"]}}
    agent.post(reverse("env:actions", args=[episode.pk]), call, format="json")
    earlier_episode = earlier.episodes.get(instance=episode.instance)
    return episode, earlier_episode, agent, started


def label_of(episode):
    return episode.instance.reference["label"]


def test_its_record_id_leads_to_nothing_on_the_site(client, attack):
    episode, earlier, _, started = attack
    record_id = started["record_id"]
    assert record_id != earlier.record_id  # the same instance: another id
    for run in (episode.run, earlier.run):
        page = client.get(reverse("leaderboard:run", args=[run.pk]), {"q": record_id}).content.decode()
        assert f">{record_id}</a>" not in page  # no row found for it (the search box echoes it)
    assert reverse("leaderboard:episode", args=[earlier.pk]) not in client.get(
        reverse("leaderboard:run", args=[earlier.run.pk]), {"q": record_id}).content.decode()  # fmt: skip


def test_its_running_episode_shows_a_visitor_nothing(client, attack):
    episode, earlier, _, _ = attack
    assert episode.status == Status.RUNNING
    urls = [
        reverse("leaderboard:episode", args=[episode.pk]),
        reverse("leaderboard:episode_step", args=[episode.pk, 2]),
        reverse("leaderboard:episode_signal", args=[episode.pk, 2]),
        reverse("leaderboard:compare") + f"?a={episode.pk}&b={earlier.pk}",
        reverse("leaderboard:compare") + f"?a={earlier.pk}&b={episode.pk}",
        f"/api/episodes/{episode.pk}/",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 404, url
        assert label_of(episode) not in response.content.decode()
    # Its run lists it without a link or its record id, and the run's API detail without the id.
    page = client.get(reverse("leaderboard:run", args=[episode.run.pk])).content.decode()
    assert reverse("leaderboard:episode", args=[episode.pk]) not in page and episode.record_id not in page
    rows = client.get(f"/api/runs/{episode.run.pk}/").json()["episodes"]
    assert [row["instance"] for row in rows if row["id"] == episode.pk] == [None]
    # From the finished episode of the same instance, nothing leads to the running one.
    other = client.get(reverse("leaderboard:episode", args=[earlier.pk])).content.decode()
    assert f"b={episode.pk}" not in other and f"value=\"{episode.pk}\"" not in other


def test_staff_see_the_running_episode(client, staff_user, attack):
    episode, *_ = attack
    client.force_login(staff_user)
    assert client.get(reverse("leaderboard:episode", args=[episode.pk])).status_code == 200
    assert client.get(f"/api/episodes/{episode.pk}/").status_code == 200


def test_the_environment_api_tells_the_agent_metric_values_only(attack):
    episode, _, agent, _ = attack
    answer = {"action": "final_answer", "classification": "clean", "findings": []}
    done = agent.post(reverse("env:actions", args=[episode.pk]), answer, format="json").data
    assert done["done"] is True and set(done["scores"]) == {"correct"}
    assert "gold" not in str(done) and label_of(episode) not in str({k: v for k, v in done.items() if k != "prediction"})


def test_a_visitor_gets_every_signal_window_decimated(client, staff_user, attack):
    _, earlier, _, _ = attack
    step = earlier.steps.filter(kind="tool_call").first()
    url = reverse("leaderboard:episode_signal", args=[earlier.pk, step.index])
    shown = client.get(url).json()["figure"]["data"][0]["x"]
    assert 0 < len(shown) <= 256  # a 2-s epoch of 512 samples: at most half of them
    client.force_login(staff_user)
    assert len(client.get(url).json()["figure"]["data"][0]["x"]) == 512


# ── a running episode's place in a list ──────────────────────────────────────────────────────


def public_rows(client, run, task: str) -> list[dict]:
    return [row for row in client.get(f"/api/runs/{run.pk}/").json()["episodes"] if row["task"] == task]


def test_a_running_episodes_place_in_a_public_list_does_not_tell_its_instance(demo, client):
    """Listed by position, the n-th running row of a task would be the n-th ended row of another run."""
    heuristic, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    earlier = create_run(suite=demo, model=heuristic, tasks=["T2"], name="earlier")
    for episode in earlier.episodes.all():
        run_episode(episode_id=episode.pk)
    later = create_run(suite=demo, model=heuristic, tasks=["T2"], name="later")
    later.episodes.update(status=Status.RUNNING)
    ended = [Episode.objects.get(pk=row["id"]).instance_id for row in public_rows(client, earlier, "T2")]
    running = [Episode.objects.get(pk=row["id"]).instance_id for row in public_rows(client, later, "T2")]
    assert sorted(ended) == sorted(running) and len(ended) == 30
    assert sum(a == b for a, b in zip(ended, running)) < 10  # no longer aligned place by place (30 of 30 before)
    page = client.get(reverse("leaderboard:run", args=[later.pk]), {"task": "T2"}).content.decode()
    shown = [int(pk) for pk in __import__("re").findall(r'<td class="num" data-sort="(\d+)">\1</td>', page)]
    by_position = list(later.episodes.order_by("instance__position").values_list("id", flat=True))
    assert shown and shown != by_position[: len(shown)]


def test_episode_ids_follow_no_instance_or_epoch_order(demo):
    heuristic, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    run = create_run(suite=demo, model=heuristic, tasks=["T2"], epochs=2)
    by_id = list(run.episodes.order_by("id").values_list("epoch", "instance__position"))
    assert by_id != sorted(by_id)  # created in a random order, not epoch by epoch and position by position
    assert {epoch for epoch, _ in by_id[:30]} == {0, 1}


def test_a_visitor_sees_no_epoch_of_an_episode_that_has_not_ended(demo, client, staff_user):
    heuristic, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    run = create_run(suite=demo, model=heuristic, tasks=["T3"], epochs=2)
    run.episodes.update(status=Status.RUNNING)
    assert {row["epoch"] for row in public_rows(client, run, "T3")} == {None}
    client.force_login(staff_user)
    assert {row["epoch"] for row in public_rows(client, run, "T3")} == {0, 1}
