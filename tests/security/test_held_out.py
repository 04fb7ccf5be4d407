"""An agent on a held-out suite looks its labels up on the site, the API and the environment API, and finds none.

The attack that worked on a public suite (issue 31): the agent's prompt, or a tool's default
output, finds another run's ended episode of the same instance, whose page and API detail show
the reference. On a held-out suite every way to an episode, an instance or a per-item score is
closed to anyone but staff, and a run's scores wait for its end.
"""
import http.client

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import Instance, ModelSpec
from benchmark.releases import set_references
from leaderboard.explorer.steps import is_signal_step
from runs.environment import service as environment
from runs.episode.engine import run_episode
from runs.models import Episode, Status
from runs.queue import lifecycle
from runs.services import create_run, finish_run
from tests.leaderboard.play.test_play import make_player, start
from tests.runs.demo_suite import import_demo
from tests.served import gunicorn, served_database  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()


@pytest.fixture
def held_out():
    suite = import_demo()
    set_references(suite, "held-out")
    return suite


def play_heuristic(suite, tasks):
    heuristic, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    run = create_run(suite=suite, model=heuristic, tasks=tasks, name="earlier")
    for episode in run.episodes.all():
        run_episode(episode_id=episode.pk)
    return finish_run(run_id=run.pk)


@pytest.fixture
def attack(held_out):
    """A finished heuristic run on the held-out T1 and T2, and an agent's running episode of T2 on the same suite."""
    earlier = play_heuristic(held_out, ["T1", "T2"])
    run, key = environment.open_external_run(agent="attacker", suite=held_out, tasks=["T2"])
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    started = agent.post(reverse("env:episodes", args=[run.pk]), {}, format="json").data
    episode = Episode.objects.select_related("instance").get(pk=started["episode"])
    call = {"action": "tool_call", "tool_name": "compute_band_power", "arguments": {"record_id": started["record_id"]}}
    agent.post(reverse("env:actions", args=[episode.pk]), call, format="json")
    return episode, earlier, agent, started


def earlier_urls(earlier) -> list[str]:
    """Every page and API address of the ended episodes of the earlier run, and of their steps and signals."""
    urls = []
    for episode in earlier.episodes.all():
        urls += [reverse("leaderboard:episode", args=[episode.pk]), f"/api/episodes/{episode.pk}/",
                 reverse("leaderboard:compare") + f"?a={episode.pk}"]
        for step in episode.steps.all():
            urls.append(reverse("leaderboard:episode_step", args=[episode.pk, step.index]))
            if is_signal_step(step):
                urls.append(reverse("leaderboard:episode_signal", args=[episode.pk, step.index]))
    return urls


def test_no_ended_episode_of_a_held_out_suite_is_reachable_by_a_visitor(client, attack):
    _, earlier, _, _ = attack
    urls = earlier_urls(earlier)
    assert len(urls) > 100
    for url in urls:
        assert client.get(url).status_code == 404, url  # as for an episode that does not exist


def test_the_prompt_and_a_default_tool_output_find_nothing(client, attack):
    """The issue's attack: search the earlier run for the agent's prompt, or the numbers its tool gave."""
    episode, earlier, _, started = attack
    prompt_words = started["user_prompt"][-60:]
    result = episode.steps.filter(kind="tool_call").get().text
    for text in (prompt_words, result[:40], started["record_id"]):
        page = client.get(reverse("leaderboard:run", args=[earlier.pk]), {"q": text}).content.decode()
        assert 'href="/episodes/' not in page and "No episode matches" not in page
    same_instance = earlier.episodes.get(instance=episode.instance)
    assert client.get(reverse("leaderboard:episode", args=[same_instance.pk])).status_code == 404


def test_a_visitor_gets_run_level_results_only(client, attack):
    _, earlier, _, _ = attack
    page = client.get(reverse("leaderboard:run", args=[earlier.pk])).content.decode()
    assert 'id="episodes-held-out"' in page and 'href="/episodes/' not in page
    assert "Per-task metrics" in page and "not scored yet" not in page
    detail = client.get(f"/api/runs/{earlier.pk}/").json()
    assert detail["episodes"] == [] and detail["episodes_hidden"] is True and detail["scores_hidden"] is False
    assert detail["metrics"]["T2"]["macro_f1"] is not None  # run-level scores stay public
    assert client.get("/api/instances/", {"suite": "demo"}).status_code == 404
    assert client.get("/api/instances/", {"suite": "demo", "task": "T2"}).status_code == 404
    board = client.get("/api/leaderboard/", {"suite": "demo"}).json()
    assert board["references"] == "held-out" and [row["run_id"] for row in board["rows"]] == [earlier.pk]
    csv = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "demo"}).content.decode()
    assert str(earlier.pk) in csv


def test_a_task_page_of_a_held_out_board_hides_its_breakdowns(client, staff_user, attack):
    page = client.get(reverse("leaderboard:task", args=["T2"]), {"suite": "demo"}).content.decode()
    assert 'id="breakdowns-held-out"' in page and 'data-figure="task-snr"' not in page
    assert 'data-figure="confusion-1"' not in page and 'data-figure="task-scores"' in page
    client.force_login(staff_user)
    page = client.get(reverse("leaderboard:task", args=["T2"]), {"suite": "demo"}).content.decode()
    assert 'data-figure="task-snr"' in page and 'data-figure="confusion-1"' in page


