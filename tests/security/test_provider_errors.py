"""What a model provider says when it fails is for staff; a visitor reads its HTTP status and a reason of ours.

The server at a run's API base chooses its error bodies: an attacker's (or a provider's that echoes
the request) would otherwise be published verbatim on the episode page and ``/api/episodes/<id>/``.
"""
import pytest
from django.urls import reverse

from runs.episode.engine import run_episode
from runs.models import Episode, Run
from runs.redaction import public_error
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS
from tests.security.test_keys import form

pytestmark = pytest.mark.django_db

SECRET = "SECRET-BODY the provider's words <b>"


@pytest.fixture
def played(client, staff_user, suite, settings, monkeypatch, request):
    """An episode of a run made on the staff form whose provider answered 503, then 400, each with a body."""
    settings.EEGAB_RETRY_BASE_DELAY_SEC = settings.EEGAB_RETRY_MAX_DELAY_SEC = 0.001
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    t1 = suite.instances.get(task__code="T1")
    t1.expected_output_schema = OUTPUT_SCHEMAS["T1"]
    t1.save()
    model = request.param  # litellm calls a model its price map lists; the direct transport any other
    with FakeLLM() as server:
        server.add(fake_llm.http_error(503, f"{SECRET} 503"), fake_llm.http_error(400, f"{SECRET} 400"))
        client.force_login(staff_user)
        data = form(suite, provider_model=model, model="", api_base=server.api_base, api_key_env="FAKE_LLM_KEY")
        assert client.post(reverse("leaderboard:new_run"), data).status_code == 302
        client.logout()
        episode = run_episode(episode_id=Run.objects.get().episodes.get().pk)
    assert episode.ended_by == Episode.EndedBy.PROVIDER_ERROR and SECRET in episode.error_message
    return episode


def pages(episode):
    steps = episode.steps.order_by("index")
    return [reverse("leaderboard:episode", args=[episode.pk]), f"/api/episodes/{episode.pk}/",
            *(reverse("leaderboard:episode_step", args=[episode.pk, step.index]) for step in steps)]  # fmt: skip


TRANSPORTS = pytest.mark.parametrize("played", ["openai/gpt-4o-mini", "openai/self-hosted-model"], indirect=True)


@TRANSPORTS
def test_a_visitor_reads_the_status_and_our_reason_never_the_body(client, played):
    assert played.steps.filter(error__contains=SECRET).count() == 2  # the two attempts, kept for staff
    for url in pages(played):
        body = client.get(url).content.decode()
        assert "SECRET" not in body, url
    page = client.get(pages(played)[0]).content.decode()
    assert "Model call failed: the model&#x27;s provider answered HTTP 400 (Bad Request)" in page
    data = client.get(pages(played)[1]).json()
    assert data["error_message"].startswith("Model call failed: the model's provider answered HTTP 400 (Bad Request)")
    assert [step["error"] for step in data["steps"] if step["error"]][:2] == [
        "provider attempt 1 failed: the model's provider answered HTTP 503 (Service Unavailable); "
        "the details are shown to staff only",
        "provider attempt 2 failed: the model's provider answered HTTP 400 (Bad Request); "
        "the details are shown to staff only",
    ]


@TRANSPORTS
def test_staff_read_the_providers_words(client, staff_user, played):
    client.force_login(staff_user)
    data = client.get(pages(played)[1]).json()
    assert f"{SECRET} 400" in data["error_message"]
    assert sum(SECRET in (step["error"] or "") for step in data["steps"]) == 2
    assert SECRET.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;") in client.get(
        pages(played)[0]).content.decode()  # fmt: skip


@pytest.mark.parametrize("played", ["openai/self-hosted-model"], indirect=True)
def test_a_visitor_cannot_search_the_providers_words(client, staff_user, played):
    url = reverse("leaderboard:run", args=[played.run_id])
    assert not client.get(url, {"q": "SECRET-BODY"}).context["rows"]
    client.force_login(staff_user)
    assert [row["episode"].pk for row in client.get(url, {"q": "SECRET-BODY"}).context["rows"]] == [played.pk]


@pytest.mark.parametrize("text", [
    "provider attempt 1 failed: 503 Service Unavailable, said the body",  # not in the recorded shape
    "provider attempt 2 failed: litellm.BadRequestError: OpenAIException - the body",  # as recorded before
    "provider attempt 3 failed: Error code: 400 - the body",
])  # fmt: skip
def test_a_failed_attempt_in_another_shape_shows_nothing_of_its_text(text):
    assert "body" not in public_error(text) and "the model could not be called" in public_error(text)
