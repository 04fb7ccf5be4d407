"""A run's outcome: each task's official summary over its episodes, and the report the command line prints and exports."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from benchmark.scoring import TASK_IDS, score_task
from benchmark.scoring import overall as official_overall
from benchmark.scoring.epochs import answered_correctly, combine_epochs, epochs_entry, overall_over_epochs
from runs.episode.scoring import scoring_item
from runs.models import TOKEN_FIELDS, Episode, Run, Status


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None, recursively (strict JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def task_summaries(run: Run, *, epoch: int | None = None) -> dict[str, dict]:
    """The official scorer's summary of each task of the run, over the run's episodes (of ``epoch`` only, if given).

    A completed episode is scored on its prediction; a failed one counts as a result that
    did not complete (it makes the summary unofficial and scores as an empty answer, as the
    official scorer would see it); an episode that never ended has no result. A run of several
    epochs is scored one epoch at a time: its epochs together hold each instance several times.
    """
    return _summaries(_episodes_by_task(run, epoch))


def _episodes_by_task(run: Run, epoch: int | None) -> dict[str, list[Episode]]:
    """The run's episodes (of ``epoch`` only, if given) per task, in task order, each task's in
    instance order: the order of its summary's ``per_item``."""
    episodes = run.episodes.all() if epoch is None else run.episodes.filter(epoch=epoch)
    episodes = episodes.select_related("instance__task").order_by(
        "instance__task__code", "instance__position", "instance_id"
    )
    by_task = defaultdict(list)
    for episode in episodes:
        by_task[episode.instance.task.code].append(episode)
    return dict(sorted(by_task.items()))


def _summaries(episodes_by_task: dict[str, list[Episode]]) -> dict[str, dict]:
    """The official scorer's summary of each task over its episodes (see ``task_summaries``)."""
    return {
        code: _score(code, [(episode.instance, episode) for episode in episodes])
        for code, episodes in episodes_by_task.items()
    }


def _score(code: str, played: list[tuple[Any, Episode | None]]) -> dict:
    """The official scorer's summary of ``code`` over ``(instance, its episode)`` pairs, in instance order.

    An instance without an episode (None) counts as a result that was never submitted, as the
    leaderboard scores an instance a run's epoch did not play.
    """
    items = []
    for instance, episode in played:
        status = episode.status if episode is not None else None
        completed = status == Status.COMPLETED
        items.append(
            scoring_item(
                instance,
                episode.prediction if completed else None,
                submitted=status in (Status.COMPLETED, Status.FAILED),
                completed=completed,
            )
        )
    return score_task(code, items)


def _scalars(metrics: dict) -> dict:
    return {
        key: value
        for key, value in metrics.items()
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    }


def mean_of_primaries(summaries: dict[str, dict]) -> float | None:
    """The mean of the six primary scores, whether or not they are official; None without all six tasks."""
    if sorted(summaries) != list(TASK_IDS):
        return None
    scores = [summaries[task]["primary_score"] for task in TASK_IDS]
    if any(score is None for score in scores):
        return None
    return sum(float(score) for score in scores) / len(scores)


def run_report(run: Run, summaries: dict[str, dict] | None = None) -> dict:
    """A run's outcome as JSON-ready data: episodes, usage, each task's metrics, and Overall.

    ``tasks`` maps each task to its primary metric and score, whether that is official, why
    not, its completeness and its scalar metrics under the official names. ``overall`` is the
    mean of the six primary scores when the run covers all six tasks, and ``overall_official``
    says whether it is the official Overall (all six summaries official).

    A run of several epochs reports what its leaderboard summary holds instead: each task's
    means over epochs, each scored on its own, with an ``epochs`` entry (per-epoch primary
    scores, their standard deviation, flip rate, and pass^k and pass@k for T1-T4), and
    ``overall_epochs``.
    """
    run = Run.objects.select_related("model", "suite__release").get(pk=run.pk)
    if run.epochs > 1:
        return _epochs_report(run)
    summaries = task_summaries(run) if summaries is None else summaries
    return json_safe({
        **_report_head(run),
        "tasks": {code: _task_report(summary, summary["n_items"]) for code, summary in summaries.items()},
        "overall": mean_of_primaries(summaries),
        "overall_official": official_overall(summaries) is not None,
    })


