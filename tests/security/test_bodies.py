"""Every JSON endpoint refuses a body it should not read with a 4xx and a JSON message: no turn, no write, no 500.

The attacks of issue 31 and their neighbours, sent to the environment API (opening a run, starting
an episode, an action) and to the play pages (an action, the answer's preview) through Django's
test client; ``test_served_bodies.py`` sends them to gunicorn with DEBUG off.
"""
import io
import json
from functools import partial

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.play.players import add_player, start_play
from runs import db
from runs.environment import bodies
from runs.environment import service as environment
from runs.models import Episode, Run, Status, Step
from tests.security.test_environment_api import agent, fresh_throttle  # noqa: F401 (its fixtures)

pytestmark = pytest.mark.django_db

JSON = "application/json"
ANSWER = b'{"action": "final_answer", "answer": "B"}'

#: name → (body, status, words of the message); every body is under the 64 KB cap unless it says so.
ATTACKS = {
    "nested 32,000 deep": (b"[" * 32000 + b"]" * 32000, 400, "more than 32 deep"),
    "objects nested 33 deep": (b'{"a": ' * 33 + b"1" + b"}" * 33, 400, "more than 32 deep"),
    "unclosed arrays": (b"[" * 60000, 400, "more than 32 deep"),
    "empty": (b"", 400, "body is empty"),
    "blank": (b" \r\n", 400, "body is empty"),
    "not UTF-8": (b'{"action": "final_answer", "answer": "\xff"}', 400, "not UTF-8"),
    "invalid JSON": (b'{"action": "final_answer", ', 400, "not JSON"),
    "a list": (b"[" + ANSWER + b"]", 400, "not an array"),
    "a string": (b'"B"', 400, "not a string"),
    "null": (b"null", 400, "not null"),
    "NaN": (b'{"action": "final_answer", "answer": NaN}', 400, "NaN is not a JSON number"),
    "a number too large for a float": (b'{"action": "final_answer", "answer": 1e999}', 400, "too large"),
    "a lone surrogate": (b'{"action": "final_answer", "answer": "\\ud800"}', 400, "lone surrogate"),
    "over the cap": (b'{"action": "final_answer", "answer": "' + b"B" * 70_000 + b'"}', 413, "larger than 65536"),
}


@pytest.fixture
def started(agent):
    """The attacker's client, its run, and the run's T1 episode started."""
    run, client = agent
    episode = environment.start_episode(run=run, record_id=run.episodes.get(instance__task__code="T1").record_id)
    return client, run, episode.episode


@pytest.fixture
def player(suite, visitor):
    add_player(visitor)
    client = Client()
    client.force_login(visitor)
    return client, start_play(user=visitor, suite=suite, task="T1")


def stored() -> tuple:
    """Everything an endpoint could write: runs, episodes with their counters, steps."""
    episodes = Episode.objects.order_by("pk").values_list("pk", "status", "n_turns", "heartbeat_at", "final_answer")
    return Run.objects.count(), list(episodes), Step.objects.count()


@pytest.fixture
def posts(started, player, client, staff_user):
    """Each JSON endpoint, as ``post(body, content_type, **environ)`` from a client allowed to use it."""
    client.force_login(staff_user)
    agent_client, run, episode = started
    player_client, played = player
    targets = {
        "env: open a run": (client, reverse("env:runs")),
        "env: start an episode": (agent_client, reverse("env:episodes", args=[run.pk])),
        "env: an action": (agent_client, reverse("env:actions", args=[episode.pk])),
        "play: an action": (player_client, reverse("play:action", args=[played.pk])),
        "play: the preview": (player_client, reverse("play:preview", args=[played.pk])),
    }
    return {name: partial(poster.generic, "POST", url) for name, (poster, url) in targets.items()}


def refused(response, status: int, words: str) -> str:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == JSON
    detail = response.json()["detail"]
    assert words in detail, detail
    return detail


@pytest.mark.parametrize("attack", ATTACKS)
def test_every_json_endpoint_refuses_the_attack_and_writes_nothing(posts, attack):
    body, status, words = ATTACKS[attack]
    before = stored()
    for post in posts.values():
        refused(post(body, JSON), status, words)
    assert stored() == before


