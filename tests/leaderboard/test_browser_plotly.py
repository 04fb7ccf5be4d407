"""plotly.js (4.8 MB) is fetched only by a page that draws a chart, and once however many it draws.

In headless Chromium: the resources a page fetched (the Resource Timing entries) name
plotly.min.js only on a page with a chart, once, and ``window.Plotly`` is defined only there.
"""
from django.urls import reverse

from tests.leaderboard.test_browser import (  # noqa: F401 (pytest fixtures, marks)
    board,
    browser,
    no_console_errors,
    pytestmark,
    wait_for,
)
from tests.leaderboard.analysis.test_browser_charts import drawn


def plotly_fetches(browser) -> int:
    return browser.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes('plotly.min.js')).length"
    )


def test_pages_without_a_chart_load_no_plotly(browser, live_server, board):
    pages = [
        reverse("login"),
        reverse("leaderboard:runs"),
        reverse("leaderboard:run", args=[board.beta.pk]),
        reverse("leaderboard:episode", args=[board.episode(board.alpha, "T1").pk]),
    ]
    for url in pages:
        browser.get(live_server.url + url)
        wait_for(browser, "footer.site-footer")
        browser.execute_script("return new Promise(resolve => setTimeout(resolve, 300))")  # what DOMContentLoaded starts
        assert browser.find_elements("css selector", "div.chart[data-figure]") == [], url  # the premise
        assert plotly_fetches(browser) == 0, url
        assert browser.execute_script("return typeof window.Plotly") == "undefined", url


def test_a_page_with_charts_loads_plotly_once_and_draws_every_chart(browser, live_server, board):
    for url in (reverse("leaderboard:index"), reverse("leaderboard:analysis")):
        drawn(browser, live_server, url)
        assert len(browser.find_elements("css selector", "div.chart[data-figure] svg.main-svg")) >= 1, url
        assert plotly_fetches(browser) == 1, url


def test_a_step_plot_opened_later_draws_with_the_plotly_already_loaded(browser, live_server, board):
    episode, step = board.episode(board.alpha, "T5"), board.windowed_step(board.alpha)
    browser.get(live_server.url + reverse("leaderboard:episode", args=[episode.pk]))
    wait_for(browser, f"[data-figure='outcome-{episode.pk}'] svg.main-svg")
    item = wait_for(browser, f"#step-{step.index}")[0]
    item.find_element("css selector", "details.step-details > summary").click()
    wait_for(browser, "[data-role='signal'] svg.main-svg", root=item)
    wait_for(browser, "[data-role='features'] svg.main-svg", root=item)
    assert plotly_fetches(browser) == 1
