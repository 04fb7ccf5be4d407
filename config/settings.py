"""Django settings for EEGAgentBench, read from environment variables.

The defaults run on a laptop with no configuration at all: DEBUG on, SQLite in ``var/``,
django-q2's ORM broker. A deployment sets at least ``DEBUG=false``, ``SECRET_KEY`` and
``ALLOWED_HOSTS``, and usually ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``.
"""
import importlib.util
import math
import os
import re
from datetime import timedelta
from collections.abc import Sequence
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

# litellm fetches its model price map from the network on import unless told otherwise;
# the platform works offline, so it must use the map bundled with the package.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def env_str(name: str, default: str = "") -> str:
    """Return the environment variable ``name`` with surrounding spaces removed, or ``default``."""
    value = os.environ.get(name)
    return default if value is None else value.strip()


def env_bool(name: str, default: bool) -> bool:
    """Return the environment variable ``name`` read as a yes/no word (1/0, true/false, yes/no, on/off)."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a yes/no value; use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Return the environment variable ``name`` read as a whole number (at least ``minimum``), or ``default``."""
    value = env_str(name)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at least {minimum}.")
    return number


def env_number(name: str, default: float, *, minimum: float = 0.0) -> float:
    """Return the environment variable ``name`` read as a finite number of at least ``minimum``, or ``default``."""
    value = env_str(name)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if not math.isfinite(number) or number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be a finite number of at least {minimum:g}.")
    return number


