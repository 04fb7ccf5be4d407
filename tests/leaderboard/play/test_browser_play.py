"""Playing episodes in a real browser: a player signs in, plays a demo T3 and T6 episode from the forms alone.

The scores the site records are the official scorer's on the answers the forms sent; a form value out
of range is refused on the page with a message, and the episode goes on. The final answer is sent once
the player says yes to the page's question, and the page it opens says it was received.
"""
import pytest
from django.urls import reverse
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from leaderboard.play.players import add_player
from runs.models import Episode, Status
from tests.leaderboard.test_browser import WAIT_SEC, browser, no_console_errors, pytestmark, wait_for  # noqa: F401 (fixture, marks)
from tests.leaderboard.play.test_play import official_score
from tests.runs.demo_suite import import_demo

PASSWORD = "a-players-password"


@pytest.fixture
def player(django_user_model):
    import_demo()
    user = django_user_model.objects.create_user(username="pat", password=PASSWORD)
    add_player(user)
    return user


def sign_in_and_start(browser, live_server, task: str) -> Episode:
    """Sign in as the player from the login page, pick the demo suite's ``task`` on /play/, and land on its page.

    The browser first leaves the last test's page: a request that page still had in flight (the answer's
    live preview, posted 250 ms after an edit) would otherwise be answered after the cookies are cleared,
    through a redirect to the login page, with a CSRF cookie that no longer matches this login form's.
    """
    browser.get("about:blank")
    browser.delete_all_cookies()
    browser.get(live_server.url + reverse("login") + "?next=" + reverse("play:index"))
    browser.find_element(By.NAME, "username").send_keys("pat")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    wait_for(browser, f"button[data-play='demo/{task}']")[0].click()
    wait_for(browser, "#play-answer")
    return Episode.objects.get(run__model__name="human/pat", instance__task__code=task, status=Status.RUNNING)


def tool_form(browser, name: str):
    details = browser.find_element(By.CSS_SELECTOR, f"details.play-tool[data-tool='{name}']")
    if not details.get_attribute("open"):
        details.find_element(By.TAG_NAME, "summary").click()
    return details.find_element(By.CSS_SELECTOR, "form")


def n_tool_calls_shown(browser) -> int:
    return len(browser.find_elements(By.CSS_SELECTOR, "#play-steps .step.kind-tool_call"))


def wait_until(browser, condition):
    return WebDriverWait(browser, WAIT_SEC).until(lambda _: condition())


def submit_the_answer(browser, *, accept: bool = True) -> str:
    """Press "Submit the final answer" and answer the page's question (the answer ends the episode); return it."""
    browser.find_element(By.CSS_SELECTOR, "#play-answer button[type=submit]").click()
    alert = WebDriverWait(browser, WAIT_SEC).until(expected_conditions.alert_is_present())
    question = alert.text
    alert.accept() if accept else alert.dismiss()
    return question


def wait_for_result_page(browser, live_server, episode: Episode) -> None:
    """Wait until the ended episode's own page has opened (the play page's address ends the same way)."""
    result_url = live_server.url + reverse("leaderboard:episode", args=[episode.pk])
    wait_until(browser, lambda: browser.current_url == result_url)


def test_a_player_plays_a_t3_episode_with_two_tool_calls_then_the_answer(browser, live_server, player):
    episode = sign_in_and_start(browser, live_server, "T3")
    assert "System prompt" in browser.find_element(By.ID, "prompt").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "details.play-tool")) == 10

    tool_form(browser, "get_recording_info").find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(browser, lambda: n_tool_calls_shown(browser) == 1)
    assert "the environment answered" in browser.find_element(By.ID, "play-reply").text.lower()

    # A value out of range is refused on the page, with the range, and uses nothing of the budget.
    psd = tool_form(browser, "compute_psd")
    psd.find_element(By.CSS_SELECTOR, ".play-field[data-name=tmax] input").send_keys("500")
    psd.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    reply = browser.find_element(By.ID, "play-reply")
    wait_until(browser, lambda: "out of range" in reply.text)
    assert "tmax: 500 is out of range; give a number from 0 to 23.59" in reply.text
    assert browser.find_element(By.CSS_SELECTOR, "[data-usage=turns]").text == "1"

    tmax = psd.find_element(By.CSS_SELECTOR, ".play-field[data-name=tmax] input")
    tmax.clear()
    tmax.send_keys("10")
    psd.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(browser, lambda: n_tool_calls_shown(browser) == 2)
    # The newest result opens as the explorer shows it: its tables, and the signal plot of what it read.
    newest = browser.find_elements(By.CSS_SELECTOR, "#play-steps .step.kind-tool_call")[-1]
    wait_for(browser, "table.rows", root=newest)
    wait_for(browser, "[data-role='signal'] svg.main-svg", root=newest)
    assert browser.find_element(By.CSS_SELECTOR, "[data-usage=tool_calls]").text == "2"

    answer = browser.find_element(By.ID, "play-answer")
    answer.find_element(By.CSS_SELECTOR, "input[type=radio][value=epileptic]").click()
    answer.find_element(By.CSS_SELECTOR, ".play-field[data-name=findings] textarea").send_keys("spikes\nsharp waves")
    # The answer ends the episode, so the page asks first: declined, nothing is sent.
    question = submit_the_answer(browser, accept=False)
    assert question.startswith("Submit this final answer? It ends the episode") and question.endswith(
        "Its page then shows your score.")
    episode.refresh_from_db()
    assert episode.status == Status.RUNNING and episode.n_turns == 2
    submit_the_answer(browser)
    wait_for_result_page(browser, live_server, episode)
    assert browser.find_element(By.CSS_SELECTOR, ".message.success").text == (
        f"Your final answer to T3 (episode {episode.pk}) was received. Its score is on this page.")
    assert browser.find_element(By.ID, "episode-score").text.endswith("Macro-F1")

    episode.refresh_from_db()
    sent = {"action": "final_answer", "classification": "epileptic", "findings": ["spikes", "sharp waves"]}
    assert episode.status == Status.COMPLETED and episode.final_answer == sent
    assert episode.n_tool_calls == 2 and episode.n_turns == 3
    assert episode.scores == official_score(episode.instance, sent)


