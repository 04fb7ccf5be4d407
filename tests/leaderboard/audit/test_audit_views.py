"""The one-feature shortcut audit on the site: a labelled reference on task pages and boards, never ranked.

The ``bench`` board (tests/leaderboard/conftest.py) gets a stored audit of T3 and T5; the task page
draws it as a dashed reference line with its text, the board as a reference row outside the ranked
rows, the CSV as a separately marked row, the API under its own key.
"""
import csv
import io
import json
import re

import pytest
from django.urls import reverse

from leaderboard.analysis import task_charts
from leaderboard.audit.runner import store_audits
from leaderboard.board import ranking
from leaderboard.models import ShortcutAudit

pytestmark = pytest.mark.django_db

T3_AUDIT = {
    "primary_metric": "macro_f1",
    "best": {"feature": "compute_temporal_features.rms_uv[EEG]",
             "rule": "threshold on compute_temporal_features.rms_uv[EEG]: normal below 101.3, epileptic from 101.3",
             "score": 0.9459, "ci": [0.861, 1.0]},
    "candidates": [{"feature": f"compute_psd.total_power_uv2[EEG{n}]", "rule": "threshold on …", "score": 0.9,
                    "ci": [0.8, 0.97]} for n in range(4)],
    "folds": 5,
}
T5_AUDIT = {
    "primary_metric": "event_f1",
    "best": {"feature": "compute_windowed_features.rms_uv[max]",
             "rule": "window threshold on compute_windowed_features.rms_uv[max]: seizure where > 80.5",
             "score": 0.4213, "ci": [0.2, 0.6]},
    "candidates": [],
    "folds": 5,
}


@pytest.fixture
def audited(bench):
    store_audits(suite=bench.suite, audits={"T3": T3_AUDIT, "T5": T5_AUDIT}, seed=0)
    return bench


