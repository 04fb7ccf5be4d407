"""One row per model and settings: which run a board shows and ranks, the others behind "show every run".

The ``repeated`` fixture (conftest): Alpha-1 run twice at the paper's settings (the later run is
weaker), once at temperature 0.7, and Gamma-3 over three epochs, beside Beta-2.
"""
import csv
import io
import re
from dataclasses import replace

import pytest
from django.template import Context, Template
from django.urls import reverse

from leaderboard.analysis import selectors as analysis_reads
from leaderboard.board import ranking
from leaderboard.board.charts import board_section
from leaderboard.board.comparability import run_settings
from leaderboard.board.published import import_published
from runs.models import Run, Status
from runs.services import create_run
from tests.leaderboard.conftest import GOOD_ANSWERS, play

pytestmark = pytest.mark.django_db


def rows_by_run(board) -> dict[int, ranking.LeaderboardRow]:
    return {row.run_id: row for row in board.rows if row.run_id}


def partial_run(suite, model, tasks: list[str]) -> Run:
    """A later run of ``model`` at the default settings on ``tasks`` only, every answer right."""
    run = create_run(suite=suite, model=model, tasks=tasks, name="partial")
    for episode in run.episodes.select_related("instance__task", "instance__suite__release"):
        play(episode, GOOD_ANSWERS[episode.instance.task.code])
    Run.objects.filter(pk=run.pk).update(status=Status.COMPLETED)
    return run


def test_the_board_shows_the_latest_run_of_a_model_and_settings_not_its_best(repeated):
    first, latest = repeated.bench.alpha, repeated.latest_alpha
    rows = rows_by_run(ranking.leaderboard(suite="bench"))
    assert rows[first.pk].overall > rows[latest.pk].overall  # the earlier run scored better
    assert rows[latest.pk].shown_by_default and not rows[first.pk].shown_by_default
    assert rows[first.pk].default_run_id == rows[latest.pk].default_run_id == latest.pk
    assert (rows[latest.pk].n_other_runs, rows[first.pk].n_other_runs) == (1, 0)
    # other settings are another experiment, and a run of three epochs counts once
    for run in (repeated.warm_alpha, repeated.gamma, repeated.bench.beta):
        assert rows[run.pk].shown_by_default and rows[run.pk].default_run_id == run.pk
        assert rows[run.pk].n_other_runs == 0


def test_ranks_ties_and_frontier_are_those_of_the_rows_shown_by_default(repeated):
    board = ranking.leaderboard(suite="bench")
    assert not board.among_paper_rows and board.n_other_runs == 1
    shown = [row for row in board.rows if row.shown_by_default]
    assert [row.rank for row in shown] == [1, 2, 3, 4]
    hidden = rows_by_run(board)[repeated.bench.alpha.pk]
    assert (hidden.rank, hidden.tie_group, hidden.tie_range, hidden.on_pareto_frontier) == (None, None, None, False)
    assert {row.tie_group for row in shown} <= set(range(1, 5))
    overalls = [row.overall for row in board.rows]
    assert overalls == sorted(overalls, reverse=True)  # it keeps its place by Overall
    assert hidden.overall > min(row.overall for row in shown)
    assert any(row.on_pareto_frontier for row in shown)


def test_a_later_partial_run_does_not_displace_a_complete_one(repeated):
    alpha = repeated.latest_alpha
    partial = partial_run(repeated.bench.suite, alpha.model, ["T3"])
    rows = rows_by_run(ranking.leaderboard(suite="bench"))
    assert rows[partial.pk].overall is None and not rows[partial.pk].shown_by_default
    assert rows[alpha.pk].shown_by_default and rows[alpha.pk].n_other_runs == 2
    assert rows[partial.pk].default_run_id == alpha.pk


def test_a_task_board_shows_the_latest_run_that_scored_the_task(repeated):
    alpha = repeated.latest_alpha
    partial = partial_run(repeated.bench.suite, alpha.model, ["T3"])
    t3 = {row["run_id"]: row for row in analysis_reads.task_analysis(suite="bench", task="T3").rows}
    assert t3[partial.pk]["shown_by_default"] and t3[partial.pk]["n_other_runs"] == 2
    assert not t3[alpha.pk]["shown_by_default"] and t3[alpha.pk]["default_run_id"] == partial.pk
    assert t3[alpha.pk]["rank"] is not None and t3[partial.pk]["rank"] is None  # Overall ranks stay the board's
    t1 = {row["run_id"]: row for row in analysis_reads.task_analysis(suite="bench", task="T1").rows}
    assert partial.pk not in t1 and t1[alpha.pk]["shown_by_default"]


def test_the_task_page_ranks_only_the_rows_shown_by_default(client, repeated):
    html = client.get(reverse("leaderboard:task", args=["T1"]), {"suite": "bench"}).content.decode()
    rows = re.findall(r'<tr class="run( other-run)?">(.*?)</tr>', html, re.S)
    hidden = [row for other, row in rows if other]
    assert len(rows) == 5 and len(hidden) == 1
    assert f'href="/runs/{repeated.bench.alpha.pk}/"' in hidden[0]
    assert re.search(r'<td class="num" data-sort="">–</td>', hidden[0])  # no rank for the task
    ranks = sorted(int(rank) for other, row in rows if not other
                   for rank in re.findall(r'<td class="num" data-sort="(\d+)">', row)[:1])
    assert ranks == [1, 2, 3, 4]
    assert 'class="every-run"' in html and "1 other run with the same model and settings is not" in html


