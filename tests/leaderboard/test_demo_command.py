"""``manage.py demo``: the main job end to end, then the leaderboard lists its runs; serving starts a queue worker
beside the server and stops it with the server, however the server ends."""

import io
import os
import signal
import socket
from contextlib import contextmanager

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from leaderboard.management.commands import demo
from runs.models import Run, Status

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def no_worker(monkeypatch):
    """Fails the test if the command starts a queue worker."""

    def refuse(**kwargs):
        raise AssertionError("a queue worker was started")

    monkeypatch.setattr(demo, "running_worker", refuse)


class FakeWorker:
    """Stands for ``running_worker``: records whether its block was entered and left."""

    pid = 4242

    def __init__(self):
        self.entered = self.left = False

    @contextmanager
    def __call__(self, **kwargs):
        self.entered = True
        try:
            yield self
        finally:
            self.left = True


@pytest.mark.slow
def test_demo_builds_runs_the_baselines_and_the_leaderboard_lists_them(settings, tmp_path, client, no_worker):
    settings.EEGAB_DATA_ROOT = tmp_path / "releases"
    out = io.StringIO()
    call_command("demo", no_serve=True, stdout=out, stderr=io.StringIO())

    runs = Run.objects.filter(suite__name="demo")
    assert sorted(runs.values_list("model__provider_model", flat=True)) == ["baseline/heuristic", "baseline/random"]
    assert all(run.status == Status.COMPLETED for run in runs)
    assert all(run.episodes.filter(status=Status.COMPLETED).count() == run.episodes.count() for run in runs)
    assert "The leaderboard is at http://127.0.0.1:8000/" in out.getvalue()
    # What it printed says what it means: the paper's rows and their models, and a free baseline.
    assert "the paper's 29 published rows are loaded. 29 of their models were new to the platform" in out.getvalue()
    assert "$" not in out.getvalue() and "cost free (built-in baseline)" in out.getvalue()
    assert out.getvalue().rstrip().endswith(demo.sign_in_help("http://127.0.0.1:8000/"))

    page = client.get(reverse("leaderboard:index"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "baseline/heuristic" in html and "baseline/random" in html
    assert "synthetic" in html.lower()

    again = io.StringIO()
    call_command("demo", no_serve=True, stdout=again, stderr=io.StringIO())
    assert again.getvalue().count("Reusing the completed run") == 2
    assert Run.objects.filter(suite__name="demo").count() == 2


def test_the_demo_says_how_staff_and_players_sign_in(client, django_user_model):
    said = demo.sign_in_help("http://127.0.0.1:8000/")
    assert "log in at http://127.0.0.1:8000/accounts/login/" in said
    assert "Make a staff account, in another terminal in this directory: " in said
    assert said.split("\n")[0].endswith(" manage.py createsuperuser")
    assert "invite_player NAME" in said and "sign in on the same page and play at http://127.0.0.1:8000/play/" in said
    django_user_model.objects.create_user("alice", password="x", is_staff=True)
    django_user_model.objects.create_user("bob", password="x")
    said = demo.sign_in_help("http://127.0.0.1:8000/")
    assert "Staff accounts: alice." in said and "createsuperuser" not in said
    page = client.get(reverse("login")).content.decode()
    assert "<h1>Log in</h1>" in page and "players invited by staff" in page
    assert ">Log in</a>" in client.get(reverse("leaderboard:runs")).content.decode()


def test_demo_refuses_an_address_in_use_before_building_anything_or_starting_a_worker(settings, tmp_path, no_worker):
    settings.EEGAB_DATA_ROOT = tmp_path / "releases"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"Cannot serve on 127.0.0.1:{port}: Address already in use"):
            call_command("demo", addrport=f"127.0.0.1:{port}", stdout=io.StringIO(), stderr=io.StringIO())
    assert not (tmp_path / "releases").exists()


def test_a_free_address_is_available():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert demo.unavailable(f"127.0.0.1:{port}") is None
    assert demo.unavailable("not an address") is None  # left to runserver, which says what is wrong


@pytest.mark.parametrize("ending", ["fails", "sigterm", "ctrl-c"])
def test_the_worker_is_stopped_with_the_server_however_it_ends(monkeypatch, ending):
    worker = FakeWorker()
    monkeypatch.setattr(demo, "running_worker", worker)
    before = signal.getsignal(signal.SIGTERM)

    def runserver(name, *args, **kwargs):
        assert name == "runserver" and worker.entered and not worker.left  # the worker runs beside the server
        # whitenoise serves the static files, collected and compressed, rather than runserver's own handler
        assert kwargs == {"use_reloader": False, "use_static_handler": False}
        if ending == "fails":
            raise RuntimeError("the server failed")
        if ending == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "call_command", runserver)
    out = io.StringIO()
    expected = {"fails": RuntimeError, "sigterm": SystemExit, "ctrl-c": KeyboardInterrupt}[ending]
    with pytest.raises(expected):
        demo.serve_with_a_worker("127.0.0.1:8000", stdout=out)
    assert worker.left
    assert signal.getsignal(signal.SIGTERM) is before
    assert "Started a queue worker (python manage.py qcluster, process 4242)" in out.getvalue()
