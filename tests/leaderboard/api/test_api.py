"""The REST API: documented shapes, the paper's numbers, read-only access, hidden fields, paging, throttling."""
from types import SimpleNamespace

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient
from rest_framework.throttling import AnonRateThrottle

from leaderboard.board.published import import_published, read_published
from tests.leaderboard.boards import add_run, model_spec, official_suite

METRIC_KEYS = {
    "T1": {"accuracy"}, "T2": {"macro_f1", "accuracy"}, "T3": {"macro_f1", "accuracy"},
    "T4": {"macro_f1", "accuracy"}, "T5": {"event_f1", "dice_s"}, "T6": {"macro_f1", "cohen_kappa"},
}  # fmt: skip
PAPER_FRONTIER = {"ERNIE-4.5-VL-424B", "DeepSeek-V4-Flash", "MiMo-V2.5-Pro", "MiniMax-M3", "GPT-5.6-sol"}


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Throttle counts live in the cache; every test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def client():
    return APIClient()


@pytest.fixture
def staff_client(staff_user):
    client = APIClient()
    client.force_authenticate(staff_user)
    return client


@pytest.fixture
def board(db):
    suite = official_suite()
    import_published()
    run = add_run(suite=suite, model=model_spec("Agent"), skill=0.8, steps_per_episode=5)
    return SimpleNamespace(suite=suite, run=run)


def test_the_leaderboard_has_the_documented_row_shape(client, board):
    response = client.get(reverse("api:leaderboard"), {"suite": "eegagentbench"})
    assert response.status_code == 200
    data = response.json()
    assert data["suite"] == "eegagentbench" and data["is_synthetic"] is False
    rows = data["rows"]
    assert {row["source"] for row in rows} == {"run", "published"} and len(rows) == 30
    for row in rows:
        assert {"model", "source", "run_id", "overall", "overall_ci", "metrics", "cost_usd",
                "on_pareto_frontier"} <= row.keys()
        assert {task: set(metrics) for task, metrics in row["metrics"].items()} == METRIC_KEYS
    run = next(row for row in rows if row["source"] == "run")
    assert run["run_id"] == board.run.pk and len(run["overall_ci"]) == 2
    assert run["overall_ci"][0] < run["overall"] < run["overall_ci"][1]
    assert isinstance(run["cost_usd"], float) and isinstance(run["cost_paper_usd"], float)
    assert all(row["overall_ci"] is None and row["run_id"] is None for row in rows if row["source"] == "published")


def test_published_overall_equals_table_2_and_the_frontier_is_the_papers(client, db):
    import_published()
    rows = client.get(reverse("api:leaderboard")).json()["rows"]
    paper = {model.name: model.overall for model in read_published()}
    assert {row["model"]: row["overall"] for row in rows} == paper
    frontier = {row["model"] for row in rows if row["on_pareto_frontier"]}
    assert PAPER_FRONTIER <= frontier and frontier - PAPER_FRONTIER == {"Hy3"}  # see test_selectors
    assert sum(row["cost_usd"] is not None for row in rows) == 19
    gpt = next(row for row in rows if row["model"] == "GPT-5.6-sol")
    assert gpt["cost_usd"] == pytest.approx(723.5) and gpt["rank"] == 1


def test_leaderboard_filters_are_query_parameters(client, board):
    query = {"source": "published", "weights": "open", "family": "GLM"}
    rows = client.get(reverse("api:leaderboard"), query).json()["rows"]
    assert {row["model"] for row in rows} == {"GLM-5.1", "GLM-5.2"}


@pytest.mark.parametrize("query, status", [
    ({"suite": "no-such-board"}, 404),
    ({"source": "paper"}, 400),
    ({"weights": "closed"}, 400),
    ({"suite": "not a slug"}, 400),
])
def test_bad_leaderboard_queries_are_refused(client, db, query, status):
    import_published()
    assert client.get(reverse("api:leaderboard"), query).status_code == status


def _endpoints(board):
    episode = board.run.episodes.first()
    return [
        reverse("api:leaderboard"), reverse("api:runs"), reverse("api:run", args=[board.run.pk]),
        reverse("api:episode", args=[episode.pk]), reverse("api:tasks"),
        reverse("api:instances") + "?suite=eegagentbench",
    ]


def test_anonymous_visitors_may_read_but_not_write(client, board):
    for url in _endpoints(board):
        assert client.get(url).status_code == 200, url
        for method in (client.post, client.put, client.patch, client.delete):
            assert method(url, {}).status_code == 403, (method.__name__, url)


def test_nothing_is_writable_even_for_staff(staff_client, board):
    for url in _endpoints(board):
        assert staff_client.post(url, {}).status_code == 405, url
        assert staff_client.delete(url).status_code == 405, url


