"""What the item pages and ``/api/items/`` list, link and hide for visitors and staff, and their queries.

The ``bench`` suite (tests/leaderboard/conftest.py) has one instance per task: Alpha-1 answers T1 "B"
(right), Beta-2 "C" (wrong); both answer T3 "epileptic" (right); Beta-2 fails T4 and gives no T6 answer.
"""
from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import Instance, Task
from benchmark.releases import set_references
from leaderboard.board.published import import_published
from leaderboard.items.selectors import SOLVED_BY_ALL
from leaderboard.summaries.scoring import refresh_run_summary
from runs.models import Episode
from runs.services import create_run
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db

ROW_KEYS = {"instance", "record_id", "n_runs", "discrimination", "flag"}
NOT_COMPARABLE = {"tool_protocol": "text", "max_tokens": 8192, "temperature": 0.7}


@pytest.fixture(autouse=True)
def fresh_throttles():
    """The API's throttle counts live in the cache; every test starts with none."""
    cache.clear()
    yield
    cache.clear()


def items_url(task: str, **query) -> str:
    return reverse("leaderboard:task_items", args=[task]) + "".join(
        f"{'&' if index else '?'}{name}={value}" for index, (name, value) in enumerate(query.items())
    )


def instance_of(bench, task: str) -> Instance:
    return bench.suite.instances.get(task__code=task)


