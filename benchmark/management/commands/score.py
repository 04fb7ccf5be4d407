"""``manage.py score``: score predictions in the official formats with the official rules."""

import json
import math

from django.core.management.base import BaseCommand, CommandError

from benchmark.scoring import score_task
from benchmark.scoring.files import ScoringInputError, load_items


def _finite(value):
    """JSON has no NaN or Infinity: undefined figures are printed as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


class Command(BaseCommand):
    help = (
        "Score one task's predictions against its answer key and print the summary as JSON: "
        '{"task_id", "official", "n_items", "metrics", "per_item"}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--scenarios", required=True, help="scenario file (benchmark/scenarios/Tn.jsonl)")
        parser.add_argument("--answer-key", required=True, help="answer key (benchmark/answer_keys/Tn.jsonl)")
        parser.add_argument(
            "--predictions", required=True,
            help='prediction lines {"scenario_id", "prediction"}, e.g. an official runs.jsonl',
        )
        parser.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")

    def handle(self, *args, **options):
        try:
            task_id, items, extra = load_items(
                options["scenarios"], options["answer_key"], options["predictions"]
            )
            summary = score_task(task_id, items, extra=extra)
        except (ScoringInputError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        output = {
            "task_id": summary["task_id"],
            "official": summary["official"],
            "reasons": summary["reasons"],
            "n_items": summary["n_items"],
            "primary_metric": summary["primary_metric"],
            "primary_score": summary["primary_score"],
            "completeness": summary["completeness"],
            "metrics": summary["metrics"],
            "per_item": summary["per_item"],
        }
        self.stdout.write(json.dumps(_finite(output), indent=options["indent"], allow_nan=False))
