"""A real ``manage.py qcluster`` (or another command) in a subprocess, on a given SQLite file, for tests and benchmarks.

The command runs in its own process group (a cluster's sentinel, pusher, monitor and workers),
so that ``kill`` can end all of it at once, by that group's id, the way a lost machine would.
Settings are overridden in the child before Django starts: the database file, ``Q_CLUSTER``
entries and any other setting (the lease and heartbeat periods, ``DEBUG``). The heavy modules
are imported before a cluster forks its workers, so a worker is ready at once.
"""
import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAUNCHER = """
import json, os, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from django.conf import settings
overrides = json.loads(sys.argv[1])
settings.DATABASES["default"]["NAME"] = overrides.pop("DATABASE_NAME")
settings.Q_CLUSTER.update(overrides.pop("Q_CLUSTER", {}))
for name, value in overrides.items():
    setattr(settings, name, value)
import django
django.setup()
import litellm, runs.tasks, tools_app.tools  # noqa: F401  (loaded once, before the workers fork)
from django.core.management import call_command
call_command(*json.loads(sys.argv[2]))
"""


def start(database: Path, *, workers: int, log: Path, q_cluster: dict | None = None, **settings) -> subprocess.Popen:
    """Start a cluster of ``workers`` processes on the SQLite file ``database``; its output goes to ``log``."""
    q_cluster = {"workers": workers, "poll": 0.05, **(q_cluster or {})}
    return start_command(database, ["qcluster"], log=log, Q_CLUSTER=q_cluster, **settings)


def start_command(database: Path, arguments: list[str], *, log: Path, **settings) -> subprocess.Popen:
    """Start ``manage.py`` with ``arguments`` on the SQLite file ``database``; its output goes to ``log``."""
    overrides = {"DATABASE_NAME": str(database), **settings}
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL")}
    with open(log, "ab") as output:
        return subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, json.dumps(overrides), json.dumps(arguments)],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill(process: subprocess.Popen, sig: int = signal.SIGKILL, *, timeout: float = 30) -> None:
    """Send ``sig`` to the whole cluster (its process group) and wait for the launcher to end."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    process.wait(timeout=timeout)


def stop(process: subprocess.Popen) -> None:
    """Stop the cluster: SIGTERM to its main process, which shuts the cluster down; SIGKILL after 15 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


@contextmanager
def qcluster(database: Path, *, workers: int, log: Path, **options):
    """A running cluster for the ``with`` block."""
    process = start(database, workers=workers, log=log, **options)
    try:
        yield process
    finally:
        stop(process)


def wait_until(condition, *, timeout: float, what: str, interval: float = 0.05):
    """Poll ``condition`` until it returns something truthy, and return that; fail after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@contextmanager
def file_database(path: Path):
    """Point Django's default connection at a new, migrated SQLite file for the block.

    pytest-django's SQLite test database lives in memory, where no other process can see
    it; a subprocess worker needs a file. The in-memory connection is set aside untouched
    and given back afterwards. Threads opened meanwhile use the file too (they read the same
    settings); each closes its own connection when it ends.
    """
    import pytest
    from django.core.management import call_command
    from django.db import connections

    connection = connections["default"]
    if connection.vendor != "sqlite":
        pytest.skip("the worker subprocess is pointed at a SQLite file; on other databases this test needs "
                    "the test database shared with the subprocess, which it does not set up")
    saved_name, saved_connection = connection.settings_dict["NAME"], connection.connection
    connection.connection = None
    connection.settings_dict["NAME"] = str(path)
    try:
        call_command("migrate", verbosity=0)
        yield path
    finally:
        connection.close()
        connection.settings_dict["NAME"] = saved_name
        connection.connection = saved_connection
