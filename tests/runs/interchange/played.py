"""Runs played to their end for the interchange tests, and reading the JSON lines an export writes."""
import json
from pathlib import Path

from runs import services, specs
from runs.queue import worker
from runs.services import create_run


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def play(run, **loop_options):
    for episode in run.episodes.order_by("id"):
        worker.play_episode(episode_id=episode.pk, **loop_options)
    return services.finish_run(run_id=run.pk)


def baseline_run(suite, model="baseline/random", **options):
    spec = specs.model_spec_for(model)
    return play(create_run(suite=suite, model=spec, tasks=["T1", "T2", "T3", "T4", "T5", "T6"], **options))
