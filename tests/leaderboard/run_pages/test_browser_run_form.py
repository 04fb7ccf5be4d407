"""The new-run form and the cancel buttons in a real browser (headless Debian Chromium).

Each select of the form is wide enough to show its longest option whole: at 1400 px every one of
them, at 390 px the prompt-set and tool-protocol selects, whose options are the form's own words
(a model's or suite's name may be longer than a phone). Cancelling a run, from the runs list or its
page, asks first: dismissed, the run goes on; accepted, it is cancelled.
"""
import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from runs.models import Run, Status
from tests.leaderboard.test_browser import (  # noqa: F401 (fixtures, marks)
    WAIT_SEC,
    board,
    browser,
    no_console_errors,
    pytestmark,
    wait_for,
)

# Each select's inner width, less its padding and the arrow's room, and the width of its widest
# option drawn in the select's font.
SELECT_ROOM = """
var arrow = 20;
return Array.prototype.map.call(document.querySelectorAll("#new-run-form select"), function (select) {
  var style = getComputedStyle(select);
  var pen = document.createElement("canvas").getContext("2d");
  pen.font = style.font;
  var widest = Math.max.apply(null, Array.prototype.map.call(select.options, function (option) {
    return pen.measureText(option.text).width;
  }));
  var room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - arrow;
  return [select.name, room, widest, select.options.length];
});
"""


def log_in(browser, live_server, next_path: str) -> None:
    browser.get("about:blank")
    browser.delete_all_cookies()
    browser.get(live_server.url + reverse("login") + "?next=" + next_path)
    browser.find_element(By.NAME, "username").send_keys("staff")
    browser.find_element(By.NAME, "password").send_keys("staff-password")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()


def test_the_run_form_selects_show_their_options_whole(browser, live_server, board, staff_user, official_standin):
    log_in(browser, live_server, reverse("leaderboard:new_run"))
    wait_for(browser, "#new-run-form")
    # Runnable models first, the paper's (no model string yet) after them, each saying so.
    groups = browser.find_elements(By.CSS_SELECTOR, "#id_model optgroup")
    assert [group.get_attribute("label") for group in groups] == [
        "Runnable here", "Give a model string below (the paper's models)"]
    assert [option.text for option in groups[0].find_elements(By.TAG_NAME, "option")] == [
        "Alpha-1 — openai/alpha-1", "Beta-2 — openai/beta-2"]
    paper = [option.text for option in groups[1].find_elements(By.TAG_NAME, "option")]
    assert len(paper) == 29 and "GPT-5.5 — no model string" in paper
    prompt_sets = browser.find_elements(By.CSS_SELECTOR, "#id_prompt_set option")
    assert [option.text for option in prompt_sets] == ["official (the paper's wording)", "platform (paraphrased)"]
    try:
        for width, names in ((1400, {"model", "suite", "prompt_set", "tool_protocol"}),
                             (390, {"prompt_set", "tool_protocol"})):
            browser.set_window_size(width, 1000)
            measured = {name: (room, widest, n) for name, room, widest, n in browser.execute_script(SELECT_ROOM)}
            assert set(measured) == {"model", "suite", "prompt_set", "tool_protocol"}
            for name in names:
                room, widest, n_options = measured[name]
                assert n_options >= 2 and widest > 50, name
                assert widest <= room, f"{name} at {width} px: options {widest:.0f} px wide in {room:.0f} px"
    finally:
        browser.set_window_size(1400, 1000)


def answer_the_question(browser, button, *, accept: bool) -> str:
    """Press ``button``, answer the page's confirmation, and return its question."""
    button.click()
    alert = WebDriverWait(browser, WAIT_SEC).until(expected_conditions.alert_is_present())
    question = alert.text
    alert.accept() if accept else alert.dismiss()
    return question


@pytest.mark.parametrize("where", ["runs list", "run page"])
def test_cancelling_a_run_asks_first(browser, live_server, run, staff_user, where):
    url = reverse("leaderboard:runs") if where == "runs list" else reverse("leaderboard:run", args=[run.pk])
    log_in(browser, live_server, url)
    selector = f"tr[data-run='{run.pk}'] button[data-action=cancel]" if where == "runs list" else "#cancel-run"
    question = answer_the_question(browser, wait_for(browser, selector)[0], accept=False)
    assert question.startswith(f"Cancel run {run.pk}, tiny run (Heuristic baseline)? Its waiting episodes end")
    assert Run.objects.get(pk=run.pk).status == Status.PENDING and browser.current_url == live_server.url + url

    answer_the_question(browser, browser.find_element(By.CSS_SELECTOR, selector), accept=True)
    wait_for(browser, ".message.success")
    assert Run.objects.get(pk=run.pk).status == Status.CANCELLED
    assert browser.current_url == live_server.url + reverse("leaderboard:run", args=[run.pk])