def env_list(name: str, default: Sequence[str] = ()) -> list[str]:
    """Return the environment variable ``name`` split on commas, blanks dropped, or ``default``."""
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def database_config(url: str, *, sqlite_path: Path) -> dict:
    """Return one ``DATABASES`` entry: the database at ``url`` if given, else SQLite at ``sqlite_path``.

    SQLite is tuned for a web process and queue workers writing at the same time: WAL lets
    readers proceed during a write, and IMMEDIATE transactions take the write lock up front
    so two writers wait for each other instead of failing with "database is locked".
    """
    if url:
        return dj_database_url.parse(
            url,
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    return {
        "ENGINE": "config.sqlite",  # Django's, with a pool of open connections
        "NAME": sqlite_path,
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "django-insecure-eegagentbench-laptop-only-never-deploy-this-key"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # Before django_q: its ``qcluster`` command is runs' (which loads episodes' modules before the workers fork).
    "runs",
    "django_q",
    "axes",
    "benchmark",
    "tools_app",
    "leaderboard",
    "submissions",
]

MIDDLEWARE = [
    # First, so that every response has the policy: static files, errors and the lockout page too.
    "config.csp.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # after the HTTPS redirect, before anything reads a session
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# Logins (the staff form, the admin, the API's basic auth) go through django-axes first: after
# EEGAB_LOGIN_FAILURE_LIMIT failed attempts for one username from one address, further attempts for
# it from there are refused, the right password included, for EEGAB_LOGIN_COOLOFF_MIN minutes. The
# pair is counted, not the username alone, so that nobody can lock staff out from elsewhere.
# `manage.py axes_reset` lifts every lockout at once.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("EEGAB_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_number("EEGAB_LOGIN_COOLOFF_MIN", 60, minimum=1.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address (config/login.py): REMOTE_ADDR, which no client can forge; behind N proxies
# that each append the address they saw to X-Forwarded-For, set EEGAB_LOGIN_PROXY_COUNT=N.
EEGAB_LOGIN_PROXY_COUNT = env_int("EEGAB_LOGIN_PROXY_COUNT", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "config.login.client_address"

# What a page may load and run (config/csp.py): scripts, images and requests from the site itself
# only; no inline script or event handler, no eval (plotly.js draws these charts without it), no
# plugin, no framing. Styles may be inline: plotly.js writes its own at run time (a <style> it
# fills, map styles as it loads, style attributes), as do the REST API's browsable pages; a style
# cannot run script, and no page lets a visitor's text become markup.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

DATABASES = {"default": database_config(env_str("DATABASE_URL"), sqlite_path=VAR_DIR / "db.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# plotly.js is served from the copy inside the plotly package (as static/plotly/plotly.min.js, and
# nothing else of the package's data: config.static.PlotlyJsFinder), so the charts work offline
# and always match the Python package that builds the figures.
PLOTLY_JS_DIR = Path(importlib.util.find_spec("plotly").origin).parent / "package_data"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "config.static.PlotlyJsFinder",
]
STATIC_ROOT = BASE_DIR / "staticfiles"
# whitenoise serves what `manage.py collectstatic` gathered in STATIC_ROOT, with the gzip or brotli
# copy collectstatic wrote beside each file to a browser that takes it: the deployment does (below),
# and so does the demo (manage.py demo collects, then serves without runserver's own handler of
# static files). Files are looked up in STATIC_ROOT only, never through the finders, whose sources
# have no compressed copies; `runserver` and the tests' live server serve the sources themselves,
# uncompressed, before a request reaches whitenoise.
WHITENOISE_USE_FINDERS = False
WHITENOISE_AUTOREFRESH = DEBUG  # on a laptop, a file collected again is served without a restart
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "config.static.CompressedStaticFiles"},
}

REST_FRAMEWORK = {
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("EEGAB_API_ANON_RATE", "120/min"),
        "user": env_str("EEGAB_API_USER_RATE", "600/min"),
    },
    "DEFAULT_PAGINATION_CLASS": "leaderboard.api.views.Pagination",
    "PAGE_SIZE": env_int("EEGAB_API_PAGE_SIZE", 50),
}

# One queued task is one episode. An episode may legitimately take up to the timeout (a long
# T6 night with hundreds of tool calls); retry must exceed it, or the broker would hand a
# still-running episode to a second worker.
EPISODE_TIMEOUT_SEC = env_int("EEGAB_EPISODE_TIMEOUT", 3600, minimum=1)
# The episode loop ends an episode itself once it has run for EEGAB_EPISODE_WALL_SEC (scored
# unanswered, as any cap), so that the worker's timeout does not kill it and have it replayed
# from scratch. The default leaves the timeout less max(60 s, 5 %), at most half of it, for the
# model call or tool in flight when the cap is reached (the loop checks it between turns).
EEGAB_EPISODE_WALL_SEC = env_number(
    "EEGAB_EPISODE_WALL_SEC",
    EPISODE_TIMEOUT_SEC - min(max(60.0, 0.05 * EPISODE_TIMEOUT_SEC), EPISODE_TIMEOUT_SEC / 2),
    minimum=1.0,
)
if EEGAB_EPISODE_WALL_SEC >= EPISODE_TIMEOUT_SEC:
    raise ImproperlyConfigured(
        f"EEGAB_EPISODE_WALL_SEC ({EEGAB_EPISODE_WALL_SEC:g}) must be shorter than EEGAB_EPISODE_TIMEOUT "
        f"({EPISODE_TIMEOUT_SEC}), or the worker is killed before the episode reaches its cap."
    )
Q_CLUSTER = {
    "name": "eegagentbench",
    "workers": env_int("EEGAB_WORKERS", 2),
    "timeout": EPISODE_TIMEOUT_SEC,
    "retry": EPISODE_TIMEOUT_SEC + 300,
    "max_attempts": 2,
    "ack_failures": True,
    "save_limit": 1000,
    # A cluster takes a task off the broker only when one of its workers is free for it
    # (runs.queue.dispatch.cluster_broker; django-q2's own brokers pull as long as the cluster's
    # queue has room): an episode lasts minutes, and a cluster holding more episodes than it has
    # free workers keeps them waiting while another machine's workers stand idle. Its queue then
    # never holds more tasks than it has workers, and a free worker is handed its task at once.
    "broker_class": "runs.queue.dispatch.cluster_broker",
}
Q_CLUSTER["queue_limit"] = Q_CLUSTER["workers"]
# Leases on running episodes: a worker renews them every EEGAB_HEARTBEAT_SEC; one silent for
# EEGAB_EPISODE_LEASE_SEC is presumed dead, and its episode is played again, up to
# EEGAB_MAX_EPISODE_ATTEMPTS attempts (runs.queue.leases).
EEGAB_EPISODE_LEASE_SEC = env_number("EEGAB_EPISODE_LEASE_SEC", 120.0, minimum=1.0)
EEGAB_HEARTBEAT_SEC = env_number("EEGAB_HEARTBEAT_SEC", 15.0, minimum=0.1)
if EEGAB_HEARTBEAT_SEC >= EEGAB_EPISODE_LEASE_SEC:
    raise ImproperlyConfigured(
        "EEGAB_HEARTBEAT_SEC must be shorter than EEGAB_EPISODE_LEASE_SEC, or live workers lose their leases."
    )
EEGAB_MAX_EPISODE_ATTEMPTS = env_int("EEGAB_MAX_EPISODE_ATTEMPTS", 3, minimum=1)
# Provider errors (timeouts, 429, 5xx) are retried this many times, waiting base * 2^k seconds
# (at most the maximum) between attempts, in the one retry layer (runs.model.agent.ModelAgent).
EEGAB_PROVIDER_RETRIES = env_int("EEGAB_PROVIDER_RETRIES", 5, minimum=0)
EEGAB_RETRY_BASE_DELAY_SEC = env_number("EEGAB_RETRY_BASE_DELAY_SEC", 2.0)
EEGAB_RETRY_MAX_DELAY_SEC = env_number("EEGAB_RETRY_MAX_DELAY_SEC", 120.0)
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# Where imported releases (scenarios, answer keys and recordings) live on disk.
EEGAB_DATA_ROOT = Path(env_str("EEGAB_DATA_ROOT") or BASE_DIR / "var" / "releases")
# Long recordings' tool statistics, computed once per file and mapped by every worker
# (tools_app/signal/stored.py); shared like the releases. Empty: kept in each process's memory.
_stats_dir = os.environ.get("EEGAB_STATS_DIR")
EEGAB_STATS_DIR = EEGAB_DATA_ROOT / "record-stats" if _stats_dir is None else (Path(_stats_dir) if _stats_dir else None)
# Submitted archives and what they unpack to, outside the web root (submissions/services.py); the
# largest archive taken, and how many a submitter may upload (DRF's rate syntax, e.g. "10/day").
EEGAB_SUBMISSIONS_DIR = Path(env_str("EEGAB_SUBMISSIONS_DIR") or VAR_DIR / "submissions")
EEGAB_SUBMISSION_MAX_BYTES = env_int("EEGAB_SUBMISSION_MAX_BYTES", 256 << 20, minimum=1)
EEGAB_SUBMISSION_RATE = env_str("EEGAB_SUBMISSION_RATE", "10/day")
if not re.fullmatch(r"[1-9]\d*/(s|sec|m|min|h|hour|d|day)", EEGAB_SUBMISSION_RATE):
    raise ImproperlyConfigured(f"EEGAB_SUBMISSION_RATE must read like 10/day (per s, min, hour or day), "
                               f"not {EEGAB_SUBMISSION_RATE!r}.")

# Every qcluster saves its state (django_q.status.Stat) each half second, kept for 3 s: in Redis
# with the Redis broker, otherwise in the cache named by Q_CLUSTER["cache"]. That one must be
# shared by every process, or the site cannot tell whether a worker is up (runs.queue.dispatch): files
# beside the releases, shared like them, which need no table and no server. The default cache
# stays in each process's memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "queue-status": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": EEGAB_DATA_ROOT / "queue-status",
    },
}
Q_CLUSTER["cache"] = "queue-status"

