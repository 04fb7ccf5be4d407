"""The analysis page's failure modes: each model's share of episodes with each mode, per task and over all,
and its evidence coverage against its score on T5 and T6, counted in the database in a fixed number of
queries; the modes that tell the reference only where references are shown."""
import pytest
from django.db import connection
from django.db.models import Q
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from benchmark.models import Suite, Task
from benchmark.scoring import PRIMARY_METRIC
from leaderboard.access import REFERENCE_MODES
from leaderboard.analysis import failure_charts
from leaderboard.analysis.failure_modes import coverage_scores, mode_shares
from leaderboard.board.ranking import leaderboard
from leaderboard.summaries.scoring import refresh_run_summary
from runs.episode.engine import failure_codes
from runs.failures import CODES
from runs.models import Episode, Run, Status
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db

TASKS = ("T3", "T5", "T6")
ENDED = (Status.COMPLETED, Status.FAILED)


def classify(run: Run, task: str, codes: list[str], *, coverage: float | None = None, where: Q = Q()) -> None:
    """Give ``run``'s episodes of ``task`` (those ``where`` picks) these failure modes and evidence coverage."""
    modes = [{"code": code, "steps": [1]} for code in codes]
    Episode.objects.filter(where, run=run, instance__task__code=task).update(
        failure_modes=modes, failure_codes=failure_codes(modes), evidence_coverage=coverage
    )


def finished_run(suite: Suite, name: str, **options) -> Run:
    run = add_run(suite=suite, model=model_spec(name), tasks=TASKS, **options)
    refresh_run_summary(run)
    return run


def classify_alpha(run: Run) -> None:
    first_half = Q(instance__position__lt=140)
    classify(run, "T3", [])
    classify(run, "T5", ["no_tool_call", "missed_all_seizures"], coverage=0.2, where=first_half)
    classify(run, "T5", ["repeated_call", "low_coverage"], coverage=0.4, where=~first_half)
    classify(run, "T6", ["constant_hypnogram"], coverage=0.9, where=Q(instance__position__lt=50))  # others unclassified


def classify_beta(run: Run) -> None:
    classify(run, "T5", ["repeated_call", "false_alarm"], coverage=0.6)  # its pending episodes too
    classify(run, "T6", ["wrong_length", "tool_errors"], coverage=1.0)
    episode = run.episodes.filter(instance__task__code="T6", status=Status.COMPLETED).first()
    Episode.objects.filter(pk=episode.pk).update(status=Status.CANCELLED)  # classified, but cancelled
    refresh_run_summary(run)


@pytest.fixture
def board():
    """A board of two models on T3, T5 and T6: Alpha-1 complete, Beta-2 half played, their episodes classified."""
    Task.objects.ensure_official()
    suite = official_suite(name="modes")
    alpha = finished_run(suite, "Alpha-1", skill=0.8)
    beta = finished_run(suite, "Beta-2", skill=0.4, complete=0.5, seed=1)
    classify_alpha(alpha)
    classify_beta(beta)
    return suite, alpha, beta


def counted(run: Run, *, references: bool = True) -> dict:
    """``mode_shares``' entry of ``run``, counted here episode by episode from the stored modes."""
    episodes = [episode for episode in run.episodes.select_related("instance__task")
                if episode.status in ENDED and episode.failure_modes is not None]
    expected = {}
    for task in (*TASKS, "all"):
        chosen = [episode for episode in episodes if task in ("all", episode.instance.task.code)]
        if not chosen:
            continue
        codes = [{mode["code"] for mode in episode.failure_modes} for episode in chosen]
        expected[task] = {"n": len(chosen), "modes": {
            code: sum(code in had for had in codes) / len(chosen)
            for code in CODES if any(code in had for had in codes) and (references or code not in REFERENCE_MODES)
        }}
    return expected


def test_shares_are_those_of_the_ended_classified_episodes_counted_one_by_one(board):
    _, alpha, beta = board
    shares = mode_shares([alpha.pk, beta.pk], references=True)
    assert shares == {alpha.pk: counted(alpha), beta.pk: counted(beta)}
    assert shares[alpha.pk]["T5"] == {"n": 280, "modes": {
        "no_tool_call": 0.5, "repeated_call": 0.5, "low_coverage": 0.5, "missed_all_seizures": 0.5,
    }}  # in CODES' order
    assert shares[alpha.pk]["T3"] == {"n": 188, "modes": {}}  # classified, no mode
    assert shares[alpha.pk]["T6"]["n"] == 50  # the others are not classified yet
    assert shares[alpha.pk]["all"]["modes"]["constant_hypnogram"] == pytest.approx(50 / (188 + 280 + 50))
    assert shares[beta.pk]["T5"]["n"] == 140 and shares[beta.pk]["T6"]["n"] == 98 - 1  # neither pending nor cancelled


