"""A run written in the official runner's output layout (the package's docstring lists its files).

The official ``summarize`` command scores an exported task directory (``--runs
<dir>/Tn/runs.jsonl``) to the numbers our scorer gives the run; a run of several epochs is
written as one such directory per epoch.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmark.scoring import benchmark_summary
from runs.interchange.official import InterchangeError, official_task_summary, run_status, runs_row, trajectory_events
from runs.models import Episode, Run, Status
from runs.reports import json_safe, task_summaries


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(payload), ensure_ascii=False, indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(json_safe(row), ensure_ascii=False, allow_nan=False) + "\n")


def _with_release_id(value: Any, episode: Episode) -> Any:
    """``value`` with the episode's record id replaced by the release's own, in every string.

    The official files name a record by the release's id; ours has its length, so no size a tool
    reported changes.
    """
    ours, theirs = episode.record_id, episode.instance.release_record_id
    if not ours or not theirs or ours == theirs:
        return value
    if isinstance(value, str):
        return value.replace(ours, theirs)
    if isinstance(value, list):
        return [_with_release_id(item, episode) for item in value]
    if isinstance(value, dict):
        return {_with_release_id(key, episode): _with_release_id(item, episode) for key, item in value.items()}
    return value


def _safe_file_name(scenario_id: str) -> str:
    if not scenario_id or "/" in scenario_id or "\\" in scenario_id or scenario_id in (".", ".."):
        raise InterchangeError(f"scenario id {scenario_id!r} cannot name a trajectory file")
    return f"{scenario_id}.jsonl"


def epoch_dir_name(epoch: int) -> str:
    """The directory of a 0-based epoch in the export of a run of several epochs: ``epoch-1``, ``epoch-2``, …"""
    return f"epoch-{epoch + 1}"


def export_run(*, run: Run, out_dir: str | Path) -> list[Path]:
    """Write ``run`` to ``out_dir`` in the official output layout; return the files written.

    ``out_dir`` must not exist or be empty, so that no earlier result is mixed in. A run of
    several epochs is written as one official output directory per epoch,
    ``out_dir/epoch-1/``, ``out_dir/epoch-2/``, …, since the official layout holds one result
    per scenario; each scores on its own (``import_official_run`` reads one of them back).
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise InterchangeError(f"{out} is not empty; export into a new directory.")
    run = Run.objects.select_related("model", "suite").get(pk=run.pk)
    if run.epochs == 1:
        return _export_epoch(run, out, epoch=0)
    written = []
    for epoch in range(run.epochs):
        written += _export_epoch(run, out / epoch_dir_name(epoch), epoch=epoch)
    return written


def _export_epoch(run: Run, out: Path, *, epoch: int) -> list[Path]:
    """Write one epoch of ``run`` to ``out`` in the official output layout; return the files written."""
    summaries = task_summaries(run, epoch=epoch)
    episodes = (
        run.episodes.filter(epoch=epoch, status__in=[Status.COMPLETED, Status.FAILED])
        .select_related("instance__task")
        .prefetch_related("steps")
        .order_by("instance__position", "instance_id")
    )
    by_task = defaultdict(list)
    for episode in episodes:
        by_task[episode.instance.task.code].append(episode)
    written = []
    for task_id, summary in summaries.items():
        task_dir = out / task_id
        rows = []
        for episode in by_task[task_id]:
            steps = sorted(episode.steps.all(), key=lambda step: step.index)
            rows.append(runs_row(episode, steps))
            events = _with_release_id(trajectory_events(episode, steps), episode)
            if events:
                path = task_dir / "trajectories" / _safe_file_name(episode.instance.scenario_id)
                _write_jsonl(path, events)
                written.append(path)
        _write_jsonl(task_dir / "runs.jsonl", rows)
        _write_json(task_dir / "run_status.json", run_status(run, rows))
        _write_json(task_dir / "failed_cases.json", [row for row in rows if row["status"] == "failed"])
        _write_json(task_dir / "summary.json", official_task_summary(summary))
        written += [task_dir / name for name in ("runs.jsonl", "run_status.json", "failed_cases.json", "summary.json")]
    _write_json(out / "benchmark_summary.json", benchmark_summary(summaries))
    written.append(out / "benchmark_summary.json")
    return written
