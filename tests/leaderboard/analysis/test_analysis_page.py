"""The analysis page as a newcomer meets it after ``manage.py demo``: the board it opens on and its empty sections.

The data is the demo's: the paper's 29 published rows on their board, and the synthetic demo
suite played by the two built-in baselines (two instances of each task, to keep it quick), which
are free, of no reported size and spend no tokens. The paper's board draws distributions, cost,
size and tokens; the demo's draws distributions, tool use and rank stability.
"""
import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from benchmark.models import Task
from leaderboard.board.published import PAPER_BOARD, import_published
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db

SECTION_HEADINGS = {
    "analysis-distributions": "Score distributions per task",
    "analysis-cost": "Cost against Overall",
    "analysis-scale": "Parameters against Overall",
    "analysis-tools": "Tool use by category and task",
    "analysis-calls": "Tool calls per trajectory",
    "analysis-rank-stability": "Rank stability",
    "analysis-tokens": "Token usage",
}


def play_demo() -> None:
    Task.objects.ensure_official()
    suite = import_demo()
    for model in ("baseline/heuristic", "baseline/random"):
        call_command("run_benchmark", model=model, suite=suite.name, sync=True, limit=2, stdout=io.StringIO())


@pytest.fixture
def demo_site():
    """The demo site: the paper's board and the demo suite played by both baselines."""
    import_published()
    play_demo()


def section_text(html: str, figure: str) -> str:
    """The visible text of the analysis section holding ``figure``, tags stripped and whitespace collapsed."""
    heading = SECTION_HEADINGS[figure]
    section = re.search(rf"<section[^>]*>\s*<h2>{heading}</h2>(.*?)</section>", html, re.S).group(1)
    assert f'data-figure="{figure}"' in section
    return " ".join(re.sub(r"<[^>]+>", " ", section).split()).replace(" .", ".")


def drawn(html: str, figure: str) -> bool:
    return f'<div class="chart" data-figure="{figure}"' in html


def test_after_the_demo_the_page_opens_on_the_papers_board_where_cost_size_and_tokens_are(client, demo_site):
    response = client.get(reverse("leaderboard:analysis"))
    assert response.context["suite"] == PAPER_BOARD
    html = response.content.decode()
    for figure in ("analysis-distributions", "analysis-cost", "analysis-scale", "analysis-tokens"):
        assert drawn(html, figure), figure
    assert "LongCat-2" in section_text(html, "analysis-tokens")  # Table 5's rows under the chart
    # The paper publishes no trajectories: its tool use and rank stability are their sentence and a
    # way to the board that draws them, and nothing else.
    assert section_text(html, "analysis-tools") == "No tool calls recorded yet. Drawn on the demo board."
    assert section_text(html, "analysis-calls") == (
        "No run on this board has completed a trajectory yet. Drawn on the demo board."
    )
    assert section_text(html, "analysis-rank-stability") == (
        "Rank stability needs at least two runs with an Overall (all six tasks scored) on this board. "
        "Drawn on the demo board."
    )
    assert '<a href="?suite=demo">the demo board</a>' in html


def test_the_demo_board_chosen_shows_each_empty_section_as_its_note_alone(client, demo_site):
    response = client.get(reverse("leaderboard:analysis"), {"suite": "demo"})
    assert response.context["suite"] == "demo"
    html = response.content.decode()
    for figure in ("analysis-distributions", "analysis-tools", "analysis-calls", "analysis-rank-stability"):
        assert drawn(html, figure), figure
    elsewhere = f"Drawn on the {PAPER_BOARD} board."
    assert section_text(html, "analysis-tokens") == f"No token usage recorded yet. {elsewhere}"  # no table of zeros
    assert "<table" not in html and "0.000" not in html
    assert section_text(html, "analysis-cost") == (
        "No model on this board has a positive cost and an Overall score. "
        f"Not on the log axis: baseline/heuristic ($0), baseline/random ($0). {elsewhere}"
    )
    assert section_text(html, "analysis-scale") == (
        "No model on this board has a reported parameter count. "
        f"Size not reported: baseline/heuristic, baseline/random. {elsewhere}"
    )


def test_without_the_papers_rows_the_page_opens_on_the_demo_board(client):
    play_demo()
    response = client.get(reverse("leaderboard:analysis"))
    assert response.context["suite"] == "demo"
    assert 'data-drawn-elsewhere' not in response.content.decode()  # no other board draws what it leaves empty


def test_a_board_of_no_rows_shows_its_notes_with_no_way_elsewhere(client):
    Task.objects.ensure_official()
    import_demo()
    html = client.get(reverse("leaderboard:analysis")).content.decode()
    assert section_text(html, "analysis-distributions") == "No scores yet."
    assert section_text(html, "analysis-tokens") == "No token usage recorded yet."