def test_runs_are_listed_in_pages_with_their_progress(client, board):
    other = add_run(suite=board.suite, model=model_spec("Second"), complete=0.5, tasks=["T1"])
    data = client.get(reverse("api:runs"), {"page_size": 1}).json()
    assert data["count"] == 2 and len(data["results"]) == 1 and data["next"]
    newest = data["results"][0]
    assert newest["id"] == other.pk and newest["model"] == "Second" and newest["suite"] == "eegagentbench"
    assert newest["progress"] == {"episodes": 38, "pending": 19, "running": 0, "completed": 19, "failed": 0,
                                  "cancelled": 0}
    assert client.get(reverse("api:runs"), {"status": "completed"}).json()["count"] == 1
    assert client.get(reverse("api:runs"), {"status": "finished"}).status_code == 400


def test_a_run_comes_with_its_scores_and_episodes(client, board):
    data = client.get(reverse("api:run", args=[board.run.pk])).json()
    assert data["model"] == "Agent" and data["overall_official"] is True
    assert {task: set(metrics) for task, metrics in data["metrics"].items()} == METRIC_KEYS
    assert [task["task"] for task in data["tasks"]] == ["T1", "T2", "T3", "T4", "T5", "T6"]
    assert len(data["episodes"]) == 1072 and data["progress"]["completed"] == 1072
    episode = data["episodes"][0]
    assert {"id", "instance", "task", "outcome", "score"} <= episode.keys()
    assert episode["instance"].startswith("rec_") and episode["outcome"] == "final_answer"
    assert episode["score"] in (0.0, 1.0)


def test_an_unknown_run_or_episode_is_not_found(client, db):
    assert client.get(reverse("api:run", args=[999])).status_code == 404
    assert client.get(reverse("api:episode", args=[999])).status_code == 404


def test_an_episode_comes_with_its_steps(client, board):
    episode = board.run.episodes.filter(instance__task__code="T2").first()
    data = client.get(reverse("api:episode", args=[episode.pk])).json()
    assert data["task"] == "T2" and data["instance"] == episode.record_id
    assert [step["index"] for step in data["steps"]] == list(range(5))
    assert [step["kind"] for step in data["steps"]][:3] == ["prompt", "agent_message", "tool_call"]
    assert data["prediction"] == episode.prediction


@pytest.mark.parametrize("public", [True, False])
def test_episode_scores_follow_the_public_references_setting(client, staff_client, board, settings, public):
    settings.EEGAB_PUBLIC_REFERENCES = public
    episode = board.run.episodes.filter(instance__task__code="T3").first()
    url = reverse("api:episode", args=[episode.pk])
    visitor = client.get(url).json()
    assert ("scores" in visitor) is public and (visitor["score"] is not None) is public
    assert (client.get(reverse("api:run", args=[board.run.pk])).json()["episodes"][0]["score"] is not None) is public
    staff = staff_client.get(url).json()
    assert staff["scores"]["gold"] == episode.instance.reference["label"] and staff["score"] is not None


def test_tasks_are_listed(client, db):
    data = client.get(reverse("api:tasks")).json()
    assert data["count"] == 6
    assert [task["code"] for task in data["results"]] == ["T1", "T2", "T3", "T4", "T5", "T6"]
    assert data["results"][4]["primary_metric"] == "event_f1"


def test_instances_hide_references_from_everyone_but_staff(client, visitor, staff_client, board):
    url = reverse("api:instances")
    anonymous = client.get(url, {"suite": "eegagentbench", "task": "T4"}).json()
    assert anonymous["count"] == 69
    assert "reference" not in anonymous["results"][0] and "scenario_id" not in anonymous["results"][0]
    signed_in = APIClient()
    signed_in.force_authenticate(visitor)
    assert "reference" not in signed_in.get(url, {"suite": "eegagentbench"}).json()["results"][0]
    staff = staff_client.get(url, {"suite": "eegagentbench", "task": "T4"}).json()["results"][0]
    assert staff["reference"] == {"label": "AD"} and staff["scenario_id"].startswith("c4_dementia")


def test_instances_need_a_suite_and_are_paginated(client, board):
    assert client.get(reverse("api:instances")).status_code == 400
    data = client.get(reverse("api:instances"), {"suite": "eegagentbench"}).json()
    assert data["count"] == 1072 and len(data["results"]) == 50
    largest = client.get(reverse("api:instances"), {"suite": "eegagentbench", "page_size": 1000}).json()
    assert len(largest["results"]) == 500


def test_anonymous_requests_are_throttled(client, db, monkeypatch):
    monkeypatch.setattr(AnonRateThrottle, "rate", "3/min", raising=False)
    statuses = [client.get(reverse("api:tasks")).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
