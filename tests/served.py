"""The site served as in production, for tests that attack it over HTTP: gunicorn with DEBUG off on the test's database.

``served_database`` (a fixture: import it into a test module) gives the test a database that another
process sees: a migrated SQLite file on SQLite (``tests.runs.worker.file_database``), the test
database itself, committed as the test writes (``transactional_db``, with the serialized rollback
that gives later tests back what the migrations wrote), on PostgreSQL. ``gunicorn``
serves ``config.wsgi`` on it as ``docs/deploy.md`` does (with one worker, ``--timeout 60``), with the
production settings of ``tests.test_deploy`` but plain HTTP, and this process's ``SECRET_KEY``, so
that a session signed here holds there. Its output (Django's log of errors included) goes to ``log``.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from tests.runs import worker
from tests.test_deploy import ROOT, production_environment


@pytest.fixture
def served_database(tmp_path, django_db_serialized_rollback, transactional_db) -> Iterator[str]:
    """The URL of a database the test writes to and a served process reads, committed as it goes."""
    connection = connections["default"]
    if connection.vendor == "sqlite":
        with worker.file_database(tmp_path / "db.sqlite3") as path:
            yield f"sqlite:///{path}"
        return
    db = connection.settings_dict
    yield f"{connection.vendor}://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def gunicorn(database_url: str, *, log: Path, **env) -> Iterator[str]:
    """gunicorn serving the site on ``database_url`` for the block; yields the address to send requests to."""
    port = free_port()
    environment = production_environment()
    environment.update(
        SECRET_KEY=settings.SECRET_KEY, ALLOWED_HOSTS="127.0.0.1", EEGAB_SECURE_SSL_REDIRECT="false",
        DATABASE_URL=database_url, EEGAB_DATA_ROOT=str(settings.EEGAB_DATA_ROOT), **env,
    )  # fmt: skip
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", "1", "--timeout", "60", "--no-control-socket"]  # one per user otherwise, shared
    with open(log, "ab") as output:
        server = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, server, log)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_for(port: int, server: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"gunicorn ended ({server.returncode}):\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"gunicorn did not listen on port {port} within {timeout} s:\n{log.read_text()}")
