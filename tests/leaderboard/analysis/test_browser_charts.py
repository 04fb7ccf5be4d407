"""The charts in a real browser: phone layout, the mode bar, empty states and a step's aligned plots.

The data is the demo's (the synthetic demo suite played by the two built-in baselines, the paper's
rows on their own board), so the pages look as a newcomer sees them after ``manage.py demo``.
"""
import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from benchmark.models import Task
from leaderboard.board.published import import_published
from tests.leaderboard.test_browser import (  # noqa: F401 (pytest fixtures)
    WAIT_SEC,
    board,
    browser,
    chromium,
    no_console_errors,
    pytestmark,
    screenshot,
    wait_for,
)
from tests.runs.demo_suite import import_demo

PHONE = (390, 844)
DESKTOP = (1400, 1000)
# Chromium without a display reports a screen that cannot hover, like a phone's; this makes it a
# desktop with a mouse, where the mode bar is meant to show under the pointer.
MOUSE = "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4"
PAGE_FITS = """
const width = window.innerWidth;
const wide = [...document.querySelectorAll('.panel, .chart, .chart-empty, .grid > *')]
  .filter(element => element.getBoundingClientRect().right > width + 0.5)
  .map(element => element.className);
return {scroll: document.documentElement.scrollWidth, width: width, wide: wide};
"""


@pytest.fixture
def demo(db):
    """The demo site: the paper's board, and the demo suite played by both baselines."""
    Task.objects.ensure_official()
    import_published()
    suite = import_demo()
    for model in ("baseline/heuristic", "baseline/random"):
        call_command("run_benchmark", model=model, suite=suite.name, sync=True, stdout=io.StringIO())
    return suite


@pytest.fixture(scope="module")
def mouse_browser(tmp_path_factory):
    """Headless Chromium that reports a mouse, so that hover-only behaviour can be seen."""
    with chromium(tmp_path_factory.mktemp("chromium-mouse"), MOUSE) as driver:
        yield driver


@pytest.fixture
def phone(browser):
    browser.set_window_size(*PHONE)
    yield browser
    browser.set_window_size(*DESKTOP)


def drawn(browser, live_server, url: str) -> None:
    """Open ``url`` and wait until every chart on it is drawn."""
    browser.get(live_server.url + url)
    WebDriverWait(browser, WAIT_SEC).until(lambda _: browser.execute_script(
        "return [...document.querySelectorAll('div.chart[data-figure]')].every(c => c.querySelector('svg.main-svg'))"
    ))


@pytest.mark.parametrize("url", [
    reverse("leaderboard:task", args=["T2"]) + "?suite=demo",
    reverse("leaderboard:task", args=["T5"]) + "?suite=demo",
    reverse("leaderboard:analysis") + "?suite=demo",
    reverse("leaderboard:analysis"),
    reverse("leaderboard:task", args=["T6"]),
])
def test_phone_pages_do_not_scroll_sideways(phone, live_server, demo, url):
    drawn(phone, live_server, url)
    layout = phone.execute_script(PAGE_FITS)
    assert layout["scroll"] <= layout["width"], layout
    assert layout["wide"] == []
    # a chart redraws to its panel's width rather than keeping a desktop size
    widths = phone.execute_script(
        "return [...document.querySelectorAll('div.chart[data-figure] svg.main-svg')].map(s => s.getBoundingClientRect().width)"
    )
    assert widths and max(widths) <= PHONE[0]


def test_every_task_page_fits_a_phone(phone, live_server, demo):
    for code in Task.objects.order_by("code").values_list("code", flat=True):
        drawn(phone, live_server, reverse("leaderboard:task", args=[code]) + "?suite=demo")
        layout = phone.execute_script(PAGE_FITS)
        assert layout["scroll"] <= layout["width"] and layout["wide"] == [], (code, layout)


def test_phone_charts_have_no_mode_bar_to_cover_them(phone, live_server, demo):
    drawn(phone, live_server, reverse("leaderboard:task", args=["T2"]) + "?suite=demo")
    assert phone.find_elements(By.CSS_SELECTOR, "div.chart svg.main-svg")
    assert phone.find_elements(By.CSS_SELECTOR, ".modebar-group") == []


def test_mode_bar_shows_only_under_the_pointer(mouse_browser, live_server, demo):
    drawn(mouse_browser, live_server, reverse("leaderboard:analysis") + "?suite=demo")
    chart = mouse_browser.find_element(By.CSS_SELECTOR, "[data-figure='analysis-distributions']")
    opacity = "return getComputedStyle(arguments[0].querySelector('.modebar-group')).opacity"
    ActionChains(mouse_browser).move_to_element(mouse_browser.find_element(By.TAG_NAME, "h1")).perform()
    assert mouse_browser.execute_script(opacity, chart) == "0"
    ActionChains(mouse_browser).move_to_element(chart).perform()
    WebDriverWait(mouse_browser, WAIT_SEC).until(lambda _: mouse_browser.execute_script(opacity, chart) == "1")


