"""The play pages: who may play, the same episode engine as an agent's, what a player sees, their runs."""
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmark.releases import set_references
from benchmark.scoring import score_task
from leaderboard.play.players import PLAYERS_GROUP, add_player, next_episode, play_order, player_run
from runs.environment import service as environment
from runs.episode.scoring import scoring_item
from runs.models import EnvironmentToken, Episode, Status
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    return import_demo()


def make_player(django_user_model, username: str):
    user = django_user_model.objects.create_user(username=username, password="pw-" + username)
    add_player(user)
    return user


@pytest.fixture
def ann(django_user_model):
    return make_player(django_user_model, "ann")


@pytest.fixture
def bob(django_user_model):
    return make_player(django_user_model, "bob")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def start(client, task: str, suite: str = "demo") -> Episode:
    response = client.post(reverse("play:start"), {"suite": suite, "task": task})
    assert response.status_code == 302, response.content
    pk = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    return Episode.objects.select_related("instance__task").get(pk=pk)


def act(client, episode: Episode, action: dict):
    return client.post(reverse("play:action", args=[episode.pk]), json.dumps(action), content_type="application/json")


def official_score(instance, answer: dict) -> dict:
    item = dict(score_task(instance.task.code, [scoring_item(instance, answer)])["per_item"][0])
    item.pop("scenario_id", None)
    return item