# Whether visitors see episodes' reference answers (outcome figures, reference labels); staff always do.
EEGAB_PUBLIC_REFERENCES = env_bool("EEGAB_PUBLIC_REFERENCES", True)

# The environment API (runs/environment/api.py): requests per key, the largest body it reads, and how long
# an external episode may go without an action before it is ended as abandoned.
EEGAB_ENV_API_RATE = env_str("EEGAB_ENV_API_RATE") or "600/min"
if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", EEGAB_ENV_API_RATE):
    raise ImproperlyConfigured(f"EEGAB_ENV_API_RATE must read like 600/min, not {EEGAB_ENV_API_RATE!r}.")
EEGAB_ENV_MAX_BODY_BYTES = env_int("EEGAB_ENV_MAX_BODY_BYTES", 64 * 1024, minimum=1024)
EEGAB_ENV_IDLE_SEC = env_number("EEGAB_ENV_IDLE_SEC", 30 * 60, minimum=1.0)

# How long a tool call made by a web request (the environment API, /play/) may run before it is stopped
# and answered with the timeout error (tools_app.processes.call_for_request). A turn makes up to three calls,
# so three times this must stay well below gunicorn's --timeout (60 s, docs/deploy.md).
EEGAB_TOOL_DEADLINE_SEC = env_number("EEGAB_TOOL_DEADLINE_SEC", 10.0, minimum=0.1)

