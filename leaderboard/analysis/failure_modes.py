"""How a board's runs fail (issue 35): the share of their episodes with each failure mode, and their evidence
coverage on T5 and T6 beside the task's score, aggregated in the database.

An episode's failure modes and evidence coverage are stored when it ends (``runs.failures``); an
episode ended before that has none until ``manage.py classify_episodes`` classifies it, and
counts nowhere here. Only ended episodes count: completed or failed, not cancelled.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from django.db.models import Avg, Count

from benchmark.scoring import PRIMARY_METRIC, TASK_IDS
from leaderboard.access import REFERENCE_MODES
from leaderboard.models import RunSummary
from runs import failures
from runs.models import Episode, Status

ALL_TASKS = "all"
#: The tasks whose evidence coverage is charted against their score (on long records, where too little is a mode).
COVERAGE_TASKS = tuple(sorted(failures.COVERAGE_TASKS))
CLASSIFIED_STATUSES = (Status.COMPLETED, Status.FAILED)


def shown_codes(*, references: bool) -> dict[str, str]:
    """``CODES`` (code → definition, in display order) without those telling the reference unless ``references``."""
    return {code: definition for code, definition in failures.CODES.items()
            if references or code not in REFERENCE_MODES}


def _ended(run_ids: Sequence[int]):
    return Episode.objects.filter(run_id__in=list(run_ids), status__in=CLASSIFIED_STATUSES)


def mode_shares(run_ids: Sequence[int], *, references: bool) -> dict[int, dict[str, dict]]:
    """The share of each run's classified episodes that has each failure mode, per task and over all, in one query.

    Parameters
    ----------
    run_ids : sequence of int
        The runs.
    references : bool
        Whether the modes that tell an episode's reference (``access.REFERENCE_MODES``) are counted;
        without, they are left out.

    Returns
    -------
    dict
        ``{run_id: {task: {"n": int, "modes": {code: share}}}}``: per task code in task order, then
        ``"all"``, ``n`` the run's ended (completed or failed) episodes of the task that are classified
        and ``modes`` the share of them (in [0, 1]) with each code, in ``CODES`` order, codes no
        episode has left out. A run without a classified episode is absent.
    """
    if not run_ids:
        return {}
    # One row per run, task and combination of codes: a few hundred rows however many episodes.
    groups = (
        _ended(run_ids).filter(failure_modes__isnull=False)
        .values_list("run_id", "instance__task__code", "failure_codes")
        .annotate(n=Count("id"))
        .order_by()
    )
    counted = shown_codes(references=references)
    episodes: dict[int, Counter] = defaultdict(Counter)
    modes: dict[int, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for run_id, task, codes, n in groups:
        for key in (task, ALL_TASKS):
            episodes[run_id][key] += n
            for code in set(codes.split()) & counted.keys():
                modes[run_id][key][code] += n
    keys = (*TASK_IDS, ALL_TASKS)
    return {
        run_id: {key: _shares(totals[key], modes[run_id][key], counted) for key in keys if totals[key]}
        for run_id, totals in episodes.items()
    }


def _shares(n: int, with_code: Counter, codes: Iterable[str]) -> dict:
    """``n`` episodes and the share of them with each of ``codes`` that some have (``with_code``: how many)."""
    return {"n": n, "modes": {code: with_code[code] / n for code in codes if with_code[code]}}


def coverage_scores(run_ids: Sequence[int], *, task: str) -> dict[int, dict]:
    """Each run's mean evidence coverage on ``task`` (T5 or T6) beside its primary score of the task, in two queries.

    Returns ``{run_id: {"coverage": mean in [0, 1], "n": episodes averaged, "score": primary score or
    None}}`` over the ended episodes of the task that have a coverage; a run without one is absent.
    The score is its stored summary's, as a board row carries it (``board.ranking.run_row``):
    summaries are stored as episodes end, so a finished run's is current and a playing run's at most
    ``summaries.scoring.SUMMARY_REFRESH_SEC`` behind. Re-scoring one here would cost a query over
    every episode of the runs.
    """
    if task not in COVERAGE_TASKS:
        raise ValueError(f"evidence coverage is charted for {', '.join(COVERAGE_TASKS)}, not {task!r}")
    coverage = {
        run_id: (mean, n)
        for run_id, mean, n in _ended(run_ids).filter(instance__task__code=task, evidence_coverage__isnull=False)
        .values_list("run_id").annotate(mean=Avg("evidence_coverage"), n=Count("id")).order_by()
    }
    scores = dict(RunSummary.objects.filter(run_id__in=list(coverage)).values_list(
        "run_id", f"tasks__{task}__metrics__{PRIMARY_METRIC[task]}"
    ))
    return {run_id: {"coverage": mean, "n": n, "score": scores.get(run_id)} for run_id, (mean, n) in coverage.items()}