def test_modes_that_tell_the_reference_are_left_out_without_references(board):
    _, alpha, beta = board
    shares = mode_shares([alpha.pk, beta.pk], references=False)
    assert shares == {alpha.pk: counted(alpha, references=False), beta.pk: counted(beta, references=False)}
    assert not {code for run in shares.values() for entry in run.values() for code in entry["modes"]} & REFERENCE_MODES
    assert shares[beta.pk]["T5"] == {"n": 140, "modes": {"repeated_call": 1.0}}


def test_a_run_without_classified_episodes_has_no_shares(board):
    suite, alpha, _ = board
    other = finished_run(suite, "Gamma-3")
    assert mode_shares([other.pk], references=True) == {}
    assert set(mode_shares([alpha.pk, other.pk], references=True)) == {alpha.pk}
    assert mode_shares([], references=True) == {}


def test_coverage_is_the_mean_over_ended_episodes_beside_the_score_the_board_shows(board):
    suite, alpha, beta = board
    rows = {row.run_id: row for row in leaderboard(suite=suite.name).rows}
    assert coverage_scores([alpha.pk, beta.pk], task="T5") == {
        alpha.pk: {"coverage": pytest.approx(0.3), "n": 280, "score": rows[alpha.pk].primary("T5")},
        beta.pk: {"coverage": pytest.approx(0.6), "n": 140, "score": rows[beta.pk].primary("T5")},
    }
    t6 = coverage_scores([alpha.pk, beta.pk], task="T6")
    assert t6[alpha.pk]["n"] == 50 and t6[beta.pk]["n"] == 98 - 1
    assert t6[beta.pk]["score"] == rows[beta.pk].metrics["T6"][PRIMARY_METRIC["T6"]] is not None
    with pytest.raises(ValueError, match="T5, T6"):
        coverage_scores([alpha.pk], task="T3")


def test_queries_do_not_grow_with_the_runs(client, board, django_assert_num_queries, django_assert_max_num_queries):
    suite, alpha, beta = board
    with django_assert_num_queries(1):
        mode_shares([alpha.pk, beta.pk], references=True)
    with django_assert_num_queries(2):
        coverage_scores([alpha.pk, beta.pk], task="T5")
    url, query = reverse("leaderboard:analysis"), {"suite": suite.name}
    with CaptureQueriesContext(connection) as two_runs:
        client.get(url, query)
    for index, name in enumerate(("Gamma-3", "Delta-4", "Epsilon-5")):
        classify_alpha(finished_run(suite, name, seed=index + 2))
    ids = list(suite.runs.values_list("pk", flat=True))
    with django_assert_num_queries(1):
        assert len(mode_shares(ids, references=True)) == 5
    with django_assert_num_queries(2):
        assert len(coverage_scores(ids, task="T6")) == 5
    with django_assert_max_num_queries(len(two_runs)):
        response = client.get(url, query)
    assert len(response.context["figures"]["failure_modes"]["data"][0]["y"]) == 5


# ── the page ─────────────────────────────────────────────────────────────────────────────────


def section(html: str) -> str:
    return html[html.index('<section class="panel" id="failure-modes">'):html.index('id="rank-stability"')]