# ── who may play ─────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", ["play:index", "play:start"])
def test_a_visitor_who_is_not_signed_in_is_sent_to_the_login_page(client, demo, name):
    response = client.get(reverse(name)) if name == "play:index" else client.post(reverse(name), {"suite": "demo"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_signed_in_user_who_is_not_a_player_gets_403(demo, visitor, ann):
    episode = start(client_for(ann), "T3")
    outsider = client_for(visitor)
    assert outsider.get(reverse("play:index")).status_code == 403
    assert outsider.post(reverse("play:start"), {"suite": "demo", "task": "T3"}).status_code == 403
    assert outsider.get(reverse("play:episode", args=[episode.pk])).status_code == 403
    assert act(outsider, episode, {"action": "final_answer", "classification": "normal"}).status_code == 403
    assert "/play/" not in outsider.get(reverse("leaderboard:index")).content.decode()


def test_staff_may_play_and_players_see_the_play_link(demo, staff_user, ann):
    assert client_for(staff_user).get(reverse("play:index")).status_code == 200
    page = client_for(ann).get(reverse("leaderboard:index")).content.decode()
    assert f'href="{reverse("play:index")}"' in page


# ── an episode through the environment's engine ──────────────────────────────────────────────


def test_a_t3_episode_is_played_with_the_agents_tools_and_scored_by_the_official_scorer(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    start_reply = environment.started_episode(episode)
    assert start_reply.messages[1]["content"].split("\n")[0] in page  # the user prompt the model gets
    offered = [tool["function"]["name"] for tool in start_reply.tools]
    assert len(offered) == 10
    for name in offered:
        assert f'data-tool-name="{name}"' in page

    info = act(client, episode, {"action": "tool_call", "tool_name": "get_recording_info",
                                 "arguments": {"record_id": episode.record_id}}).json()
    psd = act(client, episode, {"action": "tool_call", "tool_name": "compute_psd",
                                "arguments": {"record_id": episode.record_id, "tmin": 0, "tmax": 10}}).json()
    assert not info["done"] and info["status"] == "ok" and "sampling" in info["observation"].lower()
    assert not psd["done"] and psd["usage"] == {"turns": 2, "tool_calls": 2}

    answer = {"classification": "epileptic", "findings": ["spikes"]}
    done = act(client, episode, {"action": "final_answer", **answer}).json()
    episode.refresh_from_db()
    assert done["done"] and done["episode_url"] == reverse("leaderboard:episode", args=[episode.pk])
    assert episode.status == Status.COMPLETED and episode.ended_by == Episode.EndedBy.FINAL_ANSWER
    assert episode.scores == official_score(episode.instance, {"action": "final_answer", **answer})
    kinds = list(episode.steps.values_list("kind", flat=True))
    assert kinds == ["prompt", "agent_message", "tool_call", "agent_message", "tool_call", "agent_message",
                     "final_answer"]
    # Ended: the play page hands over to the episode's own page, which shows the result.
    assert client.get(reverse("play:episode", args=[episode.pk]))["Location"] == reverse(
        "leaderboard:episode", args=[episode.pk])
    assert client.get(reverse("leaderboard:episode", args=[episode.pk])).status_code == 200


def test_a_bad_answer_gets_the_repair_message_and_the_episode_goes_on(demo, ann):
    client = client_for(ann)
    episode = start(client, "T6")
    n_epochs = episode.instance.n_epochs
    short = {"action": "final_answer", "hypnogram_rle": [{"start_epoch": 0, "end_epoch": 9, "stage": "W"}],
             "architecture": {"REM_pct": 0, "N3_pct": 0, "sleep_efficiency": 0}}
    reply = act(client, episode, short).json()
    episode.refresh_from_db()
    assert reply["done"] is False and reply["status"] == "invalid_final_answer"
    assert reply["errors"] == [f"$.hypnogram_rle: must cover epochs 0..{n_epochs - 1}; ended at 9"]
    assert episode.status == Status.RUNNING

    whole = {**short, "hypnogram_rle": [{"start_epoch": 0, "end_epoch": n_epochs - 1, "stage": "N2"}]}
    assert act(client, episode, whole).json()["done"] is True


def test_a_body_that_is_not_an_action_is_refused_with_a_message_and_nothing_is_played(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    response = client.post(reverse("play:action", args=[episode.pk]), "not json", content_type="application/json")
    episode.refresh_from_db()
    assert response.status_code == 400 and "JSON object" in response.json()["detail"]
    assert episode.n_turns == 0 and episode.status == Status.RUNNING


def test_a_tool_call_shows_its_result_as_the_explorer_does(demo, ann):
    client = client_for(ann)
    episode = start(client, "T5")
    channels = act(client, episode, {"action": "tool_call", "tool_name": "get_channel_list",
                                     "arguments": {"record_id": episode.record_id}}).json()["result"]["channels"]
    act(client, episode, {"action": "tool_call", "tool_name": "compute_windowed_features",
                          "arguments": {"record_id": episode.record_id, "channels": [channels[0]["name"]],
                                        "tmin": 0, "tmax": 60, "window_sec": 10}})
    steps = client.get(reverse("play:steps", args=[episode.pk])).content.decode()
    details_url = reverse("play:step", args=[episode.pk, 4])
    assert f'data-src="{details_url}"' in steps
    details = client.get(details_url).content.decode()
    assert reverse("play:signal", args=[episode.pk, 4]) in details and "<table" in details
    signal = client.get(reverse("play:signal", args=[episode.pk, 4]))
    assert signal.status_code == 200 and signal.json()["features_figure"]
    assert signal["Cache-Control"].startswith("private")


def test_forms_come_from_the_schemas_with_the_records_channels_and_ranges(demo, ann):
    client = client_for(ann)
    episode = start(client, "T5")
    before = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    content = act(client, episode, {"action": "tool_call", "tool_name": "get_channel_list",
                                    "arguments": {"record_id": episode.record_id}}).json()["result"]
    channels = [row["name"] for row in content["channels"]]
    # As a model, the player's tool forms learn the channel names from a tool: typed until then, then
    # chosen. (The record browser below them shows the recording, its channels named, from the start.)
    forms = lambda html: html[html.index('id="play-tools"'):html.index('id="play-answer"')]  # noqa: E731
    assert "data-channels-typed" in forms(before) and not any(f'value="{name}"' in forms(before) for name in channels)
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    assert "data-channels-typed" not in forms(page)
    for name in channels:
        assert f'type="checkbox" value="{name}"' in forms(page)
    duration = episode.instance.duration_sec
    assert f'max="{duration}"' in page  # tmin, tmax and the seizure bounds stop at the record's end
    assert 'data-name="seizure_events" data-kind="rows"' in page


def test_the_answer_preview_draws_the_hypnogram_of_the_rows(demo, ann):
    client = client_for(ann)
    episode = start(client, "T6")
    rows = [{"start_epoch": 0, "end_epoch": 99, "stage": "W"}, {"start_epoch": 100, "end_epoch": 400, "stage": "N2"}]
    figure = client.post(reverse("play:preview", args=[episode.pk]), json.dumps({"hypnogram_rle": rows}),
                         content_type="application/json").json()["figure"]
    assert figure["data"][0]["y"][:4] == ["W", "W", "N2", "N2"]
    assert len(figure["data"]) == 1  # the answer only, never the reference


# ── what a player sees ───────────────────────────────────────────────────────────────────────


def test_a_player_never_reaches_another_players_unfinished_episode(demo, ann, bob):
    anns = start(client_for(ann), "T5")
    act(client_for(ann), anns, {"action": "tool_call", "tool_name": "get_channel_list",
                                "arguments": {"record_id": anns.record_id}})
    bobs = client_for(bob)
    for url in (
        reverse("play:episode", args=[anns.pk]),
        reverse("play:steps", args=[anns.pk]),
        reverse("play:step", args=[anns.pk, 2]),
        reverse("play:signal", args=[anns.pk, 2]),
        reverse("leaderboard:episode", args=[anns.pk]),
        reverse("leaderboard:episode_step", args=[anns.pk, 2]),
    ):
        assert bobs.get(url).status_code == 404, url
    assert act(bobs, anns, {"action": "final_answer", "seizure_events": []}).status_code == 404
    assert anns.record_id not in bobs.get(reverse("play:index")).content.decode()
    assert anns.record_id in client_for(ann).get(reverse("play:index")).content.decode()


def test_no_reference_reaches_the_player_before_the_episode_ends(demo, ann, settings):
    settings.EEGAB_PUBLIC_REFERENCES = True
    client = client_for(ann)
    episode = start(client, "T6")
    reference_key = "epoch_labels_aasm"
    assert reference_key in json.dumps(episode.instance.reference)
    for url in (reverse("play:episode", args=[episode.pk]), reverse("play:index")):
        assert reference_key not in client.get(url).content.decode()
    assert client.get(reverse("leaderboard:episode", args=[episode.pk])).status_code == 404

    n_epochs = episode.instance.n_epochs
    act(client, episode, {"action": "final_answer",
                          "hypnogram_rle": [{"start_epoch": 0, "end_epoch": n_epochs - 1, "stage": "W"}],
                          "architecture": {"REM_pct": 0, "N3_pct": 0, "sleep_efficiency": 0}})
    ended = client.get(reverse("leaderboard:episode", args=[episode.pk]))
    assert ended.status_code == 200 and "reference" in ended.content.decode()


def browser_data(html: str) -> dict:
    start = html.index('<script id="record-browser-data" type="application/json">')
    return json.loads(html[html.index(">", start) + 1 : html.index("</script>", start)])


def test_the_player_reads_the_recording_in_the_browser_without_references(demo, ann, bob, settings):
    settings.EEGAB_PUBLIC_REFERENCES = True
    client = client_for(ann)
    episode = start(client, "T5")
    browser = browser_data(client.get(reverse("play:episode", args=[episode.pk])).content.decode())
    assert browser["lanes"] == [] and browser["clock"] is None and browser["bands"] == []
    assert browser["window_url"] == reverse("play:record_window", args=[episode.pk])
    act(client, episode, {"action": "tool_call", "tool_name": "compute_psd",
                          "arguments": {"record_id": episode.record_id, "tmin": 60, "tmax": 90}})
    page = client.get(browser["window_url"], {"start": 0, "stop": 600, "width": 300})
    assert page.status_code == 200 and page["Cache-Control"] == "private, no-store"
    body = page.json()
    assert all(channel["kind"] == "envelope" for channel in body["channels"])  # never the samples
    (band,) = body["bands"]  # the call just made, linked to its step on the play page
    assert (band["tool"], band["start"], band["stop"]) == ("compute_psd", 60.0, 90.0)
    assert band["url"] == reverse("play:episode", args=[episode.pk]) + f"#step-{band['step']}"
    assert client.get(browser["window_url"], {"width": "7"}).status_code == 400
    assert client_for(bob).get(browser["window_url"]).status_code == 404
    assert client.get(reverse("leaderboard:episode_record_window", args=[episode.pk])).status_code == 404
    assert "seizure_events" not in json.dumps(body)


# ── the order of play, and a player's runs ───────────────────────────────────────────────────


def test_each_player_has_an_order_of_their_own_and_never_gets_an_instance_twice(demo, ann, bob):
    orders = {user.username: play_order(user=user, suite=demo, task="T2") for user in (ann, bob)}
    assert orders["ann"] == play_order(user=ann, suite=demo, task="T2")  # the same at every visit
    assert orders["ann"] != orders["bob"] and sorted(orders["ann"]) == sorted(orders["bob"])

    client = client_for(ann)
    played = [start(client, "T6").instance_id for _ in range(demo.instances.filter(task__code="T6").count())]
    assert played == play_order(user=ann, suite=demo, task="T6")
    assert next_episode(user=ann, suite=demo, task="T6") is None
    response = client.post(reverse("play:start"), {"suite": "demo", "task": "T6"}, follow=True)
    assert "You have played every T6 instance of demo." in response.content.decode()


def test_a_players_episodes_form_one_human_run_per_suite_whose_key_is_revoked(demo, ann):
    client = client_for(ann)
    first, second = start(client, "T3"), start(client, "T2")
    run = player_run(user=ann, suite=demo)
    assert first.run_id == second.run_id == run.pk
    assert run.model.provider_model == run.model.name == "human/ann" and run.model.family == "human"
    assert run.source == run.Source.EXTERNAL and EnvironmentToken.objects.get(run=run).revoked


def test_the_leaderboard_and_run_page_mark_a_players_run_human(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    act(client, episode, {"action": "final_answer", "classification": "normal"})
    board = Client().get(reverse("leaderboard:index") + "?suite=demo").content.decode()
    run_page = Client().get(reverse("leaderboard:run", args=[episode.run_id])).content.decode()
    assert "human/ann" in board and 'class="badge human"' in board
    assert 'class="badge human"' in run_page


def test_a_players_episode_and_run_cost_nothing_and_say_why(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    act(client, episode, {"action": "final_answer", "classification": "normal"})
    episode_page = Client().get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    run_page = Client().get(reverse("leaderboard:run", args=[episode.run_id])).content.decode()
    assert "<dt>Cost</dt><dd>free <span" in episode_page and "played by a person: no model is called" in episode_page
    assert "<dt>Cost</dt><dd>free <span class=\"muted\">(played by a person: no model is called)</span>" in run_page
    for page in (episode_page, run_page):
        assert "unpriced" not in page and "$0" not in page


def test_the_play_page_says_its_budget_is_the_official_limits(demo, ann):
    client = client_for(ann)
    for task, tool_calls in (("T3", "999 tool calls"), ("T1", "0 tool calls")):
        page = client.get(reverse("play:episode", args=[start(client, task).pk])).content.decode()
        assert f"These are the official limits of a {task} episode, the ones every model plays\n  under: 1000 turns " \
               f"and {tool_calls} (the official runner's" in page


def test_a_run_with_caps_of_its_own_says_its_limits_are_not_the_official(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    episode.run.limits = {"max_turns": 20}
    episode.run.save(update_fields=["limits"])
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    assert "0</span> / 20</dd>" in page and "official limits" not in page
    assert "This run's limits: the official ones of a T3 episode are\n  1000 turns and 999 tool calls." in page


CONFIRM = 'data-confirm="Submit this final answer? It ends the episode: no more tool calls or changes. '


def test_submitting_asks_first_then_says_the_answer_was_received_with_its_score(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    assert CONFIRM + 'Its page then shows your score.">' in page  # static/js/play.js asks it
    done = act(client, episode, {"action": "final_answer", "classification": "normal"}).json()
    assert done["received"] is True
    result = client.get(done["episode_url"]).content.decode()
    assert (f'<li class="message success">Your final answer to T3 (episode {episode.pk}) was received. '
            "Its score is on this page.</li>") in result
    assert "was received" not in client.get(done["episode_url"]).content.decode()  # said once


def test_an_answer_kept_after_three_malformed_tries_is_received_as_it_stands(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    for _ in range(4):  # the fourth malformed answer in a row ends the episode, as the official runner does
        done = act(client, episode, {"action": "final_answer", "classification": "unsure"}).json()
    assert done["done"] is True and done["received"] is True and done["ended_by"] == "format_failure"
    messages = [str(message) for message in client.get(done["episode_url"]).context["messages"]]
    assert messages == [f"Your final answer to T3 (episode {episode.pk}) was received. It still did not fit the "
                        "answer format after three repair messages, so it is scored as it stands. Its score is on "
                        "this page."]


def test_an_episode_ended_without_an_answer_says_nothing_was_received(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    episode.run.limits = {"max_turns": 1}
    episode.run.save(update_fields=["limits"])
    done = act(client, episode, {"action": "tool_call", "tool_name": "get_recording_info",
                                 "arguments": {"record_id": episode.record_id}}).json()
    assert done["done"] is True and done["received"] is False
    assert list(client.get(done["episode_url"]).context["messages"]) == []


def test_on_a_held_out_suite_the_player_is_told_the_answer_was_received_and_given_no_score(demo, ann):
    set_references(demo, "held-out")
    client = client_for(ann)
    episode = start(client, "T1")
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    assert CONFIRM + "This suite's references are held out: you will be told it was received, and given no score." \
                     '">' in page
    reference = episode.instance.reference["answer"]
    done = act(client, episode, {"action": "final_answer", "answer": reference}).json()
    assert done["scores"] is None and done["episode_url"] == reverse("play:index") + "#finished"
    index = client.get(done["episode_url"])
    assert [str(message) for message in index.context["messages"]] == [
        f"Your final answer to T1 (episode {episode.pk}) was received. This suite's references are held out: "
        "no score is shown for it."]
    assert "was received. This suite&#x27;s references are held out" in index.content.decode()
    assert "score is on" not in index.content.decode() and "1.000" not in index.content.decode()


def test_where_references_are_not_public_the_player_is_told_so(demo, ann, settings):
    settings.EEGAB_PUBLIC_REFERENCES = False
    client = client_for(ann)
    episode = start(client, "T3")
    page = client.get(reverse("play:episode", args=[episode.pk])).content.decode()
    assert CONFIRM + 'This site does not show scores of single episodes.">' in page
    done = act(client, episode, {"action": "final_answer", "classification": "normal"}).json()
    messages = [str(message) for message in client.get(done["episode_url"]).context["messages"]]
    assert messages == [f"Your final answer to T3 (episode {episode.pk}) was received. This site does not show "
                        "scores of single episodes."]


def test_a_players_episode_is_never_ended_for_idleness(demo, ann, settings):
    client = client_for(ann)
    episode = start(client, "T3")
    later = timezone.now() + timedelta(seconds=settings.EEGAB_ENV_IDLE_SEC * 10)
    assert environment.end_idle_episodes(now=later) == 0
    episode.refresh_from_db()
    assert episode.status == Status.RUNNING


# ── inviting players ─────────────────────────────────────────────────────────────────────────


def test_invite_player_creates_the_user_and_the_group_and_prints_a_password(db, client):
    Group.objects.filter(name=PLAYERS_GROUP).delete()
    out = StringIO()
    call_command("invite_player", "carol", "--email", "carol@example.org", stdout=out)
    password = out.getvalue().split("send it to the player): ")[1].split()[0]
    signed_in = client.post(reverse("login"), {"username": "carol", "password": password})
    assert signed_in.status_code == 302
    assert client.get(reverse("play:index")).status_code == 200

    again = StringIO()
    call_command("invite_player", "carol", stdout=again)
    assert "Password" not in again.getvalue()
    assert Group.objects.get(name=PLAYERS_GROUP).user_set.filter(username="carol", email="carol@example.org").exists()


def test_the_admin_adds_chosen_users_to_players(admin_client, visitor):
    response = admin_client.post(reverse("admin:auth_user_changelist"),
                                 {"action": "add_to_players", "_selected_action": [visitor.pk]})
    assert response.status_code == 302
    assert visitor.groups.filter(name=PLAYERS_GROUP).exists()


def reference_answer(instance) -> dict:
    """The reference of ``instance`` as a final answer of its task (a player who knows the answer)."""
    from runs.baselines.common import hypnogram_answer

    reference, task = instance.reference, instance.task.code
    if task == "T1":
        return {"answer": reference["answer"]}
    if task in ("T2", "T3", "T4"):
        return {"classification": reference["label"], "findings": []}
    if task == "T5":
        return {"seizure_events": [{"onset_sec": on, "offset_sec": off} for on, off in reference["seizure_events"]]}
    return hypnogram_answer(reference["epoch_labels_aasm"])


@pytest.mark.parametrize("task", ["T1", "T2", "T3", "T4", "T5", "T6"])
def test_every_task_has_an_answer_form_from_its_schema_and_a_right_answer_scores_as_the_official_scorer_says(
    demo, ann, task
):
    client = client_for(ann)
    episode = start(client, task)
    page = client.get(reverse("play:episode", args=[episode.pk]))
    assert page.status_code == 200 and page.context["answer_fields"]
    answer = {key: value for key, value in reference_answer(episode.instance).items() if key != "action"}
    names = {field.name for field in page.context["answer_fields"]}
    assert set(answer) <= names | {"findings"}  # every part of the answer has an input

    done = act(client, episode, {"action": "final_answer", **answer}).json()

    episode.refresh_from_db()
    assert done["done"] is True and episode.status == Status.COMPLETED
    assert episode.scores == official_score(episode.instance, {"action": "final_answer", **answer})


def test_a_run_made_by_a_concurrent_request_is_found_again_under_the_lock(demo, ann, monkeypatch):
    from leaderboard.play import players as play
    from runs.models import Run

    first = player_run(user=ann, suite=demo)
    real, looked = play.player_runs, []

    def racing(user):  # the unlocked look misses the run another request has just made
        looked.append(user)
        return real(user).none() if len(looked) == 1 else real(user)

    monkeypatch.setattr(play, "player_runs", racing)
    assert player_run(user=ann, suite=demo) == first and len(looked) == 2
    assert Run.objects.filter(model__provider_model="human/ann", suite=demo).count() == 1


def test_a_number_that_is_not_json_nan_is_refused_as_the_environment_api_refuses_it(demo, ann):
    client = client_for(ann)
    episode = start(client, "T3")
    body = '{"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": "%s", "tmin": NaN}}'
    response = client.post(reverse("play:action", args=[episode.pk]), body % episode.record_id,
                           content_type="application/json")
    episode.refresh_from_db()
    assert response.status_code == 400 and episode.n_turns == 0 and not episode.steps.filter(kind="tool_call").exists()
