"""Two runs of one suite compared, as the comparison page and ``/api/runs/compare/`` read it.

The statistics are ``summaries.pairs``'; this module finds the two runs and their up-to-date
summaries, says why two runs cannot be compared, and names each shared instance by its record.
Who sees which part is the view's to decide (``leaderboard.access``).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.http import QueryDict

from benchmark.models import Instance, Release
from config.ids import query_id
from leaderboard.summaries.pairs import CHANGES, Comparison, InstancePair, compare_summaries
from leaderboard.summaries.scoring import current_summary, stored_summary
from runs.models import Run


class ComparisonError(ValueError):
    """Why two runs cannot be compared (the page answers 400 with it)."""


@dataclass
class RunComparison:
    a: Run
    b: Run
    comparison: Comparison
    records: dict[int, str]

    @property
    def suite(self):
        return self.a.suite


def _run_id(value: str, name: str) -> int:
    value = (value or "").strip()
    if not value:
        raise ComparisonError(f"Choose run {name.upper()}: ?a=<run id>&b=<run id>.")
    run_id = query_id(value)
    if run_id is None:
        raise ComparisonError(f"Run {name.upper()} must be a run's number, not {value[:40]!r}.")
    return run_id


def chosen_ids(query: QueryDict) -> tuple[int, int]:
    """The ids of runs A and B from ``?a=&b=``, or from two ``?run=`` (the rows ticked on a leaderboard, in
    the table's order): the upper row is B and the lower A, so that B − A asks whether the upper one is better."""
    picked = query.getlist("run")
    if picked and not (query.get("a") or query.get("b")):
        if len(picked) != 2:
            raise ComparisonError(f"Tick exactly two runs of the board to compare them, not {len(picked)}.")
        return _run_id(picked[1], "a"), _run_id(picked[0], "b")
    return _run_id(query.get("a", ""), "a"), _run_id(query.get("b", ""), "b")


def compared_runs(a_id: int, b_id: int) -> tuple[Run, Run]:
    """Runs A and B with their model and suite; ``ComparisonError`` when they cannot be compared, a
    ``Run.DoesNotExist`` when one does not exist."""
    if a_id == b_id:
        raise ComparisonError(f"Runs A and B are both run {a_id}: choose two runs.")
    runs = {
        run.pk: run
        for run in Run.objects.select_related("model", "suite__release", "leaderboard_summary")
        .defer(*Release.unread("suite__release"))
        .filter(pk__in=(a_id, b_id))
    }
    missing = [run_id for run_id in (a_id, b_id) if run_id not in runs]
    if missing:
        raise Run.DoesNotExist(f"No run {missing[0]}.")
    a, b = runs[a_id], runs[b_id]
    if a.suite_id != b.suite_id:
        raise ComparisonError(
            f"Run {a.pk} is on suite {a.suite.name} and run {b.pk} on {b.suite.name}: only runs on the same suite "
            "answer the same instances and can be compared."
        )
    return a, b


def run_comparison(a: Run, b: Run) -> RunComparison:
    """Runs A and B compared from their summaries as they stand (re-scored in memory when stale)."""
    summaries = [current_summary(run, stored=stored_summary(run)) for run in (a, b)]
    comparison = compare_summaries(*summaries)
    ids = {pair.instance for pair in comparison.instances} | {entry["instance"] for entry in comparison.only}
    records = dict(Instance.objects.filter(pk__in=ids).values_list("id", "record_id"))
    return RunComparison(a=a, b=b, comparison=comparison, records=records)


def filtered_instances(comparison: Comparison, *, task: str = "", change: str = "") -> list[InstancePair]:
    """The shared instances of one task and one change (empty: all), regressions first."""
    return [
        pair for pair in comparison.instances
        if (not task or pair.task == task) and (not change or pair.change == change)
    ]


def change_counts(comparison: Comparison) -> dict[str, int]:
    counts = dict.fromkeys(CHANGES, 0)
    for pair in comparison.instances:
        counts[pair.change] += 1
    return counts


def _side_json(side) -> dict:
    return {"episode": side.episode, "score": side.score, "correct": side.correct}


def comparison_json(data: RunComparison, *, instances: bool) -> dict:
    """The API's answer: the runs, per task and Overall the paired figures, and (with ``instances``) every
    shared instance, regressions first, and those only one run played; ``instances`` null without."""
    comparison = data.comparison
    return {
        "a": data.a.pk,
        "b": data.b.pk,
        "models": {"a": data.a.model.name, "b": data.b.model.name},
        "suite": data.suite.name,
        "tasks": {
            code: {
                "metric": task.metric, "a": task.a, "b": task.b, "difference": task.difference, "ci": list(task.ci),
                "p_value": task.p_value, "test": task.test, "n_units": task.n_units, "unit": task.unit,
                "improved": task.improved, "regressed": task.regressed, "only_a": task.only_a, "only_b": task.only_b,
            }
            for code, task in comparison.tasks.items()
        },  # fmt: skip
        "overall": None if comparison.overall is None else {**comparison.overall, "ci": list(comparison.overall["ci"])},
        "instances": [
            {"instance": pair.instance, "record_id": data.records.get(pair.instance), "task": pair.task,
             "a": _side_json(pair.a), "b": _side_json(pair.b), "change": pair.change}
            for pair in comparison.instances
        ] if instances else None,  # fmt: skip
        "only_one_run": [
            {**entry, "record_id": data.records.get(entry["instance"])} for entry in comparison.only
        ] if instances else None,  # fmt: skip
    }