def test_the_page_shows_modes_per_model_coverage_against_score_and_every_codes_definition(client, board):
    suite, alpha, beta = board
    response = client.get(reverse("leaderboard:analysis"), {"suite": suite.name})
    figures, html = response.context["figures"], section(response.content.decode())
    for figure in ("analysis-failure-modes", "analysis-coverage-t5", "analysis-coverage-t6"):
        assert f'<div class="chart" data-figure="{figure}"' in html, figure
    assert f'<a href="{reverse("leaderboard:episodes")}" id="search-episodes">' in html  # the search across runs
    heatmap = figures["failure_modes"]["data"][0]
    assert heatmap["y"] == ["Alpha-1", "Beta-2"]
    assert heatmap["x"] == [code for code in CODES if code in {*counted(alpha)["all"]["modes"],
                                                               *counted(beta)["all"]["modes"]}]
    column = heatmap["x"].index("missed_all_seizures")
    assert heatmap["z"][0][column] == pytest.approx(140 / 518) and heatmap["z"][1][column] == 0
    assert heatmap["customdata"][0][column] == "518 episodes<br>T5: 50% of 280"  # the tasks where it occurs
    t5 = [trace for trace in figures["coverage_T5"]["data"] if trace.get("customdata")]
    assert [x for trace in t5 for x in trace["x"]] == pytest.approx([30, 60])  # per cent
    assert "see docs/failure_modes.md" in html
    for code, definition in CODES.items():
        assert f"<li><code>{code}</code>: {escape(definition)}</li>" in html, code


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_modes_that_tell_the_reference_follow_the_references(client, admin_client, board):
    suite, *_ = board
    url, query = reverse("leaderboard:analysis"), {"suite": suite.name}
    visitor = client.get(url, query)
    assert not set(visitor.context["figures"]["failure_modes"]["data"][0]["x"]) & REFERENCE_MODES
    assert not any(code in visitor.content.decode() for code in REFERENCE_MODES)
    assert "tell whether a record has seizures are left out" in section(visitor.content.decode())
    staff = admin_client.get(url, query)
    assert REFERENCE_MODES <= set(staff.context["figures"]["failure_modes"]["data"][0]["x"])


def test_a_held_out_suite_shows_its_runs_shares_without_the_modes_that_tell_the_reference(client, board):
    suite, *_ = board
    Suite.objects.filter(pk=suite.pk).update(references=Suite.References.HELD_OUT)
    response = client.get(reverse("leaderboard:analysis"), {"suite": suite.name})
    heatmap = response.context["figures"]["failure_modes"]["data"][0]
    assert heatmap["y"] == ["Alpha-1"] and "repeated_call" in heatmap["x"]  # Beta-2 still runs: not on the board
    assert not set(heatmap["x"]) & REFERENCE_MODES
    assert not any(code in response.content.decode() for code in REFERENCE_MODES)


def test_a_board_without_classified_episodes_says_so(client, board):
    suite, *_ = board
    Episode.objects.update(failure_modes=None, failure_codes="", evidence_coverage=None)
    html = section(client.get(reverse("leaderboard:analysis"), {"suite": suite.name}).content.decode())
    assert "No episode of this board&#x27;s runs has been classified yet." in html
    assert "No T5 episode of this board&#x27;s runs has an evidence coverage yet." in html
    assert 'class="chart"' not in html


# ── the figures ──────────────────────────────────────────────────────────────────────────────


def test_the_heatmap_has_a_column_per_mode_some_model_has_in_the_order_given():
    shares = {"T5": {"n": 4, "modes": {"false_alarm": 0.5}}, "T6": {"n": 4, "modes": {"tool_errors": 0.25}},
              "all": {"n": 8, "modes": {"tool_errors": 0.125, "false_alarm": 0.25}}}
    figure = failure_charts.failure_modes_figure(
        [{"label": "A", "shares": shares}, {"label": "B", "shares": {"all": {"n": 3, "modes": {}}}}],
        codes=list(CODES),
    )
    heatmap = figure["data"][0]
    assert heatmap["x"] == ["tool_errors", "false_alarm"] and heatmap["y"] == ["A", "B"]
    assert heatmap["z"] == [[0.125, 0.25], [0.0, 0.0]]
    assert heatmap["text"][1] == ["", ""]  # no "0%" on the cells of modes a model does not have
    assert heatmap["customdata"][0] == ["8 episodes<br>T6: 25% of 4", "8 episodes<br>T5: 50% of 4"]
    assert heatmap["customdata"][1] == ["3 episodes", "3 episodes"]


def test_the_figures_without_anything_to_draw_are_their_sentence():
    assert failure_charts.failure_modes_figure([], codes=list(CODES))["empty"]
    assert "has a failure mode" in failure_charts.failure_modes_figure(
        [{"label": "A", "shares": {"all": {"n": 3, "modes": {}}}}], codes=list(CODES)
    )["empty"]
    assert failure_charts.coverage_figure(
        [{"label": "A", "key": "run-1", "published": False, "coverage": None, "score": 0.5}], task="T5", metric="F1"
    )["empty"] == "No T5 episode of this board's runs has an evidence coverage yet."
