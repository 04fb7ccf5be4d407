"""Every response carries the Content-Security-Policy, and nothing in the templates needs more than it allows.

That browsers enforce it on the real pages, charts drawn, is checked in headless Chromium
(``tests/leaderboard/test_browser_csp.py``).
"""
import re

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db

TEMPLATES = sorted((settings.BASE_DIR / "templates").rglob("*.html"))


def policy(response) -> dict[str, list[str]]:
    directives = [part.split() for part in response["Content-Security-Policy"].split(";") if part.strip()]
    return {name: sources for name, *sources in directives}


def test_the_policy_allows_no_inline_script_no_eval_no_plugin_no_framing(client):
    directives = policy(client.get("/"))
    assert directives["script-src"] == ["'self'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["base-uri"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert not any("unsafe-eval" in source for sources in directives.values() for source in sources)


def test_every_kind_of_response_carries_it(client, run, staff_user):
    responses = {
        "a page": client.get(reverse("leaderboard:runs")),
        "the REST API": client.get("/api/runs/", HTTP_ACCEPT="application/json"),
        "the browsable API": client.get("/api/runs/", HTTP_ACCEPT="text/html"),
        "a JSON view": client.get(reverse("leaderboard:run_progress", args=[run.pk])),
        "the environment API": client.get("/api/env/runs/"),
        "a page not found": client.get("/no-such-page/"),
        "a static file's miss": client.get("/static/js/no-such-file.js"),
        "the admin": client.get("/admin/login/"),
        "a redirect": client.get(reverse("leaderboard:new_run")),
    }
    for attempt in range(10):
        client.post(reverse("login"), {"username": "staff", "password": f"guess-{attempt}"})
    responses["the lockout page"] = client.post(reverse("login"), {"username": "staff", "password": "x"})
    assert responses["the lockout page"].status_code == 429
    for what, response in responses.items():
        assert response["Content-Security-Policy"] == settings.CONTENT_SECURITY_POLICY, what


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: str(path.relative_to(settings.BASE_DIR)))
def test_no_template_has_an_inline_script_or_an_event_handler(template):
    html = template.read_text()
    assert not re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html, flags=re.IGNORECASE)
    assert not re.findall(r"\son[a-z]+\s*=", html, flags=re.IGNORECASE)
    assert "javascript:" not in html.lower()
