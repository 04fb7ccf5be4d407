"""Settings: the environment helpers, and what the settings module makes of the environment."""
import importlib.util
import os
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import settings as project_settings
from config.settings import database_config, env_bool, env_int, env_list, env_number, env_str

SETTINGS_PATH = Path(project_settings.__file__)
SETTINGS_ENV = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "REDIS_URL",
    "EEGAB_WORKERS",
    "EEGAB_EPISODE_TIMEOUT",
    "EEGAB_DATA_ROOT",
    "EEGAB_EPISODE_LEASE_SEC",
    "EEGAB_HEARTBEAT_SEC",
    "EEGAB_MAX_EPISODE_ATTEMPTS",
    "EEGAB_PROVIDER_RETRIES",
)


def load_settings(monkeypatch, **env):
    """Execute a fresh copy of the settings module under exactly ``env``; the live settings stay as they are."""
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("settings_under_test", SETTINGS_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("word", ["1", "true", "True", "YES", "on", " yes "])
def test_env_bool_reads_yes_words(monkeypatch, word):
    monkeypatch.setenv("FLAG", word)
    assert env_bool("FLAG", False) is True


@pytest.mark.parametrize("word", ["0", "false", "No", "off", ""])
def test_env_bool_reads_no_words(monkeypatch, word):
    monkeypatch.setenv("FLAG", word)
    assert env_bool("FLAG", True) is False


def test_env_bool_falls_back_to_default_when_unset(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)
    assert env_bool("FLAG", True) is True


def test_env_bool_rejects_other_words(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe'"):
        env_bool("FLAG", False)


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("HOSTS", " example.org, ,api.example.org ,")
    assert env_list("HOSTS", ["localhost"]) == ["example.org", "api.example.org"]


def test_env_list_returns_a_copy_of_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("HOSTS", raising=False)
    default = ("localhost",)
    assert env_list("HOSTS", default) == ["localhost"]


def test_env_str_strips_and_defaults(monkeypatch):
    monkeypatch.setenv("NAME", "  value \n")
    assert env_str("NAME") == "value"
    monkeypatch.delenv("NAME")
    assert env_str("NAME", "fallback") == "fallback"


def test_env_int_reads_numbers_and_rejects_words(monkeypatch):
    monkeypatch.setenv("COUNT", "8")
    assert env_int("COUNT", 2) == 8
    monkeypatch.setenv("COUNT", "eight")
    with pytest.raises(ImproperlyConfigured, match="whole number"):
        env_int("COUNT", 2)


def test_database_config_parses_a_postgresql_url():
    config = database_config("postgres://bench:secret@db.internal:5433/eegab", sqlite_path=Path("unused"))
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert config["NAME"] == "eegab"
    assert (config["USER"], config["HOST"], config["PORT"]) == ("bench", "db.internal", 5433)


def test_database_config_without_url_is_sqlite_at_the_given_path(tmp_path):
    config = database_config("", sqlite_path=tmp_path / "db.sqlite3")
    assert config["ENGINE"] == "config.sqlite"  # Django's SQLite backend with a pool of open connections
    assert config["NAME"] == tmp_path / "db.sqlite3"


def test_laptop_defaults(monkeypatch):
    loaded = load_settings(monkeypatch)
    assert loaded.DEBUG is True
    assert "insecure" in loaded.SECRET_KEY
    assert loaded.ALLOWED_HOSTS == ["localhost", "127.0.0.1", "[::1]", "testserver"]
    assert loaded.DATABASES["default"]["NAME"] == loaded.BASE_DIR / "var" / "db.sqlite3"
    assert loaded.Q_CLUSTER["orm"] == "default"
    assert "redis" not in loaded.Q_CLUSTER
    assert loaded.EEGAB_DATA_ROOT == loaded.BASE_DIR / "var" / "releases"


def test_deployment_environment_is_honoured(monkeypatch, tmp_path):
    loaded = load_settings(
        monkeypatch,
        DEBUG="false",
        SECRET_KEY="a-real-secret",
        ALLOWED_HOSTS="bench.example.org",
        DATABASE_URL="postgres://bench:secret@db.internal/eegab",
        REDIS_URL="redis://cache.internal:6379/0",
        EEGAB_WORKERS="8",
        EEGAB_DATA_ROOT=str(tmp_path),
    )
    assert loaded.DEBUG is False
    assert loaded.SECRET_KEY == "a-real-secret"
    assert loaded.ALLOWED_HOSTS == ["bench.example.org"]
    assert loaded.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    assert loaded.Q_CLUSTER["redis"] == "redis://cache.internal:6379/0"
    assert "orm" not in loaded.Q_CLUSTER
    assert loaded.Q_CLUSTER["workers"] == 8
    assert loaded.EEGAB_DATA_ROOT == tmp_path


def test_refuses_to_start_without_secret_key_when_debug_is_off(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        load_settings(monkeypatch, DEBUG="false")


@pytest.mark.parametrize("timeout", ["60", "3600", "86400"])
def test_queue_retry_exceeds_timeout(monkeypatch, timeout):
    q_cluster = load_settings(monkeypatch, EEGAB_EPISODE_TIMEOUT=timeout).Q_CLUSTER
    assert q_cluster["timeout"] == int(timeout)
    assert q_cluster["retry"] > q_cluster["timeout"]


def test_live_queue_settings(settings):
    assert settings.Q_CLUSTER["name"] == "eegagentbench"
    assert settings.Q_CLUSTER["retry"] > settings.Q_CLUSTER["timeout"]
    assert settings.Q_CLUSTER["max_attempts"] == 2
    assert settings.Q_CLUSTER["ack_failures"] is True


def test_litellm_uses_its_bundled_price_map():
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


@pytest.mark.parametrize(("value", "expected"), [("2.5", 2.5), (" 30 ", 30.0), ("", 7.0)])
def test_env_number_reads_numbers(monkeypatch, value, expected):
    monkeypatch.setenv("SECONDS", value)
    assert env_number("SECONDS", 7.0) == expected


@pytest.mark.parametrize("value", ["soon", "nan", "inf", "-1"])
def test_env_number_rejects_what_is_not_a_finite_number_in_range(monkeypatch, value):
    monkeypatch.setenv("SECONDS", value)
    with pytest.raises(ImproperlyConfigured, match=f"SECONDS={value!r}"):
        env_number("SECONDS", 7.0)


def test_leases_and_retries_come_from_the_environment(monkeypatch):
    from runs.model.retry import RetryPolicy
    from runs.queue import leases

    module = load_settings(monkeypatch, EEGAB_EPISODE_LEASE_SEC="40", EEGAB_HEARTBEAT_SEC="2.5",
                           EEGAB_MAX_EPISODE_ATTEMPTS="5", EEGAB_PROVIDER_RETRIES="1")  # fmt: skip
    assert (module.EEGAB_EPISODE_LEASE_SEC, module.EEGAB_HEARTBEAT_SEC) == (40.0, 2.5)
    assert (module.EEGAB_MAX_EPISODE_ATTEMPTS, module.EEGAB_PROVIDER_RETRIES) == (5, 1)
    defaults = load_settings(monkeypatch)
    assert (defaults.EEGAB_EPISODE_LEASE_SEC, defaults.EEGAB_HEARTBEAT_SEC, defaults.EEGAB_MAX_EPISODE_ATTEMPTS) == (
        leases.lease_seconds(), leases.heartbeat_seconds(), leases.max_attempts())
    assert defaults.EEGAB_PROVIDER_RETRIES == RetryPolicy.from_settings().max_retries


def test_a_heartbeat_as_long_as_the_lease_is_refused(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="EEGAB_HEARTBEAT_SEC must be shorter"):
        load_settings(monkeypatch, EEGAB_EPISODE_LEASE_SEC="10", EEGAB_HEARTBEAT_SEC="10")


@pytest.mark.parametrize(("name", "value"), [("EEGAB_MAX_EPISODE_ATTEMPTS", "0"), ("EEGAB_PROVIDER_RETRIES", "-1")])
def test_attempts_and_retries_below_their_minimum_are_refused(monkeypatch, name, value):
    with pytest.raises(ImproperlyConfigured, match=f"{name}={value!r} must be at least"):
        load_settings(monkeypatch, **{name: value})