def test_a_player_writes_a_t6_hypnogram_of_three_rows_with_a_live_preview(browser, live_server, player):
    episode = sign_in_and_start(browser, live_server, "T6")
    n_epochs = episode.instance.n_epochs
    answer = browser.find_element(By.ID, "play-answer")
    rows = [(0, 299, "W"), (300, 699, "N2"), (700, n_epochs - 1, "REM")]
    add = answer.find_element(By.CSS_SELECTOR, ".play-field[data-name=hypnogram_rle] [data-add-row]")
    for _ in rows:
        add.click()
    for row, (first, last, stage) in zip(answer.find_elements(By.CSS_SELECTOR, ".play-row"), rows):
        row.find_element(By.CSS_SELECTOR, "[data-name=start_epoch] input").send_keys(str(first))
        row.find_element(By.CSS_SELECTOR, "[data-name=end_epoch] input").send_keys(str(last))
        Select(row.find_element(By.CSS_SELECTOR, "[data-name=stage] select")).select_by_value(stage)

    # The preview redraws the night from the rows; the architecture they imply is filled in.
    def preview_stages():
        return browser.execute_script(
            "var plot = document.getElementById('play-preview'); return plot.data ? plot.data[0].y : null;")

    wait_until(browser, lambda: preview_stages() == ["W", "W", "N2", "N2", "REM", "REM"])
    rem = answer.find_element(By.CSS_SELECTOR, "[data-name=REM_pct] input").get_attribute("value")
    assert float(rem) == pytest.approx((n_epochs - 700) / n_epochs, abs=1e-4)

    submit_the_answer(browser)
    wait_for_result_page(browser, live_server, episode)
    episode.refresh_from_db()
    assert episode.prediction["hypnogram_rle"] == [
        {"start_epoch": first, "end_epoch": last, "stage": stage} for first, last, stage in rows
    ]
    assert episode.scores == official_score(episode.instance, episode.final_answer)
    assert 0 < episode.scores["macro_f1"] < 1


def test_on_t5_a_drag_across_the_feature_plot_adds_a_seizure_interval(browser, live_server, player):
    sign_in_and_start(browser, live_server, "T5")
    # The channel names are typed until the player has asked a tool for them, then offered as choices.
    assert tool_form(browser, "compute_windowed_features").find_elements(By.CSS_SELECTOR, "[data-channels-typed]")
    tool_form(browser, "get_channel_list").find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(browser, "details.play-tool[data-tool='compute_windowed_features'] .play-field[data-name=channels] input[type=checkbox]")
    assert "the environment answered" in browser.find_element(By.ID, "play-reply").text.lower()  # kept across the reload
    windowed = tool_form(browser, "compute_windowed_features")
    windowed.find_elements(By.CSS_SELECTOR, ".play-field[data-name=channels] input[type=checkbox]")[0].click()
    windowed.find_element(By.CSS_SELECTOR, ".play-field[data-name=window_sec] input").send_keys("30")
    windowed.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    plot = wait_for(browser, "#play-steps [data-role=features].js-plotly-plot[data-drag-hooked]")[0]
    area = plot.find_element(By.CSS_SELECTOR, ".nsewdrag")
    width = area.size["width"]
    ActionChains(browser).move_to_element_with_offset(area, -width // 4, 0).click_and_hold() \
        .move_by_offset(width // 4, 0).release().perform()
    row = wait_for(browser, "#play-answer .play-row")[0]
    onset = float(row.find_element(By.CSS_SELECTOR, "[data-name=onset_sec] input").get_attribute("value"))
    offset = float(row.find_element(By.CSS_SELECTOR, "[data-name=offset_sec] input").get_attribute("value"))
    assert 0 <= onset < offset


def test_the_play_page_fits_a_phone(browser, live_server, player):
    sign_in_and_start(browser, live_server, "T6")
    browser.set_window_size(390, 844)
    try:
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        answer = browser.find_element(By.ID, "play-answer")
        assert browser.execute_script("return arguments[0].getBoundingClientRect().right <= window.innerWidth", answer)
    finally:
        browser.set_window_size(1400, 1000)
