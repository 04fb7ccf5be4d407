"""Every kind of page renders under the Content-Security-Policy in headless Chromium, its charts drawn.

``no_console_errors`` (``test_browser``) fails a test whose pages logged any error, a policy
violation included. The last test shows that the browser enforces the policy: a script injected
into a page does not run, and ``eval`` is refused.
"""
import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.leaderboard.test_browser import (  # noqa: F401 (pytest fixtures, marks)
    WAIT_SEC,
    board,
    browser,
    console_errors,
    no_console_errors,
    pytestmark,
    wait_for,
)
from tests.leaderboard.analysis.test_browser_charts import drawn


def visitor_pages(board) -> list[str]:
    episode, other = board.episode(board.alpha, "T5"), board.episode(board.beta, "T5")
    step = board.windowed_step(board.alpha)
    return [
        reverse("leaderboard:index"),
        reverse("leaderboard:task", args=["T5"]),
        reverse("leaderboard:analysis"),
        reverse("leaderboard:runs"),
        reverse("leaderboard:run", args=[board.beta.pk]),
        reverse("leaderboard:episode", args=[board.episode(board.beta, "T4").pk]),  # a failed one
        reverse("leaderboard:episode_step", args=[episode.pk, step.index]),
        reverse("leaderboard:compare") + f"?a={episode.pk}&b={other.pk}",
        reverse("login"),
        "/api/",
        "/api/runs/",
    ]


STAFF_PAGES = [reverse("leaderboard:new_run"), "/admin/", "/admin/runs/run/", "/admin/auth/user/add/"]


def log_in(browser, live_server):
    browser.get(live_server.url + reverse("login"))
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys("staff-password")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    wait_for(browser, "nav .nav-end form")


def test_every_page_renders_under_the_policy(browser, live_server, board, staff_user, client):
    browser.delete_all_cookies()
    for url in visitor_pages(board):
        assert client.get(url).status_code == 200, url
        drawn(browser, live_server, url)
    log_in(browser, live_server)
    client.force_login(staff_user)
    for url in [*STAFF_PAGES, reverse("leaderboard:run", args=[board.alpha.pk])]:
        assert client.get(url).status_code == 200, url
        drawn(browser, live_server, url)
    browser.delete_all_cookies()


def test_charts_of_every_kind_are_drawn_under_the_policy(browser, live_server, board):
    """Scatter and bar (the board), box and heatmap (analysis), the signal and feature plots of a step."""
    drawn(browser, live_server, reverse("leaderboard:index"))
    assert browser.find_elements(By.CSS_SELECTOR, ".scatterlayer .point")
    drawn(browser, live_server, reverse("leaderboard:analysis"))
    kinds = browser.execute_script(
        "return [...document.querySelectorAll('div.chart[data-figure]')]"
        ".flatMap(chart => (chart.data || []).map(trace => trace.type))"
    )
    assert {"heatmap", "box", "bar"} <= set(kinds), kinds
    episode, step = board.episode(board.alpha, "T5"), board.windowed_step(board.alpha)
    browser.get(live_server.url + reverse("leaderboard:episode", args=[episode.pk]))
    item = wait_for(browser, f"#step-{step.index}")[0]
    item.find_element(By.CSS_SELECTOR, "details.step-details > summary").click()
    wait_for(browser, "[data-role='signal'] svg.main-svg", root=item)
    wait_for(browser, "[data-role='features'] svg.main-svg", root=item)


def test_the_browser_enforces_the_policy(browser, live_server, board):
    browser.get(live_server.url + reverse("leaderboard:index"))
    wait_for(browser, "svg.main-svg")
    ran = browser.execute_script("""
        window.injected = false;
        const script = document.createElement('script');
        script.textContent = 'window.injected = true';
        document.body.appendChild(script);
        const button = document.createElement('button');
        button.setAttribute('onclick', 'window.injected = true');
        document.body.appendChild(button);
        button.click();
        return window.injected;
    """)
    # eval from a timer the page runs: WebDriver's own script is exempt from the page's policy.
    browser.execute_script("""
        window.evaluated = null;
        setTimeout(() => { try { window.evaluated = eval('1 + 1'); } catch (error) { window.evaluated = error.name; } });
    """)
    evaluated = WebDriverWait(browser, WAIT_SEC).until(lambda _: browser.execute_script("return window.evaluated"))
    assert (ran, evaluated) == (False, "EvalError")
    refused = console_errors(browser)
    assert len(refused) >= 2 and all("Content Security Policy" in message for message in refused), refused
