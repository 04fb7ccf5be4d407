"""Two runs compared on the page and in the API, every figure checked against the episodes themselves.

The expected figures are computed here from the runs' episodes (their scores as the episode scorer
stored them), not from the summaries the page reads: correctness and McNemar's test by scipy for
T1-T4, nights' macro-F1 for T6, subject-summed event counts for T5, and the leaderboard's own rows
for A's and B's scores.
"""
from collections import defaultdict

import numpy as np
import pytest
from django.test import override_settings
from django.urls import reverse
from scipy.stats import binomtest

from benchmark.models import Suite
from leaderboard.board import ranking
from runs.models import Episode, Status
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db
URL = reverse("leaderboard:compare_runs")
API = reverse("api:compare_runs")


@pytest.fixture
def two_runs():
    suite = official_suite(name="paired")
    strong = add_run(suite=suite, model=model_spec("Strong"), skill=0.85, seed=1)
    weak = add_run(suite=suite, model=model_spec("Weak"), skill=0.6, seed=2)
    return suite, weak, strong


def episodes_by_instance(run) -> dict[str, dict[int, dict]]:
    by_task: dict[str, dict[int, dict]] = defaultdict(dict)
    for instance, task, status, scores, subject in Episode.objects.filter(run=run).values_list(
        "instance_id", "instance__task__code", "status", "scores", "instance__subject"
    ):
        by_task[task][instance] = {"completed": status == Status.COMPLETED, "scores": scores or {}, "subject": subject}
    return by_task


def subject_event_f1(episodes: dict[int, dict]) -> float:
    sums = defaultdict(lambda: [0, 0, 0])
    for episode in episodes.values():
        for index, key in enumerate(("tp", "fp", "fn")):
            sums[episode["subject"]][index] += episode["scores"].get(key, 0)
    defined = [2 * tp / (2 * tp + fp + fn) for tp, fp, fn in sums.values() if 2 * tp + fp + fn]
    return sum(defined) / len(defined) if defined else 0.0


def test_the_page_gives_each_task_its_paired_figures(client, two_runs):
    suite, weak, strong = two_runs
    response = client.get(URL, {"a": weak.pk, "b": strong.pk})
    assert response.status_code == 200
    tasks = {row.task: row for row in response.context["tasks"]}
    assert sorted(tasks) == ["T1", "T2", "T3", "T4", "T5", "T6"]
    board = {row.run_id: row for row in ranking.leaderboard(suite="paired").rows}
    a_episodes, b_episodes = episodes_by_instance(weak), episodes_by_instance(strong)
    for code, row in tasks.items():
        assert (row.a, row.b) == (board[weak.pk].primary(code), board[strong.pk].primary(code))
        assert row.ci[0] <= row.difference <= row.ci[1]
    for code in ("T1", "T2", "T3", "T4"):
        a_right = {i for i, e in a_episodes[code].items() if e["completed"] and e["scores"].get("correct")}
        b_right = {i for i, e in b_episodes[code].items() if e["completed"] and e["scores"].get("correct")}
        improved, regressed = len(b_right - a_right), len(a_right - b_right)
        assert (tasks[code].improved, tasks[code].regressed) == (improved, regressed)
        assert tasks[code].p_value == pytest.approx(binomtest(min(improved, regressed), improved + regressed).pvalue)
        assert tasks[code].n_units == len(a_episodes[code]) and tasks[code].test == "McNemar (exact)"
    nights = [b_episodes["T6"][i]["scores"]["macro_f1"] - a_episodes["T6"][i]["scores"]["macro_f1"]
              for i in a_episodes["T6"]]
    assert tasks["T6"].difference == pytest.approx(np.mean(nights))
    changed = (sum(d > 1e-9 for d in nights), sum(d < -1e-9 for d in nights))
    assert (tasks["T6"].improved, tasks["T6"].regressed) == changed
    expected_t5 = subject_event_f1(b_episodes["T5"]) - subject_event_f1(a_episodes["T5"])
    assert tasks["T5"].difference == pytest.approx(expected_t5)
    assert tasks["T5"].unit == "subjects" and tasks["T5"].n_units == 24
    overall = response.context["overall"]
    assert overall["difference"] == pytest.approx(np.mean([row.difference for row in tasks.values()]))
    assert (overall["a"], overall["b"]) == (board[weak.pk].overall, board[strong.pk].overall)
    assert overall["p_value"] < 0.01 and overall["ci"][0] > 0  # 0.85 against 0.6 over 1,072 instances
    html = response.content.decode()
    assert 'id="task-T3"' in html and 'id="task-overall"' in html and "McNemar (exact)" in html


