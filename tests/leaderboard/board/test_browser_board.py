"""The leaderboard table and its legends in a real browser, at desktop and phone sizes.

The table must fit a 1920 px and a 1400 px window, also with a run of several epochs and a model
run again, and below that scroll inside its own box with the model column kept in view; the page
itself never scrolls sideways, and a phone shows every row's rank, model and Overall before any
scrolling. Uses the headless Chromium of ``test_browser`` (skipped without it).
"""
import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By

from leaderboard.board.published import import_published
from tests.leaderboard.test_browser import board, browser, no_console_errors, pytestmark, wait_for  # noqa: F401 (fixtures, marks)

DESKTOP = (1400, 1000)
TABLE = "#board-bench table.leaderboard"

# Where the bench board's table, its box and its columns are, in CSS pixels of the viewport.
LAYOUT = """
const table = document.querySelector(arguments[0]);
const box = table.closest('.board-table');
const headers = [...table.querySelectorAll('thead tr:last-child th')];
const rect = element => element.getBoundingClientRect();
return {
  innerWidth: window.innerWidth,
  pageWidth: document.documentElement.scrollWidth,
  box: {left: rect(box).left, right: rect(box).right, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth},
  headers: headers.map(th => ({text: th.textContent.trim(), left: rect(th).left, right: rect(th).right})),
};
"""

# Scroll the table's box to its right end and say where the first row's cells are then, and
# which element is drawn at the model cell's top-left corner.
SCROLL_TO_END = """
const table = document.querySelector(arguments[0]);
const box = table.closest('.board-table');
const row = table.tBodies[0].rows[0];
row.scrollIntoView({block: 'center'});
box.scrollLeft = box.scrollWidth;
const rank = row.querySelector('td.rank').getBoundingClientRect();
const model = row.querySelector('td.model').getBoundingClientRect();
const last = row.lastElementChild.getBoundingClientRect();
const onTop = document.elementFromPoint(model.left + 3, model.top + 3);
return {
  scrollLeft: box.scrollLeft, boxLeft: box.getBoundingClientRect().left, boxRight: box.getBoundingClientRect().right,
  rankRight: rank.right, modelLeft: model.left, modelRight: model.right, lastRight: last.right,
  modelOnTop: onTop !== null && onTop.closest('td.model') !== null,
  pageWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
};
"""


@pytest.fixture
def sized(browser):  # noqa: F811 (the imported fixture)
    """The browser, put back to the desktop size after the test."""
    yield browser
    browser.set_window_size(*DESKTOP)


def open_board(browser, live_server, width: int, height: int) -> dict:
    browser.set_window_size(width, height)
    browser.get(live_server.url + reverse("leaderboard:index"))
    wait_for(browser, TABLE)
    return browser.execute_script(LAYOUT, TABLE)


@pytest.mark.parametrize("width", [1920, 1400])
def test_the_whole_table_fits_a_desktop_window(sized, live_server, board, width):
    layout = open_board(sized, live_server, width, 1000)
    box = layout["box"]
    assert box["scrollWidth"] <= box["clientWidth"], "the table scrolls sideways at a desktop size"
    assert layout["pageWidth"] <= layout["innerWidth"]
    texts = [header["text"] for header in layout["headers"]]
    assert texts[0].startswith("Rank") and texts[-3:] == ["Charged", "Paper", "Tokens"]
    assert "κ" in texts  # T6's secondary metric, the last task column
    for header in layout["headers"]:
        assert box["left"] - 1 <= header["left"] and header["right"] <= box["right"] + 1, header


@pytest.mark.parametrize("size", [(1000, 800), (390, 844)], ids=["narrow-desktop", "phone"])
def test_a_narrow_window_scrolls_the_table_in_its_box_keeping_the_model_column(sized, live_server, board, size):
    layout = open_board(sized, live_server, *size)
    assert layout["pageWidth"] <= layout["innerWidth"], "the page itself scrolls sideways"
    assert layout["box"]["right"] <= layout["innerWidth"]
    assert layout["box"]["scrollWidth"] > layout["box"]["clientWidth"]  # this size needs the scroll
    scrolled = sized.execute_script(SCROLL_TO_END, TABLE)
    assert scrolled["scrollLeft"] > 0
    assert scrolled["rankRight"] <= scrolled["boxLeft"] + 1  # the rank column has scrolled away
    assert abs(scrolled["modelLeft"] - scrolled["boxLeft"]) <= 1  # the model column has not
    assert scrolled["modelOnTop"], "a scrolled cell is drawn over the model column"
    box_width = scrolled["boxRight"] - scrolled["boxLeft"]
    assert scrolled["modelRight"] - scrolled["modelLeft"] <= 0.6 * box_width  # room left for the scores
    assert abs(scrolled["lastRight"] - scrolled["boxRight"]) <= 2  # the tokens column is in view
    assert scrolled["pageWidth"] <= scrolled["innerWidth"]