def text(html: str) -> str:
    """The page's words, tags dropped (inline ones join the words around them) and whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_the_task_page_links_to_its_items_on_the_same_board(client, bench):
    html = client.get(reverse("leaderboard:task", args=["T3"]) + "?suite=bench").content.decode()
    assert f'href="{items_url("T3", suite="bench")}"' in html


def test_the_items_page_gives_each_instance_its_runs_solve_rate_and_flag_and_links_it(client, bench):
    response = client.get(items_url("T1", suite="bench"))
    assert response.status_code == 200
    instance = instance_of(bench, "T1")
    [row] = response.context["page"].object_list
    assert row == {"instance": instance.pk, "record_id": instance.record_id, "n_runs": 2, "solve_rate": 0.5,
                   "discrimination": None, "flag": None}
    html = response.content.decode()
    assert f'href="{reverse("leaderboard:task_item", args=["T1", instance.pk])}"' in html
    assert "2 runs counted." in text(html) and "published row" not in html
    assert re.search(r'data-field="solve_rate">0\.500<', html)


def test_the_items_page_filters_by_flag_and_sorts_by_a_header(client, bench):
    flagged = client.get(items_url("T3", suite="bench", flag=SOLVED_BY_ALL))
    assert [row["flag"] for row in flagged.context["page"].object_list] == [SOLVED_BY_ALL]
    assert "solved by every run" in flagged.content.decode()
    none = client.get(items_url("T3", suite="bench", flag="solved_by_none"))
    assert list(none.context["page"].object_list) == [] and "No instance has this flag." in none.content.decode()
    by_runs = client.get(items_url("T3", suite="bench", sort="n_runs")).content.decode()
    assert 'aria-sort="ascending"' in by_runs and "sort=-n_runs" in by_runs
    assert client.get(items_url("T3", suite="bench", sort="position")).context["sort"] == "discrimination"


def test_the_instance_page_lists_every_runs_episode_with_answer_outcome_score_and_link(client, bench):
    instance = instance_of(bench, "T1")
    response = client.get(reverse("leaderboard:task_item", args=["T1", instance.pk]))
    assert response.status_code == 200
    rows = {row["episode"].run_id: row for row in response.context["episodes"]}
    assert {run: (row["answer"], row["outcome"], row["score"]) for run, row in rows.items()} == {
        bench.alpha.pk: ("B", "correct", "1.000"), bench.beta.pk: ("C", "wrong", "0.000"),
    }
    html = response.content.decode()
    for run in (bench.alpha, bench.beta):
        episode = bench.episode(run, "T1")
        assert f'href="{reverse("leaderboard:episode", args=[episode.pk])}"' in html
        assert f'href="{reverse("leaderboard:run", args=[run.pk])}"' in html
    assert instance.record_id in html and f'{reverse("leaderboard:task_items", args=["T1"])}?suite=bench' in html


def test_the_instance_page_says_how_each_episode_ended(client, bench):
    failed = client.get(reverse("leaderboard:task_item", args=["T4", instance_of(bench, "T4").pk]))
    assert {row["episode"].run_id: (row["answer"], row["outcome"]) for row in failed.context["episodes"]} == {
        bench.alpha.pk: ("AD", "correct"), bench.beta.pk: ("", "error"),
    }
    night = client.get(reverse("leaderboard:task_item", args=["T6", instance_of(bench, "T6").pk]))
    answers = {row["episode"].run_id: row["answer"] for row in night.context["episodes"]}
    assert answers == {bench.alpha.pk: "W 25 % · N2 75 %", bench.beta.pk: "no answer"}
    seizure = client.get(reverse("leaderboard:task_item", args=["T5", instance_of(bench, "T5").pk]))
    answers = {row["episode"].run_id: row["answer"] for row in seizure.context["episodes"]}
    assert answers == {bench.alpha.pk: "1 seizure: 21–33 s", bench.beta.pk: "2 seizures: 2–8 s, 40–45 s"}


def test_an_instance_of_another_task_is_not_found(client, bench):
    assert client.get(reverse("leaderboard:task_item", args=["T2", instance_of(bench, "T1").pk])).status_code == 404


def test_a_visitor_never_sees_an_episode_that_has_not_ended(client, bench, staff_user):
    running = create_run(suite=bench.suite, model=bench.alpha.model, tasks=["T1"], name="running")
    pending = running.episodes.get()
    url = reverse("leaderboard:task_item", args=["T1", instance_of(bench, "T1").pk])
    assert pending.pk not in {row["episode"].pk for row in client.get(url).context["episodes"]}
    client.force_login(staff_user)
    listed = {row["episode"].pk: row["outcome"] for row in client.get(url).context["episodes"]}
    assert listed[pending.pk] == "pending"


def test_without_public_references_a_visitor_sees_no_figure_outcome_or_score_and_staff_see_them(
    client, bench, settings, staff_user
):
    settings.EEGAB_PUBLIC_REFERENCES = False
    items = client.get(items_url("T3", suite="bench", sort="-score", flag=SOLVED_BY_ALL))
    [row] = items.context["page"].object_list
    assert (row["n_runs"], row["solve_rate"], row["discrimination"], row["flag"]) == (2, None, None, None)
    html = items.content.decode()
    assert 'id="items-hidden"' in html and "Solve rate" not in html and "solved by every run" not in html
    instance = instance_of(bench, "T1")
    page = client.get(reverse("leaderboard:task_item", args=["T1", instance.pk]))
    assert {row["outcome"] for row in page.context["episodes"]} == {"answered"}
    assert {row["score"] for row in page.context["episodes"]} == {""}
    assert "badge correct" not in page.content.decode() and "<th class=\"num\">Score</th>" not in page.content.decode()
    api = APIClient().get(reverse("api:items"), {"suite": "bench", "task": "T3", "flag": SOLVED_BY_ALL}).json()
    assert api["scores_hidden"] is True and (api["sort"], api["flag"]) == (None, None)
    assert [(row["solve_rate"], row["discrimination"], row["flag"]) for row in api["results"]] == [(None, None, None)]

    client.force_login(staff_user)
    [row] = client.get(items_url("T3", suite="bench")).context["page"].object_list
    assert (row["solve_rate"], row["flag"]) == (1.0, SOLVED_BY_ALL)
    staff_rows = client.get(reverse("leaderboard:task_item", args=["T1", instance.pk])).context["episodes"]
    assert {row["outcome"] for row in staff_rows} == {"correct", "wrong"}


def test_a_held_out_suite_gives_a_visitor_404_and_staff_every_item_page(client, bench, staff_user):
    set_references(bench.suite, "held-out")
    instance = instance_of(bench, "T1")
    urls = [items_url("T1", suite="bench"), reverse("leaderboard:task_item", args=["T1", instance.pk]),
            reverse("api:items") + "?suite=bench&task=T1"]
    for url in urls:
        assert client.get(url).status_code == 404, url
    default = client.get(reverse("leaderboard:task_items", args=["T1"]))
    assert default.status_code == 200 and default.context["suite"] is None
    client.force_login(staff_user)
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert client.get(reverse("leaderboard:task_items", args=["T1"])).context["suite"] == "bench"


def test_the_api_answers_a_page_of_rows_with_the_selection(bench):
    api = APIClient()
    data = api.get(reverse("api:items"), {"suite": "bench", "task": "T1"}).json()
    instance = instance_of(bench, "T1")
    assert data == {
        "suite": "bench", "task": "T1", "value": "solve_rate", "runs": "all",
        "run_ids": [bench.alpha.pk, bench.beta.pk], "n_published_rows": 0, "sort": "discrimination", "flag": None,
        "scores_hidden": False, "count": 1, "next": None, "previous": None,
        "results": [{"instance": instance.pk, "record_id": instance.record_id, "n_runs": 2, "solve_rate": 0.5,
                     "discrimination": None, "flag": None}],
    }
    t5 = api.get(reverse("api:items"), {"suite": "bench", "task": "T5"}).json()
    assert t5["value"] == "mean_score" and set(t5["results"][0]) == ROW_KEYS | {"mean_score"}
    assert "items" in api.get(reverse("api:root")).json()
    assert api.post(reverse("api:items"), {}).status_code == 403


@pytest.mark.parametrize("query, status", [
    ({"suite": "bench"}, 400),
    ({"suite": "bench", "task": "T1", "sort": "position"}, 400),
    ({"suite": "bench", "task": "T1", "flag": "suspect"}, 400),
    ({"suite": "bench", "task": "T1", "runs": "some"}, 400),
    ({"suite": "no-such-suite", "task": "T1"}, 404),
])
def test_bad_item_queries_are_refused(bench, query, status):
    assert APIClient().get(reverse("api:items"), query).status_code == status


def test_on_the_papers_board_the_page_counts_the_comparable_runs_and_says_why_the_papers_rows_are_not(client):
    import_published()
    suite = official_suite()
    comparable = add_run(suite=suite, model=model_spec("Comparable"), tasks=("T1",))
    warm = add_run(suite=suite, model=model_spec("Warm"), tasks=("T1",), settings=NOT_COMPARABLE, seed=1)
    for run in (comparable, warm):
        refresh_run_summary(run)
    page = text(client.get(items_url("T1", suite=suite.name)).content.decode())
    assert "1 run counted: those comparable with the paper's (count every run)." in page
    assert "The paper's 29 published rows give no per-instance results and are not counted." in page
    every = client.get(items_url("T1", suite=suite.name, runs="all"))
    assert "2 runs counted: every run on this board" in text(every.content.decode())
    assert {row["n_runs"] for row in every.context["page"].object_list} == {2}
    data = APIClient().get(reverse("api:items"), {"suite": suite.name, "task": "T1"}).json()
    assert (data["runs"], data["run_ids"], data["n_published_rows"]) == ("comparable", [comparable.pk], 29)


def test_a_board_of_the_papers_rows_alone_says_they_give_no_per_instance_results(client, bench):
    import_published()
    response = client.get(items_url("T2", suite="eegagentbench"))
    assert response.status_code == 200
    assert "This board holds the paper's 29 published rows only, which give no per-instance results" in text(
        response.content.decode()
    )


@pytest.mark.parametrize("n_runs", [2, 5])
def test_the_pages_and_the_api_read_a_fixed_number_of_queries(client, n_runs, django_assert_max_num_queries):
    Task.objects.ensure_official()
    suite = official_suite(name="queries-suite")
    for index in range(n_runs):
        refresh_run_summary(add_run(suite=suite, model=model_spec(f"Model-{index}"), tasks=("T2",), seed=index))
    instance = suite.instances.filter(task__code="T2").first()
    with django_assert_max_num_queries(8):
        assert client.get(items_url("T2", suite=suite.name)).status_code == 200
    with django_assert_max_num_queries(6):
        assert APIClient().get(reverse("api:items"), {"suite": suite.name, "task": "T2"}).status_code == 200
    with django_assert_max_num_queries(2):
        response = client.get(reverse("leaderboard:task_item", args=["T2", instance.pk]))
    assert len(response.context["episodes"]) == n_runs == Episode.objects.filter(instance=instance).count()
