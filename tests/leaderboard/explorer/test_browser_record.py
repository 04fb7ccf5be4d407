"""The record browser in headless Chromium against the live server, on a desktop (1,400 px) and a phone (390 px):
paging, zooming, changing the montage, following a tool call's band to its step, swiping.

The infrastructure (``browser``, ``wait_for``, the ``bench`` suite) is ``test_browser``'s; the EDF night
of 10-20 channels is ``test_record_browser``'s.
"""
import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.leaderboard.explorer.test_record_browser import night  # noqa: F401 (fixture)
from tests.leaderboard.test_browser import WAIT_SEC, browser, no_console_errors, pytestmark, wait_for  # noqa: F401


def drawn(browser) -> list[str]:
    """The channels the traces show now (record.js writes them on the canvas' container once drawn)."""
    return [name for name in (browser.find_element(By.CSS_SELECTOR, "[data-role=traces]").get_attribute("data-channels") or "").split(",") if name]


def position(browser) -> str:
    return browser.find_element(By.CSS_SELECTOR, "[data-role=position]").text


def until(browser, condition, message: str):
    return WebDriverWait(browser, WAIT_SEC).until(lambda _: condition(), message)


def opened(browser, live_server, episode, width: int):
    browser.set_window_size(width, 1000)
    browser.get(live_server.url + reverse("leaderboard:episode_record", args=[episode.pk]))
    until(browser, lambda: drawn(browser), "the traces were never drawn")


@pytest.fixture
def desktop(browser):
    yield browser
    browser.set_window_size(1400, 1000)


def test_a_reader_pages_zooms_changes_the_montage_and_follows_a_band_to_its_step(desktop, live_server, night):  # noqa: F811
    browser = desktop
    opened(browser, live_server, night, 1400)
    assert drawn(browser) == ["Fp1", "F7", "T3", "T5", "O1", "Cz", "EOG left", "Resp"]
    assert position(browser).startswith("0.0 s – 30.0 s of 0:10:00")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
    until(browser, lambda: position(browser).startswith("30.0 s – 60.0 s"), "→ did not page forwards")
    browser.find_element(By.CSS_SELECTOR, "[data-action=back]").click()
    until(browser, lambda: position(browser).startswith("0.0 s – 30.0 s"), "← did not page back")
    browser.find_element(By.CSS_SELECTOR, "[data-action=zoom-in]").click()
    until(browser, lambda: position(browser).startswith("7.5 s – 22.5 s"), "zooming in did not halve the page")
    Select(browser.find_element(By.CSS_SELECTOR, "[data-control=page]")).select_by_value("whole")
    until(browser, lambda: "(page 10 min)" in position(browser), "the whole record was not one page")
    Select(browser.find_element(By.CSS_SELECTOR, "[data-control=montage]")).select_by_value("bipolar")
    until(browser, lambda: drawn(browser)[:2] == ["Fp1-F7", "F7-T3"], "the bipolar montage was not drawn")
    box = browser.find_element(By.CSS_SELECTOR, "[data-role=page-box]").size["width"]
    overview = browser.find_element(By.CSS_SELECTOR, "[data-role=overview]").size["width"]
    assert abs(box - overview) <= 3  # the whole record is the page: the box spans the overview
    step = night.steps.get(tool_name="compute_windowed_features")
    band = wait_for(browser, f".record-band[data-step='{step.index}']")[0]
    assert "compute_windowed_features" in band.text
    band.click()
    until(browser, lambda: browser.current_url.endswith(f"#step-{step.index}"), "the band did not open its step")
    assert browser.find_element(By.ID, f"step-{step.index}").is_displayed()


def test_on_a_phone_one_group_is_shown_at_a_time_and_a_swipe_pages(browser, live_server, night):  # noqa: F811
    try:
        opened(browser, live_server, night, 390)
        assert drawn(browser) == ["Fp1", "F7", "T3", "T5", "O1", "Cz"]  # the EEG group alone
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        swipe = """
            const target = document.querySelector('[data-role=traces]');
            const touch = x => new Touch({identifier: 1, target, clientX: x, clientY: 200});
            target.dispatchEvent(new TouchEvent('touchstart', {touches: [touch(300)], bubbles: true}));
            target.dispatchEvent(new TouchEvent('touchend', {changedTouches: [touch(120)], bubbles: true}));
        """
        browser.execute_script(swipe)
        until(browser, lambda: position(browser).startswith("30.0 s – 60.0 s"), "a swipe to the left did not page")
        Select(browser.find_element(By.CSS_SELECTOR, "[data-control=group]")).select_by_value("EOG")
        until(browser, lambda: drawn(browser) == ["EOG left"], "choosing a group did not show it")
    finally:
        browser.set_window_size(1400, 1000)