@pytest.mark.parametrize("size", [DESKTOP, (390, 844)], ids=["desktop", "phone"])
def test_the_legends_name_the_marks_and_match_the_chart(sized, live_server, board, size):
    open_board(sized, live_server, *size)
    wait_for(sized, "[data-figure='overall-bench'] .scatterlayer .point")
    legend = sized.execute_script("""
        const section = document.querySelector('#board-bench');
        const chart = section.querySelector("[data-figure='overall-bench']").getBoundingClientRect();
        const chartLegend = section.querySelector('.chart-legend');
        const table = section.querySelector('.board-table').getBoundingClientRect();
        const tableLegend = section.querySelector('.table-legend');
        const drawn = [...section.querySelectorAll("[data-figure='overall-bench'] .scatterlayer .point")]
          .map(point => getComputedStyle(point).fill);
        return {
          chartBottom: chart.bottom, tableTop: table.top, tableBottom: table.bottom,
          chartLegendTop: chartLegend.getBoundingClientRect().top, chartLegendText: chartLegend.innerText,
          tableLegendTop: tableLegend.getBoundingClientRect().top, tableLegendText: tableLegend.innerText,
          legendRight: Math.max(chartLegend.getBoundingClientRect().right, tableLegend.getBoundingClientRect().right),
          glyphs: [...chartLegend.querySelectorAll('.glyph')].map(g => [g.textContent, getComputedStyle(g).color]),
          drawnColors: [...new Set(drawn)], innerWidth: window.innerWidth,
          pageWidth: document.documentElement.scrollWidth,
        };
    """)
    assert legend["chartBottom"] <= legend["chartLegendTop"] <= legend["tableTop"]
    assert legend["tableBottom"] <= legend["tableLegendTop"]
    assert legend["legendRight"] <= legend["innerWidth"] and legend["pageWidth"] <= legend["innerWidth"]
    assert "● runs on this site" in legend["chartLegendText"]
    assert "◆ published in the paper" in legend["chartLegendText"]
    assert "★ on the cost–Overall Pareto frontier" in legend["tableLegendText"]
    # each legend glyph has the colour of markers the chart drew, and each drawn colour has a glyph
    assert sorted(color for _, color in legend["glyphs"]) == sorted(legend["drawnColors"])


# Issue 32: a board with a run of three epochs and a model run again, beside the paper's rows.
# Where the bench board's shown rows put rank, model and Overall, and how wide its table is.
SHOWN_ROWS = """
const section = document.querySelector('#board-bench');
const box = section.querySelector('.board-table');
const rect = element => element.getBoundingClientRect();
const rows = [...box.querySelectorAll('tbody tr')].filter(row => getComputedStyle(row).display !== 'none');
const inBox = cell => rect(cell).left >= rect(box).left - 1 && rect(cell).right <= rect(box).right + 1;
const overallHeader = box.querySelector('thead th.overall');
return {
  innerWidth: window.innerWidth, pageWidth: document.documentElement.scrollWidth,
  scrollLeft: box.scrollLeft, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
  shown: rows.length, otherRuns: rows.filter(row => row.classList.contains('other-run')).length,
  headerInView: inBox(overallHeader),
  outOfView: rows.filter(row => !['td.rank', 'td.model', 'td.overall'].every(cell => inBox(row.querySelector(cell))))
    .map(row => row.querySelector('td.model').textContent.trim()),
  spreads: [...box.querySelectorAll('.epoch-sd')].map(span => span.textContent.trim()),
};
"""

# The element drawn at the middle of each shown row's Overall cell, scrolled into view: the cell itself?
OVERALL_ON_TOP = """
const rows = [...document.querySelectorAll('#board-bench .board-table tbody tr')]
  .filter(row => getComputedStyle(row).display !== 'none');
return rows.every(row => {
  const cell = row.querySelector('td.overall');
  cell.scrollIntoView({block: 'center'});
  const box = cell.getBoundingClientRect();
  const drawn = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return drawn !== null && drawn.closest('td') === cell;
});
"""


@pytest.fixture
def repeated_board(repeated):
    import_published(board=repeated.bench.suite.name)
    return repeated


def open_repeated_board(browser, live_server, width: int, height: int) -> dict:
    open_board(browser, live_server, width, height)
    return browser.execute_script(SHOWN_ROWS)


def show_every_run(browser) -> dict:
    browser.find_element(By.CSS_SELECTOR, "#board-bench .every-run-choice label").click()
    return browser.execute_script(SHOWN_ROWS)


def test_a_phone_shows_rank_model_and_overall_of_every_row_without_scrolling(sized, live_server, repeated_board):
    layout = open_repeated_board(sized, live_server, 390, 844)
    assert layout["pageWidth"] <= layout["innerWidth"] and layout["scrollLeft"] == 0
    assert layout["headerInView"]
    assert layout["shown"] == 4 + 29 and layout["otherRuns"] == 0  # Alpha-1's earlier run is behind the checkbox
    assert layout["outOfView"] == []  # no Overall, nor its interval's "[", cut at the box's edge
    assert sized.execute_script(OVERALL_ON_TOP), "an Overall cell is covered"
    every = show_every_run(sized)
    assert (every["shown"], every["otherRuns"], every["outOfView"]) == (4 + 29 + 1, 1, [])
    assert sized.execute_script(OVERALL_ON_TOP)


def test_the_desktop_table_fits_with_a_run_of_several_epochs_and_a_repeated_model(sized, live_server, repeated_board):
    layout = open_repeated_board(sized, live_server, *DESKTOP)
    assert layout["scrollWidth"] <= layout["clientWidth"], "the table scrolls sideways at 1400 px"
    assert layout["pageWidth"] <= layout["innerWidth"]
    assert len(layout["spreads"]) == 4  # Gamma-3's Overall, T1, T2 and T5, each beneath its mean
    every = show_every_run(sized)
    assert every["otherRuns"] == 1 and every["scrollWidth"] <= every["clientWidth"]