def scores_figure(html: str) -> dict:
    found = re.search(r'<script id="task-scores" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the scores chart's JSON is on the page"
    return json.loads(found.group(1))


def test_store_replaces_a_tasks_audit_and_keeps_the_others(audited):
    first = ShortcutAudit.objects.get(suite=audited.suite, task="T3")
    store_audits(suite=audited.suite, audits={"T3": {**T3_AUDIT, "best": {**T3_AUDIT["best"], "score": 0.5}, "folds": 3}},
                 seed=9)
    assert ShortcutAudit.objects.filter(suite=audited.suite).count() == 2
    replaced = ShortcutAudit.objects.get(suite=audited.suite, task="T3")
    assert (replaced.best["score"], replaced.folds, replaced.seed) == (0.5, 3, 9)
    assert replaced.pk != first.pk
    assert ShortcutAudit.objects.get(suite=audited.suite, task="T5").result == T5_AUDIT


def test_the_task_page_draws_a_labelled_dashed_reference_line_and_names_the_feature(client, audited):
    html = client.get(reverse("leaderboard:task", args=["T3"]), {"suite": "bench"}).content.decode()
    figure = scores_figure(html)
    (line,) = figure["layout"]["shapes"]
    assert (line["x0"], line["x1"], line["line"]["dash"]) == (0.9459, 0.9459, "dash")
    (label,) = figure["layout"]["annotations"]
    assert label["text"].startswith("one feature, cross-validated on the answer key")
    assert "one feature, cross-validated on the answer key" in html
    note = html[html.index('id="shortcut-audit"'):]
    note = note[: note.index("</p>")]
    for text in ("compute_temporal_features.rms_uv[EEG]", "0.946", "0.861", "1.000",
                 "5-fold", audited.suite.shortcut_audits.get(task="T3").created_at.strftime("%Y-%m-%d")):
        assert text in note, text
    assert "101.3" not in html  # the threshold, fitted on the answer key, is for staff
    # The audit is no row of the task's table: no bar, no rank.
    assert "one-feature audit" not in figure["data"][0]["y"]


def test_a_task_without_an_audit_has_no_line_and_no_note(client, audited):
    html = client.get(reverse("leaderboard:task", args=["T4"]), {"suite": "bench"}).content.decode()
    assert "shapes" not in scores_figure(html)["layout"]
    assert 'id="shortcut-audit"' not in html


def test_the_chart_reference_line_is_optional():
    rows = [{"label": "A", "key": "run-1", "score": 0.7}]
    assert "shapes" not in task_charts.task_scores_figure(rows, metric="Macro-F1")["layout"]
    layout = task_charts.task_scores_figure(rows, metric="Macro-F1", audit_score=0.25)["layout"]
    assert layout["shapes"][0]["x0"] == 0.25 and layout["annotations"][0]["xanchor"] == "left"


def test_the_board_shows_the_audit_as_an_unranked_reference_row(client, audited):
    html = client.get(reverse("leaderboard:index")).content.decode()
    body, foot = html.split("<tfoot>")[0], html.split("<tfoot>")[1].split("</tfoot>")[0]
    assert "one-feature audit" in foot and "one-feature audit" not in body.split("<tbody>")[-1]
    assert 'class="audit-reference"' in foot
    cells = re.findall(r"<td[^>]*>(.*?)</td>", foot, re.S)
    assert cells[0] == "–"  # no rank
    assert "0.946" in foot and "0.421" in foot
    assert 'title="compute_temporal_features.rms_uv[EEG] (cross-validated' in foot  # the rule's thresholds are staff's


def test_the_audit_changes_no_rank_tie_or_frontier(audited):
    board = ranking.leaderboard(suite="bench")
    assert set(board.audits) == {"T3", "T5"}
    ShortcutAudit.objects.all().delete()
    without = ranking.leaderboard(suite="bench")
    assert without.audits == {}
    fields = [(row.key, row.rank, row.tie_group, row.on_pareto_frontier) for row in board.rows]
    assert fields == [(row.key, row.rank, row.tie_group, row.on_pareto_frontier) for row in without.rows]
    assert all(row.source != ranking.AUDIT_SOURCE for row in board.rows)


def test_the_csv_marks_the_audit_row_apart_without_a_rank(client, audited):
    response = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "bench"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    reference = [row for row in rows if row["source"] == "one_feature_audit"]
    ranked = [row for row in rows if row["source"] != "one_feature_audit"]
    assert len(reference) == 1 and reference == rows[-1:]
    (audit,) = reference
    assert (audit["model"], audit["rank"], audit["tie_group"], audit["on_pareto_frontier"]) == ("one-feature audit", "", "", "")
    assert (audit["T3_macro_f1"], audit["T5_event_f1"], audit["T3_accuracy"], audit["T1_accuracy"]) == ("0.9459", "0.4213", "", "")
    assert [row["rank"] for row in ranked] == [str(n) for n in range(1, len(ranked) + 1)]


def without_rules(audit: dict) -> dict:
    return {**audit, "best": {key: value for key, value in audit["best"].items() if key != "rule"},
            "candidates": [{key: value for key, value in c.items() if key != "rule"} for c in audit["candidates"]]}


def test_staff_see_the_fitted_rules_and_visitors_only_the_features_and_scores(client, audited, staff_user):
    url = reverse("leaderboard:task", args=["T3"])
    assert "normal below 101.3" not in client.get(url, {"suite": "bench"}).content.decode()
    assert "101.3" not in client.get(reverse("leaderboard:index"), {"suite": "bench"}).content.decode()
    assert "101.3" not in client.get(reverse("api:leaderboard"), {"suite": "bench"}).content.decode()
    client.force_login(staff_user)
    assert "normal below 101.3" in client.get(url, {"suite": "bench"}).content.decode()
    assert "normal below 101.3" in client.get(reverse("leaderboard:index"), {"suite": "bench"}).content.decode()
    t3 = client.get(reverse("api:leaderboard"), {"suite": "bench"}).json()["one_feature_audit"]["T3"]
    assert {key: t3[key] for key in T3_AUDIT} == T3_AUDIT


def test_the_api_gives_the_audit_under_its_own_key(client, audited):
    data = client.get(reverse("api:leaderboard"), {"suite": "bench"}).json()
    assert set(data["one_feature_audit"]) == {"T3", "T5"}
    t3 = data["one_feature_audit"]["T3"]
    assert {key: t3[key] for key in T3_AUDIT} == without_rules(T3_AUDIT)
    assert (t3["folds"], t3["seed"]) == (5, 0) and t3["created_at"]
    assert all("audit" not in row["model"] for row in data["rows"])
    ShortcutAudit.objects.all().delete()
    assert client.get(reverse("api:leaderboard"), {"suite": "bench"}).json()["one_feature_audit"] == {}


def test_the_audit_names_no_instance_or_answer(client, audited):
    """Visitors see the feature and the scores: nothing of any one instance."""
    html = client.get(reverse("leaderboard:task", args=["T3"]), {"suite": "bench"}).content.decode()
    note = html[html.index('id="shortcut-audit"'):]
    note = note[: note.index("</p>")]
    instance = audited.suite.instances.get(task__code="T3")
    for secret in (instance.scenario_id, instance.record_id, instance.recording_path):
        assert secret not in note