# The environment variables a run may name as its model's API key (Run.api_key_env): the
# providers' usual names. A setting of the platform itself (SECRET_KEY, DATABASE_URL, REDIS_URL,
# DJANGO_*, EEGAB_*) is refused whatever this lists (runs.services.check_key_env).
EEGAB_PROVIDER_KEY_ENVS = env_list("EEGAB_PROVIDER_KEY_ENVS", (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY",
    "GROQ_API_KEY", "TOGETHERAI_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "OPENROUTER_API_KEY",
    "FIREWORKS_AI_API_KEY", "COHERE_API_KEY", "AZURE_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY",
    "HOSTED_VLLM_API_KEY",
))

# The hosts besides loopback that a run from the staff form may call its model at (Run.api_base),
# comma-separated names or addresses; link-local and cloud metadata addresses are refused even when
# listed (runs.model.routing.check_model_host). The command line is not held to it.
EEGAB_ALLOWED_API_HOSTS = env_list("EEGAB_ALLOWED_API_HOSTS")

# Production: with DEBUG off the site is served over HTTPS only, and the static files that
# `manage.py collectstatic` gathered have hashed names too, so browsers may cache them for ever.
# `manage.py check --deploy` is clean with the defaults.
if not DEBUG:
    STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
    # Off when the proxy in front already redirects plain HTTP to HTTPS.
    SECURE_SSL_REDIRECT = env_bool("EEGAB_SECURE_SSL_REDIRECT", True)
    # Only behind a proxy that sets X-Forwarded-Proto on every request (and drops the client's own):
    # otherwise a client could claim HTTPS.
    if env_bool("EEGAB_SECURE_PROXY_SSL_HEADER", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("EEGAB_SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("EEGAB_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # The preload list's maintainers ask that preloading never be on by default; opting in is
    # the site owner's step (EEGAB_SECURE_HSTS_PRELOAD=true, then submitting the domain).
    SECURE_HSTS_PRELOAD = env_bool("EEGAB_SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # Django's default logging prints nothing when DEBUG is off: send warnings and errors
    # (tracebacks of failed requests and queue tasks included) to stderr, for the service
    # manager's journal, with the queue workers' one line per task and the line each worker
    # logs once it has warmed up (runs.queue.worker.warm_worker).
    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
        "root": {"handlers": ["stderr"], "level": env_str("EEGAB_LOG_LEVEL", "WARNING").upper()},
        "loggers": {"django-q": {"level": "INFO"}, "runs.queue": {"level": "INFO"}},
    }
