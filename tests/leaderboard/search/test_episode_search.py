"""The search across runs (/episodes/, /api/episodes/): each filter finds its episodes, only those a visitor may see."""
import csv
import io
import json

import pytest
from django.test import override_settings
from django.urls import reverse

from benchmark.models import Suite
from leaderboard.search import export as search_export
from leaderboard.search.export import COLUMNS
from runs.models import Episode, Status, Step
from tests.leaderboard.boards import add_run, model_spec, official_suite

ALPHA, BETA = "Alpha-1", "Beta-2"
SIGNAL = ("T2", "T3", "T4", "T5", "T6")
ALL = {(model, task) for model in (ALPHA, BETA) for task in ("T1", *SIGNAL)}


def found(client, **query) -> set[tuple[str, str]]:
    """The episodes ``/api/episodes/`` lists for ``query``, as (model, task)."""
    response = client.get(reverse("api:episodes"), {**query, "page_size": 500}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200, response.content
    return {(row["model"], row["task"]) for row in response.json()["results"]}


def set_by_hand(bench, model_task: tuple[str, str], **fields) -> Episode:
    run = bench.alpha if model_task[0] == ALPHA else bench.beta
    episode = bench.episode(run, model_task[1])
    Episode.objects.filter(pk=episode.pk).update(**fields)
    return episode


@pytest.fixture
def marked(bench):
    """The bench with failure modes, coverage and a second call of a tool set by hand on some episodes."""
    set_by_hand(bench, (ALPHA, "T2"), failure_codes=" repeated_call ",
                failure_modes=[{"code": "repeated_call", "steps": [1, 3]}])
    set_by_hand(bench, (BETA, "T5"), failure_codes=" false_alarm low_coverage ", evidence_coverage=0.2,
                failure_modes=[{"code": "false_alarm", "steps": [5]}, {"code": "low_coverage", "steps": [1]}])
    set_by_hand(bench, (ALPHA, "T5"), evidence_coverage=0.9)
    twice = bench.episode(bench.alpha, "T3")
    Step.objects.create(episode=twice, index=twice.steps.count(), kind=Step.Kind.TOOL_CALL,
                        tool_name="get_channel_list")
    return bench


@pytest.mark.parametrize("query, expected", [
    ({}, ALL),
    ({"suite": "bench"}, ALL),
    ({"task": "T3"}, {(ALPHA, "T3"), (BETA, "T3")}),
    ({"model": BETA}, {(BETA, task) for task in ("T1", *SIGNAL)}),
    ({"outcome": "correct"}, {(ALPHA, task) for task in ("T1", "T2", "T3", "T4", "T5")} | {(BETA, "T3"), (BETA, "T5")}),
    ({"outcome": "wrong"}, {(ALPHA, "T6"), (BETA, "T1"), (BETA, "T2")}),
    ({"outcome": "missing"}, {(BETA, "T6")}),
    ({"outcome": "error"}, {(BETA, "T4")}),
    ({"ended_by": "provider_error"}, {(BETA, "T4")}),
    ({"ended_by": "turn_limit"}, {(BETA, "T6")}),
    ({"failure_mode": "repeated_call"}, {(ALPHA, "T2")}),
    ({"failure_mode": "low_coverage"}, {(BETA, "T5")}),
    ({"failure_mode": "false_alarm"}, {(BETA, "T5")}),
    ({"failure_mode": "no_tool_call"}, set()),
    ({"tool": "get_channel_list"}, {(model, task) for model in (ALPHA, BETA) for task in SIGNAL}),
    ({"tool": "get_channel_list", "tool_min": 2}, {(ALPHA, "T3")}),
    ({"tool": "compute_psd"}, set()),
    ({"tool_calls_max": 0}, {(ALPHA, "T1"), (BETA, "T1")}),
    ({"tool_calls_min": 2, "tool_calls_max": 2}, {(model, task) for model in (ALPHA, BETA) for task in SIGNAL}),
    ({"turns_max": 1}, {(ALPHA, "T1"), (BETA, "T1")}),
    ({"turns_min": 3}, {(model, task) for model in (ALPHA, BETA) for task in SIGNAL}),
    ({"tokens_max": 0}, {(BETA, "T4")}),
    ({"tokens_min": 3640, "tokens_max": 3640}, ALL - {(BETA, "T4")}),
    ({"coverage_min": 0.5}, {(ALPHA, "T5")}),
    ({"coverage_max": 0.5}, {(BETA, "T5")}),
    ({"coverage_min": 0.1, "coverage_max": 1}, {(ALPHA, "T5"), (BETA, "T5")}),
    ({"q": "will call get_channel"}, {(model, task) for model in (ALPHA, BETA) for task in SIGNAL}),
    ({"q": "look at a few channels"}, {(model, task) for model in (ALPHA, BETA) for task in SIGNAL}),  # reasoning
    ({"q": "Final answer."}, ALL - {(BETA, "T4"), (BETA, "T6")}),
    ({"q": "EEG1"}, set()),  # a tool's output is not the model's reply
    ({"q": "ServiceUnavailable"}, set()),  # errors are searched for staff only
    ({"task": "T5", "model": ALPHA, "coverage_min": 0.5, "tool": "compute_windowed_features"}, {(ALPHA, "T5")}),
])  # fmt: skip
def test_each_filter_finds_what_it_should_and_nothing_else(client, marked, query, expected):
    assert found(client, **query) == expected


def test_the_run_filter_finds_the_runs_episodes_only(client, bench):
    assert found(client, run=bench.beta.pk) == {(BETA, task) for task in ("T1", *SIGNAL)}
    assert found(client, run=bench.beta.pk + bench.alpha.pk + 100) == set()


def test_staff_search_errors_too(client, bench, staff_user):
    client.force_login(staff_user)
    assert found(client, q="ServiceUnavailable") == {(BETA, "T4")}


@pytest.mark.parametrize("sort, first, last", [
    ("", "newest", "oldest"),
    ("-tokens", None, (BETA, "T4")),
    ("tokens", (BETA, "T4"), None),
    ("-coverage", (ALPHA, "T5"), None),
    ("coverage", (BETA, "T5"), None),
    ("-n_tool_calls", None, (ALPHA, "T1")),  # ties: the later episode first
    ("n_tool_calls", (ALPHA, "T1"), None),
])  # fmt: skip
def test_sorts(client, marked, sort, first, last):
    rows = client.get(reverse("api:episodes"), {"sort": sort, "page_size": 500}).json()["results"]
    keys = [(row["model"], row["task"]) for row in rows]
    if first == "newest":
        ids = [row["id"] for row in rows]
        finished = dict(Episode.objects.values_list("id", "finished_at"))
        assert [finished[pk] for pk in ids] == sorted((finished[pk] for pk in ids), reverse=True)
        return
    if first:
        assert keys[0] == first
    if last:
        assert keys[-1] == last


def test_running_and_held_out_episodes_are_listed_for_staff_only(client, bench, staff_user):
    running = set_by_hand(bench, (ALPHA, "T1"), status=Status.RUNNING, finished_at=None)
    assert found(client) == ALL - {(ALPHA, "T1")}
    assert f'href="/episodes/{running.pk}/"' not in client.get(reverse("leaderboard:episodes")).content.decode()
    Suite.objects.filter(pk=bench.suite.pk).update(references=Suite.References.HELD_OUT)
    assert found(client) == set()
    assert client.get(reverse("api:episodes"), {"suite": "bench"}).status_code == 404  # as for no such suite
    assert client.get(reverse("leaderboard:episodes"), {"suite": "bench"}).status_code == 400
    held_out = bench.episode(bench.beta, "T1")
    assert f'href="/episodes/{held_out.pk}/"' not in client.get(reverse("leaderboard:episodes")).content.decode()
    client.force_login(staff_user)
    assert found(client) == ALL
    assert found(client, suite="bench", outcome="correct", task="T1") == set()  # the running one has no outcome yet
    page = client.get(reverse("leaderboard:episodes")).content.decode()
    assert f'href="/episodes/{running.pk}/"' in page


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_outcomes_and_modes_telling_the_reference_are_hidden_without_references(client, marked, staff_user):
    url = reverse("api:episodes")
    assert client.get(url, {"outcome": "correct"}).status_code == 400
    assert client.get(url, {"failure_mode": "false_alarm"}).status_code == 400
    rows = {(row["model"], row["task"]): row for row in client.get(url, {"page_size": 500}).json()["results"]}
    assert {row["outcome"] for row in rows.values()} == {"answered", "missing", "error"}
    assert rows[(BETA, "T5")]["failure_modes"] == ["low_coverage"]
    page = client.get(reverse("leaderboard:episodes"), {"outcome": "wrong"})
    assert page.status_code == 400 and "outcome" in page.context["form"].errors
    assert "false_alarm" not in client.get(reverse("leaderboard:episodes")).content.decode()
    client.force_login(staff_user)
    assert found(client, outcome="wrong") == {(ALPHA, "T6"), (BETA, "T1"), (BETA, "T2")}
    assert found(client, failure_mode="false_alarm") == {(BETA, "T5")}


def test_the_api_gives_each_row_its_fields(client, marked):
    response = client.get(reverse("api:episodes"), {"task": "T5", "model": BETA})
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"} and body["count"] == 1
    row = body["results"][0]
    episode = marked.episode(marked.beta, "T5")
    assert row == {
        "id": episode.pk, "run": marked.beta.pk, "model": BETA, "suite": "bench", "task": "T5",
        "record_id": episode.record_id, "outcome": "correct", "ended_by": "final_answer",
        "failure_modes": ["false_alarm", "low_coverage"], "n_turns": 3, "n_tool_calls": 2, "tokens": 3640,
        "evidence_coverage": 0.2, "finished_at": row["finished_at"],
    }
    assert row["finished_at"]


@pytest.mark.parametrize("query, field", [
    ({"task": "T9"}, "task"),
    ({"model": "Nobody-9"}, "model"),
    ({"run": "abc"}, "run"),
    ({"outcome": "great"}, "outcome"),
    ({"ended_by": "boredom"}, "ended_by"),
    ({"failure_mode": "bad_luck"}, "failure_mode"),
    ({"tool": "compute_magic"}, "tool"),
    ({"tool": "compute_psd", "tool_min": 0}, "tool_min"),
    ({"tool_min": 2}, "tool_min"),
    ({"tool_calls_min": -1}, "tool_calls_min"),
    ({"turns_min": 5, "turns_max": 2}, "turns_max"),
    ({"tokens_max": "many"}, "tokens_max"),
    ({"tokens_max": "9" * 25}, "tokens_max"),  # beyond what the database compares: refused, not an error page
    ({"run": "9" * 25}, "run"),
    ({"coverage_min": 1.5}, "coverage_min"),
    ({"sort": "cost"}, "sort"),
])  # fmt: skip
def test_a_bad_value_is_a_400_naming_the_field_and_a_form_error_on_the_page(client, bench, query, field):
    response = client.get(reverse("api:episodes"), query)
    assert response.status_code == 400
    assert list(response.json()) == [field] and response.json()[field][0]
    page = client.get(reverse("leaderboard:episodes"), query)
    assert page.status_code == 400 and list(page.context["form"].errors) == [field]
    assert 'class="errorlist' in page.content.decode()


def test_an_unknown_suite_is_a_404(client, bench):
    assert client.get(reverse("api:episodes"), {"suite": "nowhere"}).status_code == 404


def test_the_page_lists_episodes_with_links_and_keeps_the_filters_in_its_url(client, marked):
    response = client.get(reverse("leaderboard:episodes"), {"task": "T5", "tool": "get_channel_list"})
    html = response.content.decode()
    assert response.status_code == 200 and response.context["page"].paginator.count == 2
    for run in (marked.alpha, marked.beta):
        episode = marked.episode(run, "T5")
        assert f'href="{reverse("leaderboard:episode", args=[episode.pk])}"' in html
        assert f'href="{reverse("leaderboard:run", args=[run.pk])}"' in html
    assert 'value="T5" selected' in html and "api/episodes/?task=T5&amp;tool=get_channel_list" in html
    assert f'href="{reverse("leaderboard:episodes")}"' in client.get(reverse("leaderboard:index")).content.decode()


def test_the_page_shows_fifty_rows_a_page_and_keeps_the_filters_in_the_pager(client, db):
    suite = official_suite(name="paging")
    add_run(suite=suite, model=model_spec("Pager-1"), tasks=("T3",))
    first = client.get(reverse("leaderboard:episodes"), {"task": "T3"})
    assert len(first.context["rows"]) == 50 and first.context["page"].paginator.count == 188
    assert "?task=T3&amp;page=2" in first.content.decode()
    last = client.get(reverse("leaderboard:episodes"), {"task": "T3", "page": 4})
    assert len(last.context["rows"]) == 188 - 150


@pytest.mark.parametrize("n_runs", [2, 5])
def test_a_page_costs_the_same_queries_however_many_runs(client, db, django_assert_max_num_queries, n_runs):
    suite = official_suite(name="queries")
    for index in range(n_runs):
        run = add_run(suite=suite, model=model_spec(f"Model-{index}"), tasks=("T1", "T5"), seed=index,
                      steps_per_episode=4)
        Episode.objects.filter(run=run, instance__task__code="T5").update(
            failure_codes=" low_coverage ", failure_modes=[{"code": "low_coverage", "steps": [1]}],
            evidence_coverage=0.1)
    with django_assert_max_num_queries(PAGE_QUERIES):
        assert client.get(reverse("leaderboard:episodes"), {"sort": "-coverage"}).status_code == 200
    with django_assert_max_num_queries(API_QUERIES):
        response = client.get(reverse("api:episodes"), {"tool": "compute_psd", "q": "a", "page_size": 500})
        assert response.status_code == 200
    with django_assert_max_num_queries(API_QUERIES):
        assert client.get(reverse("api:episodes"), {"page_size": 500}).json()["count"] == n_runs * (38 + 280)


PAGE_QUERIES = 4  # the form's suites and models, the count, the page
API_QUERIES = 4  # the same: the query's suites and models, the count, the page


# ── the exports ──────────────────────────────────────────────────────────────────────────────


def exported(client, fmt: str, **query):
    response = client.get(reverse("leaderboard:episodes_export", args=[fmt]), query)
    assert response.status_code == 200 and response.streaming
    text = b"".join(response.streaming_content).decode()
    assert response["Content-Disposition"] == f'attachment; filename="eegagentbench-episodes.{fmt}"'
    return response, text


def api_rows(client, **query) -> list[dict]:
    return client.get(reverse("api:episodes"), {**query, "page_size": 500}).json()["results"]


@pytest.mark.parametrize("query", [{}, {"task": "T5"}, {"failure_mode": "repeated_call"}, {"sort": "-coverage"}])
def test_the_jsonl_export_holds_the_searchs_rows_in_its_order_with_each_episodes_address(client, marked, query):
    response, text = exported(client, "jsonl", **query)
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    lines = [json.loads(line) for line in text.splitlines()]
    assert text.endswith("\n") and len(lines) == len(api_rows(client, **query))
    for line, row in zip(lines, api_rows(client, **query), strict=True):
        assert list(line) == list(COLUMNS)
        assert line == row | {"url": f"http://testserver/episodes/{row['id']}/"}


def test_the_csv_export_holds_the_same_rows_with_modes_space_separated(client, marked):
    response, text = exported(client, "csv", task="T5")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    header, *lines = list(csv.reader(io.StringIO(text)))
    assert header == list(COLUMNS)
    rows = api_rows(client, task="T5")
    assert [int(line[0]) for line in lines] == [row["id"] for row in rows]
    beta = dict(zip(header, lines[[row["model"] for row in rows].index(BETA)], strict=True))
    assert beta["failure_modes"] == "false_alarm low_coverage" and beta["evidence_coverage"] == "0.2"
    assert beta["outcome"] == "correct" and beta["url"] == f"http://testserver/episodes/{beta['id']}/"
    alpha_t3 = exported(client, "csv", task="T3", model=ALPHA)[1].splitlines()[1].split(",")
    assert alpha_t3[COLUMNS.index("failure_modes")] == alpha_t3[COLUMNS.index("evidence_coverage")] == ""


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_an_export_shows_what_the_search_shows_this_visitor(client, marked, staff_user):
    Suite.objects.create(name="hidden", release=marked.suite.release, references=Suite.References.HELD_OUT)
    _, text = exported(client, "jsonl")
    lines = [json.loads(line) for line in text.splitlines()]
    assert {line["outcome"] for line in lines} <= {"answered", "missing", "error"}
    assert "false_alarm" not in text and {"low_coverage"} in [set(line["failure_modes"]) for line in lines]
    assert client.get(reverse("leaderboard:episodes_export", args=["csv"]), {"failure_mode": "false_alarm"}
                      ).status_code == 400
    Suite.objects.filter(pk=marked.suite.pk).update(references=Suite.References.HELD_OUT)
    assert exported(client, "jsonl")[1] == "" and exported(client, "csv")[1] == ",".join(COLUMNS) + "\n"
    client.force_login(staff_user)
    assert "false_alarm" in exported(client, "jsonl")[1]


def test_a_bad_filter_is_a_400_naming_each_field(client, bench):
    response = client.get(reverse("leaderboard:episodes_export", args=["csv"]),
                          {"task": "T9", "coverage_min": 2})
    assert response.status_code == 400 and response["Content-Type"] == "text/plain; charset=utf-8"
    assert [line.split(":")[0] for line in response.content.decode().splitlines()] == ["task", "coverage_min"]
    assert client.get("/episodes/export.xlsx").status_code == 404


def test_the_page_links_its_exports_with_its_filters_and_says_when_they_stop(client, marked, monkeypatch):
    html = client.get(reverse("leaderboard:episodes"), {"task": "T5", "sort": "tokens"}).content.decode()
    for fmt in ("csv", "jsonl"):
        assert f'href="/episodes/export.{fmt}?task=T5&amp;sort=tokens" download' in html
    assert "the first" not in html
    monkeypatch.setattr(search_export, "MAX_EXPORTED", 3)
    html = client.get(reverse("leaderboard:episodes")).content.decode()
    assert "the first 3 of these episodes" in html
    assert len(exported(client, "jsonl")[1].splitlines()) == 3
