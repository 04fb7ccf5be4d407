"""``manage.py demo``: the main job — a populated site from nothing, on 127.0.0.1:8000.

Migrates, builds the synthetic demo release if it is absent, imports the paper's published
results, runs the two built-in agents on the demo suite, then serves the site with a queue
worker beside it (a ``manage.py qcluster`` child process, stopped with the server), so that a
run started from the site plays. Its static files are collected (compressed the first time) and
served by whitenoise as a deployment serves them, compressed: plotly.js is 1.1 MB in brotli,
1.5 MB gzipped, instead of 4.8 MB. Everything it makes is reused by the next ``demo``, which is
serving within seconds. Its last lines say how to sign in: a staff account to make, and where
players sign in.
"""
import os
import re
import signal
import socket
import sys
import time

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.management.commands.runserver import naiveip_re

from benchmark.models import Suite
from runs.models import Run, Status
from runs.queue.workers import WORKER_COMMAND, running_worker

DEMO_SUITE = "demo"
BASELINES = ("baseline/heuristic", "baseline/random")
ADDRESS = "127.0.0.1:8000"


def unavailable(addrport: str) -> str | None:
    """Why the server could not listen on ``addrport`` (as runserver reads it), or None when it can.

    runserver leaves by ``os._exit`` when it cannot listen, so it is asked first, before a worker
    is started or anything is built.
    """
    match = re.match(naiveip_re, addrport)
    if match is None:
        return None  # runserver refuses it with its own message
    addr, _, ipv6, _, port = match.groups()
    host = (addr[1:-1] if ipv6 else addr) if addr else "127.0.0.1"
    with socket.socket(socket.AF_INET6 if ipv6 else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver's own socket
        try:
            probe.bind((host, int(port)))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def sign_in_help(url: str) -> str:
    """How to sign in to the demo at ``url``: as staff (the accounts there are, or how to make one), or as a player."""
    python = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd() + os.sep) else sys.executable
    staff = sorted(get_user_model().objects.filter(is_staff=True, is_active=True).values_list("username", flat=True))
    if staff:
        account = f"Staff accounts: {', '.join(staff)}."
    else:
        account = f"Make a staff account, in another terminal in this directory: {python} manage.py createsuperuser"
    return (
        f"Staff start, cancel and resume runs from the site: they log in at {url}accounts/login/ (\"Log in\", top "
        f"right). {account}\nPlayers, invited with {python} manage.py invite_player NAME (which prints their "
        f"password), sign in on the same page and play at {url}play/."
    )


def _exit_on_sigterm(signum, frame):
    sys.exit(0)  # unwinds through runserver, so that the worker is stopped too


def serve_with_a_worker(addrport: str, *, stdout) -> None:
    """runserver in this process and a queue worker beside it, both ended by Ctrl-C, SIGTERM or a failure."""
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        with running_worker() as worker:
            stdout.write(
                f"Started a queue worker ({WORKER_COMMAND}, process {worker.pid}): runs started from the "
                "site play at once. It stops with the server."
            )
            # whitenoise serves the files collected at start, compressed (config.settings), not runserver's handler
            call_command("runserver", addrport, use_reloader=False, use_static_handler=False)
    finally:
        signal.signal(signal.SIGTERM, previous)


class Command(BaseCommand):
    help = (
        "Set up the demo site: migrate, build the synthetic demo release, import the paper's results, "
        f"run {' and '.join(BASELINES)} on it, and serve the site on http://{ADDRESS}/ with a queue worker "
        f"({WORKER_COMMAND}) that plays the runs started from the site."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-serve", action="store_true", help="stop once everything is built, serving nothing and starting no worker"
        )
        parser.add_argument("--addrport", default=ADDRESS, help=f"where to serve (default {ADDRESS})")

    def handle(self, *args, **options):
        started = time.perf_counter()
        serve = not options["no_serve"]
        if serve and (reason := unavailable(options["addrport"])):
            raise CommandError(
                f"Cannot serve on {options['addrport']}: {reason}. Stop what listens there, or give another "
                "address, e.g. --addrport 127.0.0.1:8001."
            )
        self._step("Migrating the database", call_command, "migrate", interactive=False, verbosity=0)
        if serve:
            self._step("Collecting the static files, compressed", call_command, "collectstatic",
                       interactive=False, verbosity=0)
        self._step("Building the synthetic demo release", call_command, "build_demo_release",
                   stdout=self.stdout, stderr=self.stderr)
        self._step("Importing the paper's published results", call_command, "import_published",
                   stdout=self.stdout)
        suite = Suite.objects.get(name=DEMO_SUITE)
        for model in BASELINES:
            if Run.objects.filter(suite=suite, model__provider_model=model, status=Status.COMPLETED).exists():
                self.stdout.write(f"Reusing the completed run of {model} on the {DEMO_SUITE} suite.")
                continue
            self._step(f"Running {model} on the {DEMO_SUITE} suite", call_command, "run_benchmark",
                       model=model, suite=DEMO_SUITE, sync=True, stdout=self.stdout, stderr=self.stderr)
        url = f"http://{options['addrport']}/"
        self.stdout.write(self.style.SUCCESS(
            f"Ready in {time.perf_counter() - started:.1f} s. The leaderboard is at {url}"
        ))
        self.stdout.write(sign_in_help(url))
        if serve:
            serve_with_a_worker(options["addrport"], stdout=self.stdout)

    def _step(self, title, function, *args, **kwargs):
        self.stdout.write(self.style.MIGRATE_HEADING(title + " …"))
        function(*args, **kwargs)
