"""The episode page's outcome chart and the favicon, in headless Chromium against the live server.

The infrastructure (``browser``, ``wait_for``, the ``bench`` suite) is ``test_browser``'s; the
seizure-free record is ``test_episode_pages``'s.
"""
from django.urls import reverse
from selenium.webdriver.common.by import By

from tests.leaderboard.test_browser import browser, no_console_errors, pytestmark, wait_for  # noqa: F401 (fixture, marks)
from tests.leaderboard.explorer.test_episode_pages import quiet_record, silent  # noqa: F401 (fixtures)


def test_seizure_free_outcome_chart_draws_two_lanes_with_text(browser, live_server, silent):  # noqa: F811
    browser.get(live_server.url + reverse("leaderboard:episode", args=[silent.pk]))
    chart = wait_for(browser, f"[data-figure='outcome-{silent.pk}'] svg.main-svg")[0].find_element(By.XPATH, "..")
    lanes = chart.find_elements(By.CSS_SELECTOR, ".ytick text")
    assert sorted(lane.text for lane in lanes) == ["predicted", "reference"]
    notes = {note.text: note for note in chart.find_elements(By.CSS_SELECTOR, ".annotation-text")}
    assert set(notes) == {"reference: no seizure", "predicted: none"}
    # Each lane's text sits in its lane: the reference above the prediction, both inside the plot.
    top = {text: browser.execute_script("return arguments[0].getBoundingClientRect().top", note)
           for text, note in notes.items()}
    assert top["reference: no seizure"] < top["predicted: none"]
    plot = browser.execute_script("return arguments[0].querySelector('.nsewdrag').getBoundingClientRect()", chart)
    assert all(plot["top"] <= y <= plot["bottom"] for y in top.values())
    score = browser.find_element(By.ID, "episode-score").text
    assert browser.find_element(By.ID, "episode-outcome").text == "correct" and "no events, no false alarms" in score


def test_browser_gets_the_favicon(browser, live_server, db):
    browser.get(live_server.url + reverse("leaderboard:compare"))
    icon = browser.execute_script(
        "return fetch('/favicon.ico').then(r => r.text().then(body => [r.status, r.headers.get('content-type'), body]))"
    )
    assert icon[0] == 200 and icon[1].startswith("image/svg+xml") and "<svg" in icon[2]