def _task_report(summary: dict, n_items: int) -> dict:
    return {
        "primary_metric": summary["primary_metric"],
        "primary_score": summary["primary_score"],
        "official": summary["official"],
        "reasons": summary["reasons"],
        "n_items": n_items,
        "completeness": summary["completeness"],
        "metrics": _scalars(summary["metrics"]),
    }


def _report_head(run: Run) -> dict:
    return {
        "run_id": run.pk,
        "name": run.name,
        "status": run.status,
        "source": run.source,
        "model": run.model.name,
        "provider_model": run.model.provider_model,
        "suite": run.suite.name,
        "synthetic": run.suite.is_synthetic,
        "episodes": run.progress(),
        "usage": {
            **{name: getattr(run, name) for name in TOKEN_FIELDS},
            "cost_usd": None if run.cost_usd is None else float(run.cost_usd),
        },
    }


def _epochs_report(run: Run) -> dict:
    """``run_report`` of a run of several epochs: each epoch scored on its own, then combined.

    The leaderboard's summary of the run is computed the same way, by the same functions
    (``benchmark.scoring.epochs``): a task's summary is the mean of its epochs', its ``n_items``
    counts an episode per instance and epoch, and an instance is correct in an epoch by the run
    page's rule (``answered_correctly``). Every epoch plays the same instances (``create_run``);
    an instance an epoch has no episode of (an admin deleted it) counts there as not submitted
    and not correct, as the leaderboard scores it.
    """
    per_epoch = [_episodes_by_task(run, epoch) for epoch in range(run.epochs)]
    # Each task's instances that any epoch played, in instance order: an epoch without an episode of
    # one (an admin deleted it) scores it as not submitted, and not correct, as the leaderboard does.
    instances: dict[str, dict[int, Any]] = defaultdict(dict)
    for episodes_by_task in per_epoch:
        for code, episodes in episodes_by_task.items():
            for episode in episodes:
                instances[code].setdefault(episode.instance_id, episode.instance)
    ordered = {
        code: sorted(found.values(), key=lambda instance: (instance.position, instance.pk))
        for code, found in sorted(instances.items())
    }
    scored: list[dict[str, dict]] = []
    # Per task, per instance (in instance order), whether each epoch answered it correctly.
    correct: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for episodes_by_task in per_epoch:
        summaries = {}
        for code, task_instances in ordered.items():
            episodes = {episode.instance_id: episode for episode in episodes_by_task.get(code, [])}
            played = [(instance, episodes.get(instance.pk)) for instance in task_instances]
            summaries[code] = _score(code, played)
            for (instance, episode), scores in zip(played, summaries[code]["per_item"]):
                correct[code][instance.pk].append(
                    episode is not None
                    and answered_correctly(
                        code,
                        scores,
                        completed=episode.status == Status.COMPLETED,
                        answered=episode.final_answer is not None,
                    )
                )
        scored.append(summaries)
    combined = {}
    for code in scored[0]:
        summaries = [epoch_summaries[code] for epoch_summaries in scored]
        combined[code] = combine_epochs(summaries, len(correct[code]))
        combined[code]["epochs"] = epochs_entry(
            code, [summary["primary_score"] for summary in summaries], list(correct[code].values())
        )
    tasks = {
        code: {**_task_report(summary, summary["completeness"]["expected"]), "epochs": summary["epochs"]}
        for code, summary in combined.items()
    }
    return json_safe({
        **_report_head(run),
        "epochs": run.epochs,
        "tasks": tasks,
        "overall": mean_of_primaries(combined),
        "overall_official": official_overall(combined) is not None,
        "overall_epochs": overall_over_epochs(combined),
    })
