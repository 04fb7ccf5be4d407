"""Production settings: what DEBUG off turns on, `check --deploy` clean, and static files served by whitenoise."""
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.templatetags.static import static

from tests.test_settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
WHITENOISE = "whitenoise.middleware.WhiteNoiseMiddleware"
DEPLOY_ENV = (
    "EEGAB_SECURE_SSL_REDIRECT",
    "EEGAB_SECURE_PROXY_SSL_HEADER",
    "EEGAB_SECURE_HSTS_SECONDS",
    "EEGAB_SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "EEGAB_SECURE_HSTS_PRELOAD",
    "EEGAB_LOG_LEVEL",
)


def production_environment(**extra) -> dict:
    """This process's environment with a production configuration: DEBUG off, a strong key, one host."""
    env = {name: value for name, value in os.environ.items() if name not in DEPLOY_ENV}
    env.update(DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="example.org", **extra)
    return env


def load_production_settings(monkeypatch, **env):
    for name in DEPLOY_ENV:
        monkeypatch.delenv(name, raising=False)
    return load_settings(monkeypatch, DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), **env)


def test_check_deploy_reports_no_issue_in_production():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_environment(), capture_output=True, text=True, timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output
    assert "WARNING" not in output


def test_production_serves_https_only_with_secure_cookies(monkeypatch):
    loaded = load_production_settings(monkeypatch)
    assert loaded.SECURE_SSL_REDIRECT is True
    assert loaded.SECURE_HSTS_SECONDS == 31_536_000
    assert loaded.SECURE_HSTS_INCLUDE_SUBDOMAINS is True
    assert loaded.SECURE_HSTS_PRELOAD is False
    assert loaded.SESSION_COOKIE_SECURE is True
    assert loaded.CSRF_COOKIE_SECURE is True
    assert loaded.X_FRAME_OPTIONS == "DENY"
    assert loaded.SECURE_CONTENT_TYPE_NOSNIFF is True
    assert loaded.SECURE_REFERRER_POLICY == "same-origin"
    assert not hasattr(loaded, "SECURE_PROXY_SSL_HEADER")


def test_production_serves_static_files_through_whitenoise_with_hashed_names(monkeypatch):
    loaded = load_production_settings(monkeypatch)
    security = loaded.MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
    assert loaded.MIDDLEWARE[security + 1] == WHITENOISE
    assert loaded.STORAGES["staticfiles"]["BACKEND"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert loaded.STORAGES["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert loaded.WHITENOISE_USE_FINDERS is False and loaded.WHITENOISE_AUTOREFRESH is False


def test_https_settings_follow_the_environment(monkeypatch):
    loaded = load_production_settings(
        monkeypatch,
        EEGAB_SECURE_SSL_REDIRECT="false",
        EEGAB_SECURE_PROXY_SSL_HEADER="true",
        EEGAB_SECURE_HSTS_SECONDS="3600",
        EEGAB_SECURE_HSTS_INCLUDE_SUBDOMAINS="no",
        EEGAB_SECURE_HSTS_PRELOAD="yes",
    )
    assert loaded.SECURE_SSL_REDIRECT is False
    assert loaded.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert loaded.SECURE_HSTS_SECONDS == 3600
    assert loaded.SECURE_HSTS_INCLUDE_SUBDOMAINS is False
    assert loaded.SECURE_HSTS_PRELOAD is True
    assert not hasattr(loaded, "SILENCED_SYSTEM_CHECKS")


def test_laptop_serves_collected_files_compressed_under_plain_names_and_keeps_plain_cookies(monkeypatch):
    """The demo collects and serves through whitenoise too (config/static.py); names without hashes, read afresh."""
    loaded = load_settings(monkeypatch)
    security = loaded.MIDDLEWARE.index("django.middleware.security.SecurityMiddleware")
    assert loaded.MIDDLEWARE[security + 1] == WHITENOISE
    assert loaded.STORAGES["staticfiles"]["BACKEND"] == "config.static.CompressedStaticFiles"
    assert loaded.WHITENOISE_USE_FINDERS is False and loaded.WHITENOISE_AUTOREFRESH is True
    assert not hasattr(loaded, "SESSION_COOKIE_SECURE")


def test_tests_and_the_laptop_name_static_files_without_a_manifest(settings):
    """Pages render before any collectstatic: a static file's address is its plain name."""
    assert static("plotly/plotly.min.js") == "/static/plotly/plotly.min.js"


SERVE_STATIC = """
import django, json
django.setup()
from django.templatetags.static import static
from django.test import Client
url = static("plotly/plotly.min.js")
served = {}
for accepted in ("gzip", "gzip, deflate, br"):
    response = Client().get(url, secure=True, HTTP_HOST="example.org", HTTP_ACCEPT_ENCODING=accepted)
    served[accepted] = {"status": response.status_code, "encoding": response.get("Content-Encoding"),
                        "cache": response.get("Cache-Control")}
print(json.dumps({"url": url, "served": served}))
"""


@pytest.mark.slow
def test_collected_static_files_are_served_compressed_and_cacheable(tmp_path):
    """collectstatic under the production storage, then a request through whitenoise, as gunicorn would serve it."""
    static_root = tmp_path / "staticfiles"
    (tmp_path / "collect_settings.py").write_text(
        f"from config.settings import *  # noqa: F403\nSTATIC_ROOT = {str(static_root)!r}\n"
    )
    env = production_environment(
        DJANGO_SETTINGS_MODULE="collect_settings", PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)])
    )
    collect = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert collect.returncode == 0, collect.stdout + collect.stderr

    manifest = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    referenced = {
        match
        for template in (ROOT / "templates").rglob("*.html")
        for match in re.findall(r"""{%\s*static\s+['"]([^'"]+)['"]\s*%}""", template.read_text())
    }
    assert "plotly/plotly.min.js" in referenced
    assert referenced <= set(manifest), f"templates name static files that do not exist: {referenced - set(manifest)}"

    served = subprocess.run(
        [sys.executable, "-c", SERVE_STATIC], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert served.returncode == 0, served.stdout + served.stderr
    response = json.loads(served.stdout.strip().splitlines()[-1])
    assert response["url"] == "/static/" + manifest["plotly/plotly.min.js"]
    assert {accepted: (answer["status"], answer["encoding"]) for accepted, answer in response["served"].items()} == {
        "gzip": (200, "gzip"), "gzip, deflate, br": (200, "br"),
    }
    assert all("immutable" in answer["cache"] for answer in response["served"].values())
    assert not [name for name in manifest if name.startswith("plotly/") and name != "plotly/plotly.min.js"]
