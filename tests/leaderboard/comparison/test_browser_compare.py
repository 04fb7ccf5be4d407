"""Two runs compared from the leaderboard in a real browser, down to a regression's two episodes side by side.

Uses the headless Chromium of ``test_browser`` (skipped without it) and its bench board: Alpha-1,
which answers every task well, above Beta-2, which gets some wrong.
"""
from django.urls import reverse
from selenium.webdriver.common.by import By

from tests.leaderboard.test_browser import board, browser, no_console_errors, pytestmark, wait_for  # noqa: F401 (fixtures, marks)


def test_a_comparison_opens_from_the_leaderboard_and_follows_a_regression(browser, live_server, board):
    browser.set_window_size(1400, 1000)
    browser.get(live_server.url + reverse("leaderboard:index"))
    ticks = wait_for(browser, "input[name='run'][form='compare-bench']")
    assert len(ticks) == 2
    for tick in ticks:
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", tick)
        tick.click()
    browser.find_element(By.CSS_SELECTOR, "form#compare-bench button[type='submit']").click()
    wait_for(browser, "#task-comparison")
    # the upper row (Alpha-1) is B: it improved on what Beta-2 got wrong
    assert browser.find_element(By.ID, "run-b").text.startswith(f"run {board.alpha.pk}")
    assert browser.find_elements(By.CSS_SELECTOR, "#instance-comparison tr[data-change='improved']")
    browser.find_element(By.ID, "swap").click()
    regressed = wait_for(browser, "#instance-comparison tr[data-change='regressed'] a.side-by-side")
    assert browser.find_element(By.ID, "run-a").text.startswith(f"run {board.alpha.pk}")
    instance = int(regressed[0].find_element(By.XPATH, "ancestor::tr").get_attribute("data-instance"))
    regressed[0].click()
    sides = wait_for(browser, ".compare > div")
    assert len(sides) == 2
    alpha = board.alpha.episodes.get(instance_id=instance)
    beta = board.beta.episodes.get(instance_id=instance)
    assert browser.current_url.endswith(f"?a={alpha.pk}&b={beta.pk}")
    assert alpha.record_id in browser.find_element(By.TAG_NAME, "h1").text
    assert "Alpha-1" in sides[0].text and "Beta-2" in sides[1].text
