"""The error pages and the REST API's browsable pages fit a phone: each declares the viewport, as base.html does.

Without ``<meta name="viewport">`` a phone lays a page out 980 px wide and shrinks it to its
screen. The error pages (templates/error.html) are the site's own, and read nothing from the
database, so that the 500 page renders when the database cannot.
"""
import pytest
from django.test import Client, RequestFactory
from django.urls import reverse
from django.views import defaults

pytestmark = pytest.mark.django_db

VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'


def test_a_page_not_found_is_the_sites_own_with_a_viewport(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404 and VIEWPORT in html
    assert "<h1>Not found</h1>" in html and "/no-such-page/" not in html


def test_an_error_page_renders_before_collectstatic_has_run_in_production(client, settings, tmp_path):
    """Production names static files through collectstatic's manifest: an error page names none (a 404 was a 500)."""
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage",
    }}  # fmt: skip
    settings.STATIC_ROOT = tmp_path  # nothing collected
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "<h1>Not found</h1>" in response.content.decode()
    assert "/static/" not in response.content.decode()


@pytest.mark.parametrize(
    ("view", "status", "heading"),
    [
        (lambda request: defaults.bad_request(request, ValueError("x")), 400, "Bad request"),
        (lambda request: defaults.permission_denied(request, PermissionError("x")), 403, "Forbidden"),
        (defaults.server_error, 500, "Server error"),
    ],
)
def test_the_other_error_pages_have_a_viewport_and_need_no_database(view, status, heading, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = view(RequestFactory().get("/somewhere/"))
    html = response.content.decode()
    assert response.status_code == status and VIEWPORT in html and f"<h1>{heading}</h1>" in html


def test_a_form_sent_without_its_csrf_cookie_is_refused_on_a_page_with_a_viewport():
    response = Client(enforce_csrf_checks=True).post(reverse("login"), {"username": "a", "password": "b"})
    html = response.content.decode()
    assert response.status_code == 403 and VIEWPORT in html
    assert "security check failed" in html and "cookies from this site allowed" in html


@pytest.mark.parametrize("url", ["/api/", "/api/runs/", "/api/tasks/"])
def test_the_browsable_api_has_a_viewport(client, url):
    response = client.get(url, HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert VIEWPORT in response.content.decode()
