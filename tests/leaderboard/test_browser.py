"""The pages in a real browser: headless Debian Chromium driven by Selenium against the live server.

Skipped when Debian's Chromium or its driver is missing (``apt-get install chromium chromium-driver``),
except under ``CI=true``, where a skip fails the run (``tests/conftest.py``). With ``EEGAB_SCREENSHOTS=1`` the
leaderboard and an episode page of the demo's data are saved to ``docs/screenshots/`` for the README
(``tests/leaderboard/analysis/test_browser_charts.py``). Every test fails when a page it opened logged an error to
the browser's console: a Content-Security-Policy violation, a script error, a resource that did not load.
"""
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from benchmark.models import Task
from leaderboard.board.published import import_published
from runs.models import Run, Status
from tests.chromium import installed as chromium_installed
from tests.chromium import start_chromium

WAIT_SEC = 30
SCREENSHOTS = settings.BASE_DIR / "docs" / "screenshots"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not chromium_installed(),
        reason="Debian's chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)",
    ),
    # The live server reads the test database from its own thread, so each test commits; the
    # serialized rollback puts back what the migrations installed (the six tasks) afterwards.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


# The browsers running, whose consoles every test reads (no_console_errors).
RUNNING: list[webdriver.Chrome] = []


@contextmanager
def chromium(profile: Path, *flags: str) -> Iterator[webdriver.Chrome]:
    """Headless Debian Chromium with its own profile directory and any ``flags`` beyond the usual ones."""
    driver = start_chromium(profile, *flags, logs={"browser": "ALL"})
    RUNNING.append(driver)
    try:
        yield driver
    finally:
        RUNNING.remove(driver)
        driver.quit()


def console_errors(driver: webdriver.Chrome) -> list[str]:
    """The errors the browser's pages logged since the last call (Chromium logs a CSP violation as one)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.fixture(autouse=True)
def no_console_errors():
    """A test passes only when no page it opened logged an error: no CSP violation, no script error."""
    for driver in RUNNING:
        console_errors(driver)  # what an earlier test left unread is that test's
    yield
    assert [message for driver in RUNNING for message in console_errors(driver)] == []


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture
def board(bench):
    """The bench suite's board with the paper's published rows beside its two runs."""
    Task.objects.ensure_official()
    import_published(board=bench.suite.name)
    return bench


def wait_for(browser, selector: str, *, root=None):
    """The elements matching ``selector`` once there is at least one (fails after WAIT_SEC)."""
    scope = root or browser
    return WebDriverWait(browser, WAIT_SEC).until(lambda _: scope.find_elements(By.CSS_SELECTOR, selector))


def screenshot(browser, name: str) -> None:
    """Save the whole page as docs/screenshots/<name>.png when EEGAB_SCREENSHOTS=1 (the README's, from the demo's data)."""
    if os.environ.get("EEGAB_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 1000), 4000))
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    browser.set_window_size(1400, 1000)


def overall_column(browser) -> list[float]:
    cells = browser.find_elements(By.CSS_SELECTOR, "#board-bench table.leaderboard tbody tr td.overall")
    return [float(cell.get_attribute("data-sort")) for cell in cells if cell.get_attribute("data-sort")]


def test_leaderboard_draws_its_chart(browser, live_server, board):
    browser.get(live_server.url + reverse("leaderboard:index"))
    chart = wait_for(browser, "[data-figure='overall-bench'] svg.main-svg")
    assert chart[0].is_displayed()
    markers = browser.find_elements(By.CSS_SELECTOR, "[data-figure='overall-bench'] .scatterlayer .point")
    assert len(markers) >= 2 + 29  # two runs and the paper's rows
    assert "Alpha-1" in browser.page_source and "GPT-5.6-sol" in browser.page_source


def test_leaderboard_sorts_a_column(browser, live_server, board):
    browser.get(live_server.url + reverse("leaderboard:index"))
    header = wait_for(browser, "#board-bench table.leaderboard thead th[data-sort-first]")[0]
    assert header.text.startswith("Overall")
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    scores = overall_column(browser)
    assert scores == sorted(scores, reverse=True)
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    scores = overall_column(browser)
    assert scores == sorted(scores) and len(scores) == 31


def test_episode_step_expands_to_its_signal_plot(browser, live_server, board):
    episode = board.episode(board.alpha, "T5")
    step = board.windowed_step(board.alpha)
    browser.get(live_server.url + reverse("leaderboard:episode", args=[episode.pk]))
    wait_for(browser, "[data-figure='outcome-%d'] svg.main-svg" % episode.pk)  # the T5 intervals
    item = browser.find_element(By.ID, f"step-{step.index}")
    item.find_element(By.CSS_SELECTOR, "details.step-details > summary").click()
    signal = wait_for(browser, "[data-role='signal'] svg.main-svg", root=item)
    assert signal[0].is_displayed()
    wait_for(browser, "[data-role='features'] svg.main-svg", root=item)
    traces = item.find_elements(By.CSS_SELECTOR, "[data-role='signal'] .scatterlayer .trace")
    assert len(traces) == 3  # the three channels the call asked for
    assert "EEG1: windows" in item.text


def test_staff_creates_a_run(browser, live_server, board, staff_user):
    browser.get(live_server.url + reverse("login") + "?next=" + reverse("leaderboard:new_run"))
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys("staff-password")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    form = wait_for(browser, "#new-run-form")[0]
    Select(form.find_element(By.NAME, "model")).select_by_visible_text("Alpha-1 — openai/alpha-1")
    Select(form.find_element(By.NAME, "suite")).select_by_value(str(board.suite.pk))
    form.find_element(By.NAME, "name").send_keys("browser run")
    form.find_element(By.NAME, "limit").send_keys("1")
    form.find_element(By.NAME, "api_key_env").send_keys("OPENAI_API_KEY")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    heading = wait_for(browser, "h1 #run-status")[0]
    run = Run.objects.get(name="browser run")
    assert browser.current_url.endswith(reverse("leaderboard:run", args=[run.pk]))
    assert "browser run" in browser.find_element(By.TAG_NAME, "h1").text
    assert heading.text == Status.PENDING  # the ORM broker holds the tasks; nothing runs in the test
    assert run.episodes.count() == 6 and run.created_by == staff_user
    assert browser.find_element(By.ID, "cancel-run").is_displayed()