def test_instances_are_listed_regressions_first_and_filtered(client, two_runs):
    _, weak, strong = two_runs
    response = client.get(URL, {"a": weak.pk, "b": strong.pk})
    page = response.context["page"]
    counts = response.context["counts"]
    assert sum(counts.values()) == page.paginator.count == 1072
    first = page.object_list[0]
    assert first.change == "regressed" and first.a.correct and not first.b.correct
    a_ep = Episode.objects.get(run=weak, instance_id=first.instance)
    b_ep = Episode.objects.get(run=strong, instance_id=first.instance)
    assert (first.a.episode, first.b.episode) == (a_ep.pk, b_ep.pk)
    side_by_side = f'{reverse("leaderboard:compare")}?a={a_ep.pk}&amp;b={b_ep.pk}'
    assert side_by_side in response.content.decode()
    filtered = client.get(URL, {"a": weak.pk, "b": strong.pk, "task": "T3", "change": "improved"}).context["page"]
    assert filtered.paginator.count == response.context["tasks"][2].improved
    assert {(pair.task, pair.change) for pair in filtered.object_list} == {("T3", "improved")}


def test_a_run_against_its_repeat_differs_by_nothing(client):
    suite = official_suite(name="repeat")
    first = add_run(suite=suite, model=model_spec("Same"), skill=0.7, seed=4)
    again = add_run(suite=suite, model=model_spec("Same again"), skill=0.7, seed=4)
    data = client.get(URL, {"a": first.pk, "b": again.pk}).context
    assert all(row.difference == 0 and row.p_value == 1.0 and row.improved == row.regressed == 0
               for row in data["tasks"])
    assert data["overall"]["difference"] == 0 and data["overall"]["ci"] == (0.0, 0.0)
    assert data["counts"]["improved"] == data["counts"]["regressed"] == 0


def test_runs_that_cannot_be_compared_get_the_form_again_with_the_reason(client, two_runs):
    suite, weak, strong = two_runs
    other = add_run(suite=official_suite(name="elsewhere"), model=model_spec("Other"), tasks=["T3"])
    response = client.get(URL, {"a": weak.pk, "b": other.pk})
    assert response.status_code == 400 and "only runs on the same suite" in response.content.decode()
    assert client.get(URL, {"a": weak.pk, "b": weak.pk}).status_code == 400
    assert client.get(URL, {"a": "x1", "b": weak.pk}).status_code == 400
    for beyond in ("9" * 25, "²", "0"):  # beyond a 64-bit id, a digit that is not ASCII, no row id
        assert client.get(URL, {"a": beyond, "b": weak.pk}).status_code == 400
        assert client.get(API, {"a": beyond, "b": weak.pk}).status_code == 400
    assert client.get(f"/runs/{'9' * 25}/").status_code == 404  # routes take ids the database can hold
    assert client.get(f"/api/runs/{'9' * 25}/").status_code == 404
    assert client.get(URL, {"a": weak.pk}).status_code == 400
    assert client.get(URL, {"a": weak.pk, "b": 999999}).status_code == 404
    assert client.get(URL).status_code == 200  # the form
    run_page = client.get(reverse("leaderboard:run", args=[weak.pk])).content.decode()
    assert f'id="compare-with" action="{URL}"' in run_page and f'name="a" value="{weak.pk}"' in run_page
    # the leaderboard's two ticks, upper row first: the upper one is B
    ticked = client.get(URL, {"run": [strong.pk, weak.pk]})
    assert (ticked.context["a"], ticked.context["b"]) == (weak, strong)
    assert client.get(URL, {"run": [strong.pk]}).status_code == 400


