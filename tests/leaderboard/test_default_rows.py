"""One row per model and settings: which run a board shows and ranks, the others behind "show every run".

The ``repeated`` fixture (conftest): Alpha-1 run twice at the paper's settings (the later run is
weaker), once at temperature 0.7, and Gamma-3 over three epochs, beside Beta-2.
"""
import csv
import io
from dataclasses import replace

import pytest
from django.urls import reverse

from leaderboard import selectors
from leaderboard.comparability import run_settings
from leaderboard.services import import_published
from runs.models import Run, Status
from runs.services import create_run
from tests.leaderboard.conftest import GOOD_ANSWERS, play

pytestmark = pytest.mark.django_db


def rows_by_run(board) -> dict[int, selectors.LeaderboardRow]:
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
    rows = rows_by_run(selectors.leaderboard(suite="bench"))
    assert rows[first.pk].overall > rows[latest.pk].overall  # the earlier run scored better
    assert rows[latest.pk].shown_by_default and not rows[first.pk].shown_by_default
    assert rows[first.pk].default_run_id == rows[latest.pk].default_run_id == latest.pk
    assert (rows[latest.pk].n_other_runs, rows[first.pk].n_other_runs) == (1, 0)
    # other settings are another experiment, and a run of three epochs counts once
    for run in (repeated.warm_alpha, repeated.gamma, repeated.bench.beta):
        assert rows[run.pk].shown_by_default and rows[run.pk].default_run_id == run.pk
        assert rows[run.pk].n_other_runs == 0


def test_ranks_ties_and_frontier_are_those_of_the_rows_shown_by_default(repeated):
    board = selectors.leaderboard(suite="bench")
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
    rows = rows_by_run(selectors.leaderboard(suite="bench"))
    assert rows[partial.pk].overall is None and not rows[partial.pk].shown_by_default
    assert rows[alpha.pk].shown_by_default and rows[alpha.pk].n_other_runs == 2
    assert rows[partial.pk].default_run_id == alpha.pk


def test_a_task_board_shows_the_latest_run_that_scored_the_task(repeated):
    alpha = repeated.latest_alpha
    partial = partial_run(repeated.bench.suite, alpha.model, ["T3"])
    t3 = {row["run_id"]: row for row in selectors.task_analysis(suite="bench", task="T3").rows}
    assert t3[partial.pk]["shown_by_default"] and t3[partial.pk]["n_other_runs"] == 2
    assert not t3[alpha.pk]["shown_by_default"] and t3[alpha.pk]["default_run_id"] == partial.pk
    assert t3[alpha.pk]["rank"] is not None and t3[partial.pk]["rank"] is None  # Overall ranks stay the board's
    t1 = {row["run_id"]: row for row in selectors.task_analysis(suite="bench", task="T1").rows}
    assert partial.pk not in t1 and t1[alpha.pk]["shown_by_default"]


@pytest.mark.parametrize("first, second, same", [
    ({"temperature": 0}, {"temperature": 0.0}, True),
    ({"temperature": 0, "transport": "direct"}, {"temperature": 0, "timeout_sec": 30}, True),
    ({"temperature": 0}, {"temperature": 0, "top_p": 0.9}, False),
    ({"temperature": 0, "tool_protocol": "text"}, {"temperature": 0, "tool_protocol": "native"}, False),
])
def test_runs_repeat_one_experiment_when_their_settings_are_equal(bench, first, second, same):
    alpha = rows_by_run(selectors.leaderboard(suite="bench"))[bench.alpha.pk]
    rows = [
        replace(alpha, run_id=index, settings=run_settings(Run(prompt_set="platform", settings=settings)))
        for index, settings in enumerate((first, second), start=1)
    ]
    assert (rows[0].experiment == rows[1].experiment) is same
    assert sum(mark.shown_by_default for mark in selectors.default_marks(rows).values()) == (1 if same else 2)


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
        assert data["default_rows"] == selectors.DEFAULT_ROWS and "latest" in data["default_rows"]
        rows = {row["run_id"]: row for row in data["rows"]}
        assert len(rows) == 5
        assert (rows[first.pk]["shown_by_default"], rows[first.pk]["default_run_id"]) == (False, latest.pk)
        assert rows[repeated.warm_alpha.pk]["settings"]["temperature"] == 0.7
        assert rows[repeated.warm_alpha.pk]["shown_by_default"] is True


def test_published_rows_are_each_shown(bench):
    import_published(board="bench")
    board = selectors.leaderboard(suite="bench")
    published = [row for row in board.rows if row.is_published]
    assert len(published) == 29 and all(row.shown_by_default and row.default_run_id is None for row in published)