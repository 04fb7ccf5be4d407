"""Item analysis of a task on a board: per instance, how many runs played it, how often they solved it, and
whether the runs that solve it are the better ones; and every run's episode of one instance.

An instance's value in a run is its correctness (T1-T4: 1 or 0) or its item score (T5's record Event-F1,
T6's night macro-F1, ``summaries.scoring.item_score``), the mean over epochs for a run of several. Its
solve rate (T1-T4) or mean item score (T5, T6) is the mean of that value over the runs that played it;
its discrimination is the corrected item-total correlation (``paired.item_total_correlation``): across
runs, the value against the run's task score without the instance, by the task's own metric
(``paired.leave_one_out``). Everything is read from the runs' summaries, as the board reads them.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import QuerySet
from django.http import HttpRequest

from benchmark.models import Instance
from benchmark.scoring import TASK_IDS
from benchmark.scoring.hypnogram import STAGES, expand_rle
from benchmark.scoring.seizure import parse_raw_events
from leaderboard.access import visible_episodes
from leaderboard.board.comparability import comparability
from leaderboard.board.ranking import board_data
from leaderboard.formats import score as score_text
from leaderboard.formats import seizure_counts_text
from leaderboard.outcomes import shown_outcome, with_outcome
from leaderboard.paired import item_total_correlation, leave_one_out
from leaderboard.summaries import scoring
from leaderboard.summaries.scoring import item_score, task_sample
from runs.models import Episode, Status

SOLVED_BY_ALL = "solved_by_all"
SOLVED_BY_NONE = "solved_by_none"
FLAG_NAMES = {SOLVED_BY_ALL: "solved by every run", SOLVED_BY_NONE: "solved by none"}
#: ``?flag=``: one of the two flags, or ``flagged`` for either.
FLAG_FILTERS = (SOLVED_BY_ALL, SOLVED_BY_NONE, "flagged")
#: ``?runs=`` on a board with the paper's rows: the runs comparable with them (the default), or every run.
RUN_CHOICES = ("comparable", "all")
#: ``?sort=``: ascending, or descending with a leading "-"; ``score`` is the solve rate or mean item score.
SORT_KEYS = ("discrimination", "score", "n_runs")
SORTS = (*SORT_KEYS, *(f"-{key}" for key in SORT_KEYS))
#: The tasks whose instances are scored rather than right or wrong.
SCORED_TASKS = ("T5", "T6")
#: Seizure intervals an answer's summary names before "…".
EVENTS_NAMED = 3


def value_name(task: str) -> str:
    """The name of an instance's figure on ``task``: ``solve_rate`` (T1-T4) or ``mean_score`` (T5, T6)."""
    return "mean_score" if task in SCORED_TASKS else "solve_rate"


def item_value(task: str, row: Mapping[str, Any]) -> float:
    """An instance's value in one epoch of a run, from its summary row: correctness or item score.

    ``summaries.scoring.item_value`` (a T5 record answered with silence and free of seizures counts
    1.0), NaN for a row never scored.
    """
    value = scoring.item_value(task, row)
    return math.nan if value is None else float(value)


