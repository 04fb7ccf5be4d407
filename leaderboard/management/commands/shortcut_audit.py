"""``manage.py shortcut_audit SUITE``: how far one tool output goes on each signal task, cross-validated."""
import json

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Suite
from leaderboard.audit.rules import SIGNAL_TASKS, AuditError
from leaderboard.audit.runner import audit_suite


class Command(BaseCommand):
    help = (
        "Fit a one-feature rule (a threshold, ordered thresholds or nearest class mean) on every scalar one "
        "default tool call returns, by stratified k-fold cross-validation over the suite's instances, score "
        "the held-out predictions with the official scorer, and store each task's best feature as a reference "
        'for the task pages and the leaderboard. --json prints {"tasks": {"T3": {"primary_metric", '
        '"best": {"feature", "rule", "score", "ci"}, "candidates": [...]}}}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("suite", help="suite name (manage.py list_suites)")
        parser.add_argument("--tasks", default="",
                            help=f"comma-separated signal tasks (default: those of {','.join(SIGNAL_TASKS)} the suite has)")
        parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the folds and the bootstrap (default 0)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, **options):
        suite = Suite.objects.filter(name=options["suite"]).first()
        if suite is None:
            raise CommandError(f"no suite is named {options['suite']!r} (manage.py list_suites lists them)")
        tasks = self._tasks(suite, options["tasks"])
        if options["folds"] < 2:
            raise CommandError(f"--folds must be at least 2, got {options['folds']}")
        if options["seed"] < 0:
            raise CommandError(f"--seed must be 0 or more, got {options['seed']}")
        try:
            result = audit_suite(suite=suite, tasks=tasks, folds=options["folds"], seed=options["seed"],
                                 progress=lambda line: (self.stderr.write(line), self.stderr.flush()))
        except AuditError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
            return
        for task, audit in result["tasks"].items():
            best = audit["best"]
            self.stdout.write(f"{task} {audit['primary_metric']} {best['score']:.3f} "
                              f"[{best['ci'][0]:.3f}, {best['ci'][1]:.3f}]: {best['rule']}")
            for candidate in audit["candidates"]:
                self.stdout.write(f"    then {candidate['score']:.3f}: {candidate['rule']}")

    @staticmethod
    def _tasks(suite: Suite, listed: str) -> list[str]:
        present = set(suite.instances.values_list("task__code", flat=True).distinct())
        if not listed:
            tasks = [task for task in SIGNAL_TASKS if task in present]
            if not tasks:
                raise CommandError(f"suite {suite.name!r} has no instances of a signal task ({', '.join(SIGNAL_TASKS)})")
            return tasks
        tasks = [task.strip().upper() for task in listed.split(",") if task.strip()]
        for task in tasks:
            if task not in SIGNAL_TASKS:
                raise CommandError(f"unknown task {task!r}: the audit covers the signal tasks {', '.join(SIGNAL_TASKS)}")
            if task not in present:
                raise CommandError(f"suite {suite.name!r} has no {task} instances")
        return list(dict.fromkeys(tasks))
