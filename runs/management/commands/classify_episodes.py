"""``manage.py classify_episodes [--run ID] [--again]``: the failure modes of ended episodes, stored."""
import json
from collections import Counter

from django.core.management.base import BaseCommand

from runs.episode.engine import store_failure_modes
from runs.failures import CODES
from runs.management.console import get_run
from runs.models import Episode, Status

BATCH = 500


class Command(BaseCommand):
    help = (
        "Classify the failure modes and evidence coverage (docs/failure_modes.md) of every ended episode not "
        "classified yet: imported runs, and runs played before episodes were classified when they ended. "
        "Prints how many episodes have each mode."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, help="only this run's episodes")
        parser.add_argument("--again", action="store_true", help="classify episodes already classified too")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    def handle(self, *args, **options):
        episodes = Episode.objects.filter(status__in=(Status.COMPLETED, Status.FAILED))
        if options["run"] is not None:
            episodes = episodes.filter(run=get_run(options["run"]))
        if not options["again"]:
            episodes = episodes.filter(failure_modes__isnull=True)
        ids = list(episodes.order_by("id").values_list("id", flat=True))
        counts, classified = Counter(), 0
        for start in range(0, len(ids), BATCH):
            batch = Episode.objects.filter(pk__in=ids[start:start + BATCH]).select_related("instance__task")
            for episode in batch.order_by("id"):
                store_failure_modes(episode)
                if episode.failure_modes is not None:
                    classified += 1
                    counts.update(mode["code"] for mode in episode.failure_modes)
            self.stderr.write(f"\r{min(start + BATCH, len(ids))} / {len(ids)} episodes", ending="")
        if ids:
            self.stderr.write("")
        if options["json"]:
            self.stdout.write(json.dumps({"classified": classified, "of": len(ids),
                                          "modes": {code: counts[code] for code in CODES if counts[code]}}))
            return
        self.stdout.write(f"{classified} of {len(ids)} episode(s) classified.")
        for code in CODES:
            if counts[code]:
                self.stdout.write(f"  {code:22s} {counts[code]:6d}")