@pytest.mark.parametrize("first, second, same", [
    ({"temperature": 0}, {"temperature": 0.0}, True),
    ({"temperature": 0, "transport": "direct"}, {"temperature": 0, "timeout_sec": 30}, True),
    ({"temperature": 0}, {"temperature": 0, "top_p": 0.9}, False),
    ({"temperature": 0, "tool_protocol": "text"}, {"temperature": 0, "tool_protocol": "native"}, False),
])
def test_runs_repeat_one_experiment_when_their_settings_are_equal(bench, first, second, same):
    alpha = rows_by_run(ranking.leaderboard(suite="bench"))[bench.alpha.pk]
    rows = [
        replace(alpha, run_id=index, settings=run_settings(Run(prompt_set="platform", settings=settings)))
        for index, settings in enumerate((first, second), start=1)
    ]
    assert (rows[0].experiment == rows[1].experiment) is same
    assert sum(mark.shown_by_default for mark in ranking.default_marks(rows).values()) == (1 if same else 2)


def test_run_settings_are_what_the_scores_depend_on():
    run = Run(prompt_set="official", settings={"temperature": 0.7, "transport": "direct", "top_p": 0.9, "timeout_sec": 60})
    assert run_settings(run) == {"prompt_set": "official", "tool_protocol": None, "max_tokens": None,
                                 "temperature": 0.7, "top_p": 0.9}


def test_downloads_and_the_api_keep_every_run_and_say_which_is_shown(client, repeated):
    first, latest = repeated.bench.alpha, repeated.latest_alpha
    text = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "bench"}).content.decode()
    lines = {int(line["run_id"]): line for line in csv.DictReader(io.StringIO(text)) if line["run_id"]}
    assert len(lines) == 5
    assert (lines[first.pk]["shown_by_default"], lines[first.pk]["default_run_id"], lines[first.pk]["rank"]) == (
        "False", str(latest.pk), "")
    assert (lines[latest.pk]["shown_by_default"], lines[latest.pk]["default_run_id"]) == ("True", str(latest.pk))
    for data in (client.get(reverse("leaderboard:download", args=["json"]), {"suite": "bench"}).json(),
                 client.get(reverse("api:leaderboard"), {"suite": "bench"}).json()):
        assert data["default_rows"] == ranking.DEFAULT_ROWS and "latest" in data["default_rows"]
        rows = {row["run_id"]: row for row in data["rows"]}
        assert len(rows) == 5
        assert (rows[first.pk]["shown_by_default"], rows[first.pk]["default_run_id"]) == (False, latest.pk)
        assert rows[repeated.warm_alpha.pk]["settings"]["temperature"] == 0.7
        assert rows[repeated.warm_alpha.pk]["shown_by_default"] is True


def test_published_rows_are_each_shown(bench):
    import_published(board="bench")
    board = ranking.leaderboard(suite="bench")
    published = [row for row in board.rows if row.is_published]
    assert len(published) == 29 and all(row.shown_by_default and row.default_run_id is None for row in published)


def test_the_board_page_hides_the_other_runs_behind_a_checkbox_and_says_which_run_it_shows(client, repeated):
    html = client.get(reverse("leaderboard:index")).content.decode()
    intro = re.search(r'<p class="lead" id="board-intro">(.*?)</p>', html, re.S).group(1)
    assert "has one row, its <em>latest</em> complete run" in intro
    assert '<input type="checkbox" class="every-run">' in html
    rows = re.findall(r'<tr class="run( other-run)?" data-source="run">(.*?)</tr>', html, re.S)
    hidden = [row for other, row in rows if other]
    assert len(hidden) == 1 and f'href="/runs/{repeated.bench.alpha.pk}/"' in hidden[0]
    assert f"not ranked: run {repeated.latest_alpha.pk} is the row of this model and settings" in hidden[0]
    latest = next(row for _, row in rows if f'href="/runs/{repeated.latest_alpha.pk}/"' in row)
    assert ">+1 run</span>" in latest
    # the chart shows the rows shown by default, labelled apart where a model has two (two settings)
    labels = board_section(ranking.leaderboard(suite="bench"))["figure"]["layout"]["yaxis"]["categoryarray"]
    assert sorted(label for label in labels if label.startswith("Alpha-1")) == [
        f"Alpha-1 · run {repeated.latest_alpha.pk}", f"Alpha-1 · run {repeated.warm_alpha.pk}"]
    assert len(labels) == 4


def test_a_spread_over_epochs_is_shown_where_it_is_not_zero(client, repeated):
    html = client.get(reverse("leaderboard:index")).content.decode()
    gamma = next(row for row in re.findall(r'<tr class="run" data-source="run">(.*?)</tr>', html, re.S)
                 if f'href="/runs/{repeated.gamma.pk}/"' in row)
    spreads = re.findall(r'<span class="epoch-sd"[^>]*>(.*?)</span>', gamma)
    assert len(spreads) == 1 + 3  # Overall, T1, T2 and T5 differ between epochs; T3, T4 and T6 do not
    assert "± 0.000" not in html and "× 3 epochs" in gamma


@pytest.mark.parametrize("sd, shown", [(None, ""), ("", ""), (0.0, ""), (0.0004, ""), (0.0005, "± 0.001"),
                                       (0.0851, "± 0.085")])
def test_the_spread_filter_leaves_out_a_spread_shown_as_zero(sd, shown):
    assert Template("{% load leaderboard %}{{ sd|spread }}").render(Context({"sd": sd})) == shown