def test_the_api_answers_the_comparison(client, two_runs):
    _, weak, strong = two_runs
    page = client.get(URL, {"a": weak.pk, "b": strong.pk}).context
    body = client.get(API, {"a": weak.pk, "b": strong.pk}).json()
    assert (body["a"], body["b"], body["suite"]) == (weak.pk, strong.pk, "paired")
    t3 = body["tasks"]["T3"]
    assert set(t3) >= {"metric", "a", "b", "difference", "ci", "p_value", "test", "n_units", "improved", "regressed"}
    assert t3["difference"] == page["tasks"][2].difference and t3["p_value"] == page["tasks"][2].p_value
    assert body["overall"]["p_value"] == page["overall"]["p_value"]
    assert len(body["instances"]) == 1072 and body["instances"][0]["change"] == "regressed"
    instance = body["instances"][0]
    assert set(instance) >= {"instance", "task", "a", "b", "change"}
    assert set(instance["a"]) == {"episode", "score", "correct"}
    assert client.get(API, {"a": weak.pk, "b": "x"}).status_code == 400
    assert client.get(API, {"a": weak.pk, "b": 999999}).status_code == 404


def held_out(suite: Suite) -> Suite:
    suite.references = Suite.References.HELD_OUT
    suite.save(update_fields=["references"])
    return suite


def test_a_held_out_suite_shows_visitors_the_tasks_only(client, admin_client, two_runs):
    suite, weak, strong = two_runs
    held_out(suite)
    visitor = client.get(URL, {"a": weak.pk, "b": strong.pk})
    assert visitor.status_code == 200 and len(visitor.context["tasks"]) == 6 and visitor.context["page"] is None
    assert 'id="instance-comparison"' not in visitor.content.decode()
    assert client.get(API, {"a": weak.pk, "b": strong.pk}).json()["instances"] is None
    staff = admin_client.get(URL, {"a": weak.pk, "b": strong.pk})
    assert staff.context["page"].paginator.count == 1072
    assert len(admin_client.get(API, {"a": weak.pk, "b": strong.pk}).json()["instances"]) == 1072
    # a run still playing on a held-out suite: its scores tell its agent nothing yet
    weak.status = Status.RUNNING
    weak.save(update_fields=["status"])
    running = client.get(URL, {"a": weak.pk, "b": strong.pk})
    assert running.context["tasks"] == [] and 'id="scores-held-back"' in running.content.decode()
    assert client.get(API, {"a": weak.pk, "b": strong.pk}).json()["tasks"] == {}


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_without_public_references_visitors_get_no_instance_rows(client, two_runs):
    _, weak, strong = two_runs
    response = client.get(URL, {"a": weak.pk, "b": strong.pk})
    assert len(response.context["tasks"]) == 6 and response.context["page"] is None
    assert 'id="instances-held-back"' in response.content.decode()


def test_the_leaderboard_ticks_two_runs_and_marks_a_significant_drop(client, two_runs):
    suite, weak, strong = two_runs
    repeat = add_run(suite=suite, model=model_spec("Weak repeat"), skill=0.6, seed=2)
    board = ranking.leaderboard(suite="paired")
    rows = {row.run_id: row for row in board.rows}
    assert rows[strong.pk].rank == 1 and rows[strong.pk].below_p is None  # nothing above it to be below
    below = min((rows[weak.pk], rows[repeat.pk]), key=lambda row: row.rank)
    last = max((rows[weak.pk], rows[repeat.pk]), key=lambda row: row.rank)
    assert below.significantly_below and below.below_p < 0.05  # 0.6 under 0.85
    assert not last.significantly_below and last.below_p == 1.0  # the same answers as the row above
    html = client.get(reverse("leaderboard:index"), {"suite": "paired"}).content.decode()
    assert html.count('name="run"') == 3 and 'id="compare-paired"' in html
    assert f'>below {below.rank - 1}</span>' in html
    rows_json = client.get(reverse("leaderboard:download", args=["json"]), {"suite": "paired"}).json()["rows"]
    assert {row["run_id"]: row["significantly_below"] for row in rows_json} == {
        strong.pk: False, below.run_id: True, last.run_id: False}


def test_the_comparison_reads_a_fixed_number_of_queries(client, two_runs, django_assert_max_num_queries):
    _, weak, strong = two_runs
    client.get(URL, {"a": weak.pk, "b": strong.pk})
    with django_assert_max_num_queries(12):
        assert client.get(URL, {"a": weak.pk, "b": strong.pk, "page": 3}).status_code == 200