def chunked(body: bytes, *, terminated: bool) -> dict:
    """The WSGI environment of a chunked body: no Content-Length; a server like gunicorn ends the input at its end."""
    environ = {"CONTENT_TYPE": JSON, "CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(body)}
    return {**environ, "wsgi.input_terminated": True} if terminated else environ


@pytest.mark.parametrize("attack", ["nested 32,000 deep", "empty", "invalid JSON", "a list", "over the cap"])
def test_a_chunked_body_is_read_within_the_limits(posts, attack):
    body, status, words = ATTACKS[attack]
    before = stored()
    for post in posts.values():
        refused(post(b"", JSON, **chunked(body, terminated=True)), status, words)
    assert stored() == before


def test_a_chunked_body_from_a_server_that_does_not_end_it_is_refused_with_411(posts):
    before = stored()
    for post in posts.values():
        refused(post(b"", JSON, **chunked(ANSWER, terminated=False)), 411, "Content-Length")
    assert stored() == before


def test_a_chunked_action_is_read_whole_and_played_as_one_turn(started):
    client, run, episode = started
    response = client.generic("POST", reverse("env:actions", args=[episode.pk]), b"", JSON, **chunked(ANSWER, terminated=True))
    assert response.status_code == 200 and response.json()["done"] is True
    episode.refresh_from_db()
    assert episode.status == Status.COMPLETED and episode.final_answer["answer"] == "B" and episode.n_turns == 1


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_body_that_is_not_typed_json_gets_415(posts, content_type):
    before = stored()
    for post in posts.values():
        refused(post(ANSWER, content_type), 415, "Content-Type: application/json")
    assert stored() == before


def test_a_declared_length_over_the_cap_is_refused_unread(started):
    client, run, episode = started
    response = client.generic("POST", reverse("env:actions", args=[episode.pk]), ANSWER, JSON, CONTENT_LENGTH="70000")
    refused(response, 413, "larger than 65536")
    episode.refresh_from_db()
    assert episode.n_turns == 0


def test_the_endpoints_still_take_what_they_should(posts, started):
    """The control: the same endpoints, the same clients, bodies they read."""
    assert posts["play: the preview"](b"{}", JSON).status_code == 200
    assert posts["env: start an episode"](b"{}", JSON).status_code == 201  # the run's T3 episode
    assert posts["env: an action"](ANSWER, JSON).json()["done"] is True
    assert posts["play: an action"](ANSWER, JSON).json()["done"] is True
    suite = started[1].suite.name
    opened = posts["env: open a run"](json.dumps({"agent": "other", "suite": suite, "tasks": ["T1"]}), JSON)
    assert opened.status_code == 201


def test_a_staff_session_checked_for_csrf_reads_the_body_once_through_the_same_reader(suite, staff_user):
    """DRF's CSRF check reads ``request.POST``, which goes through its parser: the reader's limits hold there too."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff_user)
    secret = "a" * 32
    client.cookies["csrftoken"] = secret
    post = lambda body: client.generic("POST", reverse("env:runs"), body, JSON, HTTP_X_CSRFTOKEN=secret)  # noqa: E731
    refused(post(ATTACKS["nested 32,000 deep"][0]), 400, "more than 32 deep")
    assert post(json.dumps({"agent": "other", "suite": suite.name, "tasks": ["T1"]}).encode()).status_code == 201


@pytest.mark.parametrize("body, depth", [
    (b"{}", 1),
    (b'{"a": [[1, {"b": []}]]}', 5),
    (b'{"a": "[[[[{{{{"}', 1),  # brackets in a string do not nest
    (b'{"a": "\\"[[[["}', 1),  # nor after an escaped quote
    (b'{"a\\\\": [[]]}', 3),  # an escaped backslash ends before the closing quote
])
def test_nesting_is_counted_outside_strings(body, depth):
    deeper = b'{"x": ' * (bodies.MAX_DEPTH - depth) + body + b"}" * (bodies.MAX_DEPTH - depth)
    assert bodies.parse_json_object(deeper)  # exactly MAX_DEPTH deep
    with pytest.raises(bodies.BodyRefused, match="more than 32 deep"):
        bodies.parse_json_object(b'{"x": ' + deeper + b"}")


def test_a_surrogate_pair_is_text_and_an_escaped_backslash_is_no_escape():
    assert bodies.parse_json_object(b'{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}') == {"a": "\U0001f600", "b": "\\ud800"}


@pytest.mark.parametrize("endpoint", ["env: an action", "play: an action"])
def test_nul_characters_an_agent_sends_are_played_and_stored_readably(posts, started, player, endpoint):
    """PostgreSQL refuses NUL in text and jsonb: the turn is played all the same, NUL stored as U+FFFD."""
    episode = started[2] if endpoint == "env: an action" else player[1]
    post = posts[endpoint]
    tool = post(json.dumps({"action": "tool_call", "tool_name": "x\u0000", "arguments": {"a\u0000": "\u0000"}}), JSON)
    assert tool.status_code == 200 and tool.json()["done"] is False
    answer = post(json.dumps({"action": "final_answer", "answer": "B\u0000", "thought": "sure\u0000"}), JSON)
    assert answer.status_code == 200 and answer.json()["done"] is True
    episode.refresh_from_db()
    assert episode.status == Status.COMPLETED and episode.n_turns == 2
    assert episode.final_answer["answer"] == "B\ufffd"
    steps = list(episode.steps.values("text", "arguments", "result", "error"))
    assert steps[-1]["text"] == "sure\ufffd"  # the final answer's thought
    assert db.storable(steps) == steps  # no NUL left anywhere
    assert steps[1]["result"]["tool_calls"][0]["name"] == "x\ufffd"


@pytest.mark.parametrize("form", [{"suite": "tiny\x00", "task": "T1"}, {"suite": "tiny", "task": "T1\x00"}])
def test_a_play_form_naming_a_suite_or_task_with_a_nul_character_gets_400(suite, player, form):
    """PostgreSQL refuses NUL even in a query's parameter: the name is refused before any lookup."""
    client, _ = player
    before = stored()
    response = client.post(reverse("play:start"), form)
    assert response.status_code == 400 and b"NUL character" in response.content
    assert stored() == before
