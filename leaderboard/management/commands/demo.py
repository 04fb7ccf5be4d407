"""``manage.py demo``: the main job — a populated site from nothing, on 127.0.0.1:8000.

Migrates, builds the synthetic demo release if it is absent, imports the paper's published
results, runs the two built-in agents on the demo suite, then serves the site. Everything it
makes is reused by the next ``demo``, which is serving within seconds.
"""
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand

from benchmark.models import Suite
from runs.models import Run, Status

DEMO_SUITE = "demo"
BASELINES = ("baseline/heuristic", "baseline/random")
ADDRESS = "127.0.0.1:8000"


class Command(BaseCommand):
    help = (
        "Set up the demo site: migrate, build the synthetic demo release, import the paper's results, "
        f"run {' and '.join(BASELINES)} on it, and serve the site on http://{ADDRESS}/."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-serve", action="store_true", help="stop once everything is built (for CI)")
        parser.add_argument("--addrport", default=ADDRESS, help=f"where to serve (default {ADDRESS})")

    def handle(self, *args, **options):
        started = time.perf_counter()
        self._step("Migrating the database", call_command, "migrate", interactive=False, verbosity=0)
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
        if not options["no_serve"]:
            call_command("runserver", options["addrport"], use_reloader=False)

    def _step(self, title, function, *args, **kwargs):
        self.stdout.write(self.style.MIGRATE_HEADING(title + " …"))
        function(*args, **kwargs)