def test_the_agent_is_told_its_answer_was_received_never_its_score(attack):
    episode, _, agent, _ = attack
    gold = episode.instance.reference["label"]
    answer = {"action": "final_answer", "classification": gold, "findings": []}
    done = agent.post(reverse("env:actions", args=[episode.pk]), answer, format="json").json()
    assert done["done"] is True and done["received"] is True and done["scores"] is None
    episode.refresh_from_db()
    assert episode.scores["correct"] is True  # scored all the same, for the run's results


def test_a_running_runs_scores_wait_for_its_end(client, attack):
    """Each change of a running run's score would tell its agent whether its last answer was right."""
    episode, _, agent, _ = attack
    run = episode.run
    answer = {"action": "final_answer", "classification": episode.instance.reference["label"], "findings": []}
    agent.post(reverse("env:actions", args=[episode.pk]), answer, format="json")
    run.refresh_from_db()
    assert run.status == Status.RUNNING  # 29 more episodes to play
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert 'id="scores-held-back"' in page and "Per-task metrics" not in page
    detail = client.get(f"/api/runs/{run.pk}/").json()
    assert detail["scores_hidden"] is True and detail["metrics"] == {} and detail["tasks"] == []
    runs = client.get(reverse("leaderboard:runs")).content.decode()
    assert "shown once it has ended" in runs
    board = client.get("/api/leaderboard/", {"suite": "demo"}).json()
    assert run.pk not in [row["run_id"] for row in board["rows"]]
    lifecycle.cancel_run(run_id=run.pk)
    detail = client.get(f"/api/runs/{run.pk}/").json()
    assert detail["scores_hidden"] is False and detail["metrics"]["T2"]["accuracy"] == pytest.approx(1 / 30)
    assert run.pk in [row["run_id"] for row in client.get("/api/leaderboard/", {"suite": "demo"}).json()["rows"]]


def test_staff_see_everything_of_a_held_out_suite(client, staff_user, attack):
    episode, earlier, _, _ = attack
    client.force_login(staff_user)
    urls = earlier_urls(earlier)
    assert any(url.endswith("signal.json") for url in urls)
    for url in urls[-40:] + [reverse("leaderboard:episode", args=[episode.pk])]:
        assert client.get(url, follow=True).status_code == 200, url  # ?a= alone: to a comparison
    detail = client.get(f"/api/runs/{earlier.pk}/").json()
    assert len(detail["episodes"]) == earlier.episodes.count() == 20 + 30 and detail["episodes_hidden"] is False
    assert all(row["score"] is not None for row in detail["episodes"])
    instances = client.get("/api/instances/", {"suite": "demo", "page_size": 500}).json()["results"]
    assert all("reference" in instance for instance in instances)
    assert client.get(f"/api/runs/{episode.run.pk}/").json()["scores_hidden"] is False


def test_a_player_of_a_held_out_suite_gets_no_result(client, django_user_model, held_out):
    client.force_login(make_player(django_user_model, "ada"))
    episode = start(client, "T1")
    answer = {"action": "final_answer", "answer": episode.instance.reference["answer"]}
    done = client.post(reverse("play:action", args=[episode.pk]), answer, content_type="application/json").json()
    assert done["done"] is True and done["scores"] is None
    assert done["episode_url"] == reverse("play:index") + "#finished"
    assert client.get(reverse("play:episode", args=[episode.pk])).url == reverse("play:index") + "#finished"
    assert client.get(reverse("leaderboard:episode", args=[episode.pk])).status_code == 404
    index = client.get(reverse("play:index")).content.decode()
    assert "answer received" in index and reverse("leaderboard:episode", args=[episode.pk]) not in index


def test_public_suites_say_their_answer_keys_are_public(client):
    import_demo("open")
    page = client.get(reverse("leaderboard:index")).content.decode()
    assert 'data-references="public"' in page and "answer keys are public" in page
    assert client.get("/api/instances/", {"suite": "open"}).status_code == 200


def test_a_visitor_lists_a_public_suites_instances_in_no_release_order(client):
    """The release's order follows the labels in some tasks; a visitor gets them by their random record id."""
    import_demo("open")
    listed = client.get("/api/instances/", {"suite": "open", "task": "T3", "page_size": 500}).json()["results"]
    ids = [instance["record_id"] for instance in listed]
    assert ids == sorted(ids) and len(ids) > 10
    by_position = list(Instance.objects.filter(suite__name="open", task__code="T3").order_by("position")
                       .values_list("record_id", flat=True))
    assert ids != by_position


@pytest.mark.slow
def test_the_served_site_keeps_a_held_out_suite_from_a_visitor(served_database, tmp_path):
    """The attack replayed over HTTP against gunicorn with DEBUG off: 404 wherever an episode or instance was."""
    suite = import_demo()
    set_references(suite, "held-out")
    earlier = play_heuristic(suite, ["T1"])
    episode = earlier.episodes.first()
    urls = {url: 404 for url in earlier_urls(earlier)[:12]}
    urls |= {"/api/instances/?suite=demo": 404, f"/api/runs/{earlier.pk}/": 200, "/api/leaderboard/?suite=demo": 200}
    log = tmp_path / "gunicorn.log"
    answers = {}
    with gunicorn(served_database, log=log) as address:
        for url in urls:
            connection = http.client.HTTPConnection(address, timeout=60)
            connection.request("GET", url)
            response = connection.getresponse()
            answers[url] = (response.status, response.read().decode())
            connection.close()
    assert {url: status for url, (status, _) in answers.items()} == urls
    run_detail = answers[f"/api/runs/{earlier.pk}/"][1]
    assert '"episodes":[]' in run_detail and episode.instance.record_id not in run_detail
    assert "Traceback" not in log.read_text()
