"""The leaderboard table as served: intervals of paper rows, tie marks, the intro and board notes, downloads."""
import csv
import io
import re
from decimal import Decimal
from html import unescape

import pytest
from django.urls import reverse

from benchmark.models import ModelSpec
from leaderboard import stats
from leaderboard.board.charts import chart_markers
from leaderboard.board.published import PAPER_BOARD, import_published
from runs.models import Run
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db

# Two rows of the paper's Table 2 with the same Overall, 0.459.
EQUAL_PAPER_ROWS = ("DeepSeek-V4-Flash", "Qwen3.5-35B-A3B")


def board_html(client, suite: str, **query) -> str:
    """The HTML of one board's section on the leaderboard page."""
    html = client.get(reverse("leaderboard:index"), query).content.decode()
    start = html.index(f'id="board-{suite}"')
    return html[start:html.index("</section>", start)]


def table_row(section: str, model: str) -> str:
    """The <tr> of ``model`` in a board's table."""
    rows = re.findall(r'<tr class="(?:run|published)".*?</tr>', section, flags=re.S)
    matching = [row for row in rows if f'<td class="model" data-sort="{model}">' in row]
    assert len(matching) == 1, f"{len(matching)} rows of {model}"
    return matching[0]


def text_of(html: str) -> str:
    """The text of an HTML fragment, tags dropped and spaces collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def overall_cell(row: str) -> str:
    return re.search(r'<td class="num overall".*?</td>', row, flags=re.S).group(0)


# ── intervals and ties ───────────────────────────────────────────────────────────────────────


def test_paper_rows_say_the_paper_published_no_interval(client, bench):
    import_published(board="bench")
    section = board_html(client, "bench")
    paper = overall_cell(table_row(section, "GPT-5.6-sol"))
    assert "0.631" in paper
    assert 'class="ci no-ci"' in paper and "no CI" in paper
    assert "The paper published this Overall as a point score, with no interval" in paper
    assert "[" not in paper
    run = overall_cell(table_row(section, "Alpha-1"))
    assert re.search(r'<span class="ci">\[\d\.\d{3}, \d\.\d{3}\]</span>', run)
    assert "no CI" not in run


def test_paper_rows_with_the_same_overall_are_not_marked_tied(client, db):
    import_published()
    section = board_html(client, PAPER_BOARD)
    for model in EQUAL_PAPER_ROWS:
        row = table_row(section, model)
        assert "0.459" in overall_cell(row)
        assert 'class="tie"' not in row and "tied" not in row
    assert 'class="tie"' not in section  # no paper row has an interval, so none is tied


def test_runs_whose_intervals_overlap_are_marked_tied(client, db):
    suite = official_suite()
    first = add_run(suite=suite, model=model_spec("Even-A"), skill=0.6, seed=3)
    second = add_run(suite=suite, model=model_spec("Even-B"), skill=0.6, seed=4)
    add_run(suite=suite, model=model_spec("Far-C"), skill=0.1, seed=5)
    section = board_html(client, suite.name)
    for run in (first, second):
        row = table_row(section, run.model.name)
        assert re.search(r'<span class="tie" title="Tie group 1: [^"]*overlap[^"]*">tied 1–2</span>', row)
    assert "tied" not in table_row(section, "Far-C")


@pytest.mark.parametrize("intervals, expected", [
    # equal points without intervals are never tied, and they end the group before them
    ([None, None, (0.3, 0.4)], [1, 2, 3]),
    ([(0.5, 0.7), None, (0.55, 0.6)], [1, 2, 3]),
    ([(0.5, 0.7), (0.55, 0.6), None, None], [1, 1, 2, 3]),
    # a zero-width interval is still an interval
    ([(0.5, 0.5), (0.5, 0.5)], [1, 1]),
])
def test_tie_groups_never_tie_an_entry_without_an_interval(intervals, expected):
    assert stats.tie_groups(intervals) == expected


# ── the intro and where the runs are ─────────────────────────────────────────────────────────


def test_the_intro_says_each_suite_has_its_own_board(client, bench):
    import_published()
    html = client.get(reverse("leaderboard:index")).content.decode()
    intro = re.search(r'<p class="lead" id="board-intro">(.*?)</p>', html, flags=re.S).group(1)
    assert "side by side" not in intro
    assert "Each suite has its own board" in intro
    assert f"appear only on the board of the paper's suite, {PAPER_BOARD}, beside the runs" in text_of(intro)
    assert f'<a href="#board-{PAPER_BOARD}">{PAPER_BOARD}</a>' in intro


def test_a_paper_board_without_runs_links_to_the_boards_that_have_them(client, bench):
    import_published()
    section = board_html(client, PAPER_BOARD)
    note = re.search(r'<p class="runs-elsewhere">(.*?)</p>', section, flags=re.S).group(1)
    assert "No run of this site on this board" in text_of(note) and "is not imported on this site" in note
    assert "Runs are on the board of bench." in text_of(note) and '<a href="#board-bench">bench</a>' in note
    assert 'class="runs-elsewhere"' not in board_html(client, "bench")


def test_a_paper_board_with_runs_has_no_note(client, bench):
    import_published(board="bench")
    section = board_html(client, "bench")
    assert 'class="runs-elsewhere"' not in section
    assert "Alpha-1" in section and "GPT-5.6-sol" in section


def test_filtered_out_runs_are_named_as_filtered(client, bench):
    import_published(board="bench")
    section = board_html(client, "bench", family="Qwen")
    assert "No run of this site matches the filters on this board" in text_of(section)
    assert 'class="runs-elsewhere"' not in board_html(client, "bench", source="published")


# ── legends ──────────────────────────────────────────────────────────────────────────────────


def test_the_legends_explain_the_marks_and_the_chart_markers(client, bench):
    import_published(board="bench")
    section = board_html(client, "bench")
    chart_legend = re.search(r'<p class="legend chart-legend">(.*?)</p>', section, flags=re.S).group(1)
    assert "●</span> runs on this site" in chart_legend
    assert "◆</span> published in the paper" in chart_legend
    assert "95&nbsp;% bootstrap interval" in chart_legend
    table_legend = re.search(r'<p class="legend table-legend">(.*?)</p>', section, flags=re.S).group(1)
    assert "★</span> on the cost–Overall Pareto frontier" in table_legend
    assert "F1 macro-F1" in table_legend and "κ Cohen's κ" in text_of(table_legend)
    frontier = section.count('<span class="frontier" title="On the cost–Overall Pareto frontier">★</span>')
    assert frontier >= 1


def test_a_board_of_paper_rows_only_has_no_run_marker_in_its_legend(client, db):
    import_published()
    chart_legend = re.search(r'<p class="legend chart-legend">(.*?)</p>', board_html(client, PAPER_BOARD),
                             flags=re.S).group(1)
    assert "published in the paper" in chart_legend and "runs on this site" not in chart_legend


# ── downloads ────────────────────────────────────────────────────────────────────────────────


def test_csv_costs_are_plain_decimals_and_unpriced_stays_blank(client, bench):
    Run.objects.filter(pk=bench.alpha.pk).update(cost_usd=Decimal("0"), prompt_tokens=0, completion_tokens=0)
    ModelSpec.objects.filter(pk=bench.beta.model.pk).update(
        input_price_per_mtok=None, output_price_per_mtok=None, provider_model="nowhere/unpriced-model-xyz",
    )
    Run.objects.filter(pk=bench.beta.pk).update(cost_usd=None)
    assert Run.objects.get(pk=bench.alpha.pk).cost_usd.as_tuple().exponent == -8  # stored as 0E-8
    response = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "bench"})
    text = response.content.decode()
    assert "E-" not in text and "E+" not in text
    rows = {row["model"]: row for row in csv.DictReader(io.StringIO(text))}
    assert (rows["Alpha-1"]["cost_usd"], rows["Alpha-1"]["cost_paper_usd"]) == ("0", "0")
    assert (rows["Beta-2"]["cost_usd"], rows["Beta-2"]["cost_paper_usd"]) == ("", "")


def test_csv_costs_keep_their_significant_digits(client, bench):
    import_published(board="bench")
    text = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "bench"}).content.decode()
    rows = {row["model"]: row for row in csv.DictReader(io.StringIO(text))}
    assert rows["ERNIE-4.5-VL-424B"]["cost_paper_usd"] == "15.394"
    assert rows["GPT-5.6-sol"]["cost_usd"] == "723.5"
    alpha = Run.objects.get(pk=bench.alpha.pk)
    assert Decimal(rows["Alpha-1"]["cost_usd"]) == alpha.cost_usd and not rows["Alpha-1"]["cost_usd"].endswith("0")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_downloads_are_named_after_the_board_once(client, bench, fmt):
    response = client.get(reverse("leaderboard:download", args=[fmt]), {"suite": "bench"})
    assert response["Content-Disposition"] == f'attachment; filename="eegagentbench-leaderboard-bench.{fmt}"'
    import_published()
    response = client.get(reverse("leaderboard:download", args=[fmt]))
    assert response["Content-Disposition"] == (
        f'attachment; filename="eegagentbench-leaderboard-{PAPER_BOARD}.{fmt}"'
    )


def test_the_chart_legend_reads_the_legend_traces_of_a_figure():
    figure = {"data": [
        {"name": "runs on this site", "marker": {"symbol": "circle", "color": "#2456a6"}},
        {"name": "published in the paper", "marker": {"symbol": "diamond", "color": ["#111111", "#222222"]}},
        {"name": "a point of a legend group", "marker": {"symbol": "circle", "color": "#333333"}, "showlegend": False},
        {"name": "Pareto frontier", "mode": "lines"},
    ]}
    assert chart_markers(figure) == [
        {"name": "runs on this site", "glyph": "●", "color": "#2456a6"},
        {"name": "published in the paper", "glyph": "◆", "color": ""},
    ]
    assert chart_markers({"empty": "No model has an Overall score on this board yet.", "data": []}) == []