def test_demo_analysis_shows_empty_states_and_labelled_zero_bars(browser, live_server, demo):
    drawn(browser, live_server, reverse("leaderboard:analysis"))  # opens on the paper's board: most is drawn there
    chosen = browser.find_elements(By.XPATH, "//p[starts-with(normalize-space(), 'Board:')]/strong")
    assert [element.text for element in chosen] == ["eegagentbench"]
    for figure in ("analysis-cost", "analysis-scale", "analysis-tokens"):
        assert browser.find_elements(By.CSS_SELECTOR, f"[data-figure='{figure}'] svg.main-svg"), figure
    browser.find_element(By.CSS_SELECTOR, "[data-drawn-elsewhere='analysis-tools'] a").click()  # to the demo's
    WebDriverWait(browser, WAIT_SEC).until(lambda _: browser.current_url.endswith("/analysis/?suite=demo"))
    assert wait_for(browser, "[data-figure='analysis-tools'] svg.main-svg")
    for figure in ("analysis-cost", "analysis-scale", "analysis-tokens"):
        empty = browser.find_element(By.CSS_SELECTOR, f"p.chart-empty[data-figure='{figure}']")
        assert empty.is_displayed() and empty.text
        assert browser.find_elements(By.CSS_SELECTOR, f"[data-figure='{figure}'] svg") == []
    assert browser.find_elements(By.TAG_NAME, "table") == []  # no token table of zeros
    note = browser.find_element(By.CSS_SELECTOR, "[data-figure-note='analysis-cost']").text
    assert "baseline/random ($0)" in note
    # The random baseline calls no tool: its bars are 0 tall and still read 0.0.
    labels = browser.execute_script(
        "return [...document.querySelectorAll(\"[data-figure='analysis-calls'] .bartext\")].map(t => t.textContent)"
    )
    assert "0.0" in labels


def test_a_steps_signal_and_feature_plots_share_their_time_axis(browser, live_server, board):
    episode = board.episode(board.alpha, "T5")
    step = board.windowed_step(board.alpha)
    browser.get(live_server.url + reverse("leaderboard:episode", args=[episode.pk]))
    item = wait_for(browser, f"#step-{step.index}")[0]
    item.find_element(By.CSS_SELECTOR, "details.step-details > summary").click()
    wait_for(browser, "[data-role='signal'] svg.main-svg", root=item)
    wait_for(browser, "[data-role='features'] svg.main-svg", root=item)
    axes = browser.execute_script("""
        return [...arguments[0].querySelectorAll("[data-role='signal'], [data-role='features']")].map(plot => ({
          range: plot._fullLayout.xaxis.range, offset: plot._fullLayout.xaxis._offset,
          length: plot._fullLayout.xaxis._length}));
    """, item)
    signal, features = axes
    assert signal["range"] == features["range"] == [0, 20]  # the call's tmin and tmax
    assert abs(signal["offset"] - features["offset"]) < 0.5
    assert abs(signal["length"] - features["length"]) < 0.5


def test_the_demo_site_as_the_readme_shows_it(browser, live_server, demo):
    """The leaderboard and a played episode with a step's signal open: the README's screenshots (EEGAB_SCREENSHOTS=1)."""
    from runs.models import Episode, Status, Step

    browser.get(live_server.url + reverse("leaderboard:index"))
    wait_for(browser, f"[data-figure='overall-{demo.name}'] svg.main-svg")
    assert "baseline/heuristic" in browser.page_source or "heuristic" in browser.page_source.lower()
    screenshot(browser, "leaderboard")

    step = next(
        step for step in Step.objects.filter(
            episode__run__model__provider_model="baseline/heuristic", episode__status=Status.COMPLETED,
            episode__instance__task__code="T5", kind=Step.Kind.TOOL_CALL, tool_name="compute_windowed_features",
        ).order_by("episode__instance__position", "index")
        if "error" not in (step.result.get("content") or {"error": None})  # a call that returned windows
    )  # fmt: skip
    episode = Episode.objects.get(pk=step.episode_id)
    browser.get(live_server.url + reverse("leaderboard:episode", args=[episode.pk]))
    wait_for(browser, f"[data-figure='outcome-{episode.pk}'] svg.main-svg")
    item = browser.find_element(By.ID, f"step-{step.index}")
    item.find_element(By.CSS_SELECTOR, "details.step-details > summary").click()
    assert wait_for(browser, "[data-role='signal'] svg.main-svg", root=item)[0].is_displayed()
    wait_for(browser, "[data-role='features'] svg.main-svg", root=item)
    browser.execute_script("arguments[0].scrollIntoView()", item)
    screenshot(browser, "episode")