def run_items(task: str, rows: Sequence[Mapping[str, Any]]) -> dict[int, tuple[float, float]]:
    """The instances of ``task`` one run played: instance id -> (value, task score without the instance).

    ``rows`` are the run's summary rows of the task (``RunSummary.items[task]``). The score without an
    instance is the task's own metric on the run's other rows, as its board scores them (an episode
    not completed counting as a wrong answer). But only a completed episode is a play of its
    instance: a pending one has not been played yet, a failed one failed for a reason of its own
    (a provider's error), and neither says anything of the instance. For a run of several epochs
    (rows with ``epoch``) both figures are computed per epoch, then averaged over the epochs in
    which the run played the instance.
    """
    by_epoch: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_epoch[row.get("epoch", 0)].append({key: value for key, value in row.items() if key != "epoch"})
    per_instance: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for epoch_rows in by_epoch.values():
        rest = leave_one_out(task_sample(task, epoch_rows))
        for row, rest_score in zip(epoch_rows, rest):
            if row["episode"] is not None:
                per_instance[row["instance"]].append((item_value(task, row), float(rest_score)))
    return {
        instance: (float(np.mean([value for value, _ in pairs])), float(np.mean([rest for _, rest in pairs])))
        for instance, pairs in per_instance.items()
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _flag(values: np.ndarray) -> str | None:
    """``solved_by_all`` when every run's value is at its maximum 1, ``solved_by_none`` when every one is 0."""
    played = values[~np.isnan(values)]
    if not played.size:
        return None
    if played.min() >= 1.0:
        return SOLVED_BY_ALL
    if played.max() <= 0.0:
        return SOLVED_BY_NONE
    return None


def item_rows(
    task: str, instances: Sequence[tuple[int, str]], runs: Sequence[Mapping[int, tuple[float, float]]]
) -> list[dict[str, Any]]:
    """Each instance's figures over ``runs`` (each ``run_items``' result), JSON-ready, in ``instances``' order.

    ``instances`` are (id, record id). A row: ``instance``, ``record_id``, ``n_runs``, the solve rate or
    mean score (``value_name``), ``discrimination`` (None with fewer than 3 runs or when either side is
    constant over them) and ``flag``; the figures are None where no run played the instance.
    """
    columns = {instance_id: index for index, (instance_id, _) in enumerate(instances)}
    values = np.full((len(runs), len(instances)), np.nan)
    rest = np.full((len(runs), len(instances)), np.nan)
    for position, items in enumerate(runs):
        for instance_id, (value, rest_score) in items.items():
            if instance_id in columns:
                values[position, columns[instance_id]] = value
                rest[position, columns[instance_id]] = rest_score
    discrimination = item_total_correlation(values, rest) if runs else np.full(len(instances), np.nan)
    played = (~np.isnan(values)).sum(axis=0)
    name = value_name(task)
    rows = []
    for index, (instance_id, record_id) in enumerate(instances):
        column = values[:, index]
        rows.append({
            "instance": instance_id,
            "record_id": record_id,
            "n_runs": int(played[index]),
            name: float(np.nanmean(column)) if played[index] else None,
            "discrimination": _number(discrimination[index]),
            "flag": _flag(column),
        })
    return rows


@dataclass
class ItemAnalysis:
    """A task's item analysis on a board.

    ``runs`` says which runs were counted: ``comparable`` (on a board with the paper's rows, by
    default) or ``all``; ``run_ids`` are those runs; ``n_published`` the paper's rows on the board,
    which give no per-instance result and are never counted; ``items`` as ``item_rows`` gives them,
    in the suite's order (``listed_items`` orders and filters them).
    """

    suite: str
    task: str
    runs: str
    among_paper_rows: bool
    n_published: int
    run_ids: list[int]
    items: list[dict[str, Any]]

    @property
    def value_name(self) -> str:
        return value_name(self.task)


def item_analysis(*, suite: str, task: str, runs: str | None = None) -> ItemAnalysis:
    """The item analysis of ``task`` over the runs of board ``suite`` that have a summary.

    On a board with the paper's rows, ``runs`` is ``comparable`` (the default: the runs comparable
    with them, ``board.comparability``) or ``all``; on any other board every run counts. Five queries
    whatever the number of runs and instances: the board's four (``board_data``) and the task's instances.
    Raises ``ranking.UnknownBoard`` for a board that does not exist and ``ValueError`` for an
    unknown task or choice of runs.
    """
    if task not in TASK_IDS:
        raise ValueError(f"unknown task {task!r}; tasks are {', '.join(TASK_IDS)}")
    if runs is not None and runs not in RUN_CHOICES:
        raise ValueError(f"runs must be one of {', '.join(RUN_CHOICES)}, not {runs!r}")
    data = board_data(suite, details=True)
    counted = (runs or "comparable") if data.has_paper_rows else "all"
    chosen = [
        (run, summary) for run, summary in data.runs
        if summary.items.get(task) and (counted == "all" or comparability(run, suite=data.suite).comparable)
    ]  # fmt: skip
    instances = (
        list(
            Instance.objects.filter(suite=data.suite, task__code=task)
            .order_by("position", "id")
            .values_list("id", "record_id")
        )
        if data.suite is not None
        else []
    )
    return ItemAnalysis(
        suite=suite,
        task=task,
        runs=counted,
        among_paper_rows=data.has_paper_rows,
        n_published=len(data.published),
        run_ids=[run.pk for run, _ in chosen],
        items=item_rows(task, instances, [run_items(task, summary.items[task]) for _, summary in chosen]),
    )


def _sort_key(key: str, descending: bool):
    """Missing figures last in either direction, then the instances no run played; ties by record id
    (random, where the release's order follows the labels in some tasks)."""
    def sort_key(row: dict) -> tuple:
        value = row[key]
        ordered = 0.0 if value is None else -value if descending else value
        return value is None, ordered, row["n_runs"] == 0, row["record_id"]

    return sort_key


def listed_items(
    analysis: ItemAnalysis, *, sort: str = "discrimination", flag: str | None = None, figures: bool = True
) -> list[dict[str, Any]]:
    """The rows a page or the API lists: ``sort``ed (``SORTS``), only those of ``flag`` (``FLAG_FILTERS``).

    Without ``figures`` (a visitor who may not see references: an instance that every run solved and
    the answers its episodes show would tell its reference) the rows keep their instance, record id
    and number of runs, the figures are None, and they are listed by record id whatever ``sort`` and
    ``flag`` say, so that neither the order nor the selection tells the figures.
    """
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    if flag is not None and flag not in FLAG_FILTERS:
        raise ValueError(f"flag must be one of {', '.join(FLAG_FILTERS)}, not {flag!r}")
    name = analysis.value_name
    if not figures:
        hidden = {name: None, "discrimination": None, "flag": None}
        return sorted(({**row, **hidden} for row in analysis.items), key=lambda row: row["record_id"])
    rows = analysis.items
    if flag is not None:
        rows = [row for row in rows if row["flag"] is not None and flag in (row["flag"], "flagged")]
    key = sort.removeprefix("-")
    return sorted(rows, key=_sort_key(name if key == "score" else key, sort.startswith("-")))


# ── one instance ────────────────────────────────────────────────────────────────────────────

def answer_text(episode: Episode) -> str:
    """An episode's answer in a few words, as its page shows it: the label (T1-T4), the seizure
    intervals (T5), the stages' shares of the night (T6); empty for an episode that was not completed."""
    if episode.status != Status.COMPLETED:
        return ""
    if episode.final_answer is None:
        return "no answer"
    task, prediction = episode.instance.task.code, episode.prediction if isinstance(episode.prediction, dict) else {}
    if task == "T5":
        events = parse_raw_events(prediction.get("seizure_events"))
        if not events:
            return "no seizure"
        named = [f"{onset:g}–{offset:g} s" for onset, offset in events[:EVENTS_NAMED]]
        more = " …" if len(events) > EVENTS_NAMED else ""
        return f"{len(events)} seizure{'s' if len(events) != 1 else ''}: {', '.join(named)}{more}"
    if task == "T6":
        labels = expand_rle(prediction.get("hypnogram_rle") or [], episode.instance.epochs_total or 0).labels
        counts = Counter(labels)
        shares = [f"{stage} {100 * counts[stage] / len(labels):.0f} %" for stage in STAGES if counts[stage]]
        return " · ".join(shares) if shares else "an empty hypnogram"
    return (episode.scores or {}).get("predicted") or "no valid answer"


def instance_episodes(request: HttpRequest, instance: Instance, *, references: bool) -> list[dict[str, Any]]:
    """Every episode of ``instance`` this visitor may see (one query), by model, run and epoch.

    Each: ``episode``, ``answer`` (``answer_text``), ``outcome`` (correct and wrong only with
    ``references``) and ``score``, the item score as text, only with ``references``.
    """
    episodes: QuerySet = with_outcome(visible_episodes(request, Episode.objects.filter(instance=instance)))
    listed = []
    for episode in episodes.select_related("run__model").order_by("run__model__name", "run_id", "epoch"):
        episode.instance = instance  # the page's own, with its task: no query per episode
        listed.append({
            "episode": episode,
            "answer": answer_text(episode),
            "outcome": shown_outcome(episode.outcome, references=references),
            "score": _score_shown(instance.task.code, episode.scores) if references else "",
        })
    return listed


def _score_shown(task: str, scores: Mapping[str, Any] | None) -> str:
    """An episode's item score as text: the score, or for T5 a record whose Event-F1 is undefined its counts."""
    if not scores:
        return ""
    value = item_score(task, scores)
    if value is None and task == "T5":
        return seizure_counts_text(scores)
    return score_text(value) if value is not None else ""
