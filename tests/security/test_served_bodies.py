"""The body attacks of issue 31 against the site as deployed: gunicorn, DEBUG off, raw HTTP (chunked bodies too).

Each JSON endpoint answers each attack with a 4xx and a JSON message, plays no turn and writes
nothing; no request is a 500 (the server's log holds no error). An action holding NUL characters
is played and stored, sent chunked too. On SQLite and PostgreSQL.
"""
import http.client
import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from leaderboard.play.players import add_player, start_play
from runs.environment import service as environment
from runs.models import Status
from tests.runs.demo_suite import import_demo
from tests.security.test_bodies import ANSWER, ATTACKS, JSON, stored
from tests.served import gunicorn, served_database  # noqa: F401 (a fixture)

CSRF = "c" * 32
NUL_TOOL_CALL = b'{"action": "tool_call", "tool_name": "x\\u0000", "arguments": {"a\\u0000": "\\u0000"}}'


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def chunks(body: bytes, size: int = 1000):
    return (body[start : start + size] for start in range(0, len(body), size))


class Site:
    """Requests to the served site: ``post(endpoint, body, chunked=…)`` answers (status, content type, JSON or text)."""

    def __init__(self, address: str, endpoints: dict):
        self.address = address
        self.endpoints = endpoints

    def post(self, endpoint: str, body: bytes, *, chunked: bool = False, content_type: str = JSON):
        url, headers = self.endpoints[endpoint]
        connection = http.client.HTTPConnection(self.address, timeout=60)
        headers = {**headers, "Content-Type": content_type}
        if chunked:
            connection.request("POST", url, chunks(body), {**headers, "Transfer-Encoding": "chunked"}, encode_chunked=True)
        else:
            connection.request("POST", url, body, {**headers, "Content-Length": str(len(body))})
        response = connection.getresponse()
        text = response.read()
        connection.close()
        kind = response.getheader("Content-Type")
        return response.status, kind, json.loads(text) if kind == JSON else text


@pytest.mark.slow
def test_the_served_site_answers_every_body_attack_with_a_json_4xx_and_plays_nothing(served_database, tmp_path):
    suite = import_demo()
    staff = User.objects.create_user("staff", password="staff-password-1", is_staff=True)
    player = User.objects.create_user("player", password="player-password-1")
    add_player(player)
    run, key = environment.open_external_run(agent="attacker", suite=suite, tasks=["T1", "T2"])
    episode = environment.start_episode(run=run, record_id=run.episodes.filter(instance__task__code="T1")[0].record_id).episode
    played = start_play(user=player, suite=suite, task="T1")
    agent = {"Authorization": f"Bearer {key}"}
    as_player = {"Cookie": f"sessionid={session_of(player)}; csrftoken={CSRF}", "X-CSRFToken": CSRF}
    as_staff = {"Cookie": f"sessionid={session_of(staff)}; csrftoken={CSRF}", "X-CSRFToken": CSRF}
    endpoints = {
        "env: open a run": (reverse("env:runs"), as_staff),
        "env: start an episode": (reverse("env:episodes", args=[run.pk]), agent),
        "env: an action": (reverse("env:actions", args=[episode.pk]), agent),
        "play: an action": (reverse("play:action", args=[played.pk]), as_player),
        "play: the preview": (reverse("play:preview", args=[played.pk]), as_player),
    }
    log = tmp_path / "gunicorn.log"
    before = stored()
    with gunicorn(served_database, log=log) as address:
        site = Site(address, endpoints)
        answers = {
            (endpoint, attack, chunked): site.post(endpoint, body, chunked=chunked)
            for endpoint in endpoints
            for attack, (body, _, _) in ATTACKS.items()
            for chunked in (False, True)
            if body or not chunked  # a chunked body has at least one chunk
        }
        untyped = {endpoint: site.post(endpoint, ANSWER, content_type="text/plain") for endpoint in endpoints}
        after_attacks = stored()
        # The controls: the same endpoints take what they should, a chunked action too; its NUL
        # characters (PostgreSQL refuses them in text and jsonb) are stored as U+FFFD.
        preview = site.post("play: the preview", b"{}")
        turns = {endpoint: [site.post(endpoint, NUL_TOOL_CALL, chunked=True), site.post(endpoint, ANSWER)]
                 for endpoint in ("env: an action", "play: an action")}
    server_log = log.read_text()

    for (endpoint, attack, chunked), (status, kind, reply) in answers.items():
        _, expected, words = ATTACKS[attack]
        assert (status, kind) == (expected, JSON), (endpoint, attack, chunked, status, reply)
        assert words in reply["detail"], (endpoint, attack, chunked, reply)
    for endpoint, (status, kind, reply) in untyped.items():
        assert (status, kind) == (415, JSON) and "Content-Type: application/json" in reply["detail"], endpoint
    assert after_attacks == before  # no turn, no write
    assert preview[0] == 200 and "figure" in preview[2]
    for endpoint, (tool_call, answer) in turns.items():
        assert (tool_call[0], tool_call[2]["done"], answer[0], answer[2]["done"]) == (200, False, 200, True), endpoint
    for ended in (episode, played):
        ended.refresh_from_db()
        assert ended.status == Status.COMPLETED and ended.n_turns == 2
        assert ended.steps.get(index=1).result["tool_calls"][0]["name"] == "x\ufffd"
    assert "Traceback" not in server_log and "Internal Server Error" not in server_log, server_log
