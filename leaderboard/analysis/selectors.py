"""The paper's analyses of a board and of a task, read from the runs' summaries.

A board's score distributions, cost and size against Overall, tool use, tokens and rank stability;
a task's confusion matrices, SNR bins, miss and over-alarm rates and recording-length bins.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from benchmark.prompts import OFFICIAL_TOOLS
from benchmark.scoring import PRIMARY_METRIC, TASK_IDS
from benchmark.scoring.classification import INVALID, REFERENCE_CLASSES
from leaderboard import stats
from leaderboard.board.ordering import rank_rows
from leaderboard.board.published import PAPER_BOARD, parse_parameters
from leaderboard.board.ranking import (
    TASK_NAMES,
    LeaderboardRow,
    board_data,
    default_marks,
    show_default_rows,
)
from leaderboard.models import RunSummary
from leaderboard.summaries.scoring import item_score, overall_resamples

SIGNAL_TASKS = TASK_IDS[1:]  # T1 is answered without tools
TOP_BOTTOM = 5
# The six categories of the official tool overview (REFERENCE §2), in its order.
TOOL_CATEGORIES: dict[str, str] = {
    "get_recording_info": "Data overview",
    "get_channel_list": "Data overview",
    "compute_noise_metrics": "Noise metrics",
    "compute_psd": "Spectral analysis",
    "compute_band_power": "Spectral analysis",
    "detect_transients": "Transient detection",
    "compute_temporal_features": "Temporal & spatial features",
    "compute_asymmetry": "Temporal & spatial features",
    "compute_channel_correlation": "Temporal & spatial features",
    "compute_windowed_features": "Windowed / time-series analysis",
}
OTHER_TOOL = "Other"  # a call to a tool outside the ten (answered with "not available")
CATEGORIES = tuple(dict.fromkeys([*TOOL_CATEGORIES.values(), OTHER_TOOL]))
# T6 recording-duration bins (hours). The paper's Figure 7d uses seven bins from "< 8 h" to
# "≥ 20 h" without listing the inner edges; these are ours.
DURATION_EDGES_H = (8, 10, 12, 14, 16, 20)
DURATION_BINS = ("< 8 h", "8–10 h", "10–12 h", "12–14 h", "14–16 h", "16–20 h", "≥ 20 h")
SLEEP_CASSETTE_PREFIX = "SC"
T2_ARTIFACT_CLASSES = ("ocular_contaminated", "muscle_contaminated")


def _median(values: Iterable[float]) -> float | None:
    values = list(values)
    return float(statistics.median(values)) if values else None


def _band(values: Sequence[float]) -> dict[str, float] | None:
    """Median and interquartile range of values across models, None without any."""
    if not values:
        return None
    q1, median, q3 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3)}


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _point(row: LeaderboardRow) -> dict[str, Any]:
    return {"key": row.key, "model": row.model, "source": row.source, "run_id": row.run_id}


@dataclass
class Analysis:
    """The analysis page's data: distributions, cost and scale against Overall, tool use, tokens.

    ``distributions``: per task, ``{"metric", "random_baseline", "models": [point + "score"],
    "instances": [point + "scores"]}``, per-model primary scores (runs and published) and, for
    runs, per-instance scores (``summaries.scoring.item_score``). ``cost_performance``: priced rows with an
    Overall, cheapest first, ``cost_usd`` by the paper's formula, ``on_pareto_frontier``.
    ``scale``: rows with an Overall and their sizes (``parameters_b`` None: not reported).
    ``tool_use``: see ``_tool_use``. ``tokens``: every row's token totals, largest first.
    ``rank_stability``: the runs with an Overall, best first (``keys``), and ``above``, how often
    each ranks above each other across the bootstrap resamples of Overall (``stats.rank_stability``;
    a run of several epochs has its epochs resampled as well).
    """

    suite: str
    is_synthetic: bool
    rows: list[LeaderboardRow]
    distributions: dict[str, dict[str, Any]]
    cost_performance: list[dict[str, Any]]
    scale: list[dict[str, Any]]
    tool_use: dict[str, Any]
    tokens: list[dict[str, Any]]
    rank_stability: dict[str, Any] = field(default_factory=lambda: {"keys": [], "above": []})


def _distributions(rows: list[LeaderboardRow], items: dict[str, dict]) -> dict[str, dict[str, Any]]:
    distributions = {}
    for task in TASK_IDS:
        models = [{**_point(row), "score": row.primary(task)} for row in rows if row.primary(task) is not None]
        instances = []
        for row in rows:
            task_items = items.get(row.key, {}).get(task)
            if task_items:
                scores = [score for score in (item_score(task, item) for item in task_items) if score is not None]
                instances.append({**_point(row), "scores": scores})
        distributions[task] = {
            "task": task,
            "name": TASK_NAMES[task],
            "metric": PRIMARY_METRIC[task],
            "random_baseline": stats.RANDOM_BASELINES[task],
            "models": models,
            "instances": instances,
        }
    return distributions


def _tool_use(rows: list[LeaderboardRow], summaries: dict[str, RunSummary]) -> dict[str, Any]:
    """Tool use of the runs on a board (Figure 4), from their summaries.

    Returns
    -------
    dict
        ``models``: per run, per signal task, the share of its tool calls in each category
        (``rate_by_category``) and tool (``rate_by_tool``), its number of calls, and its median
        tool calls per completed trajectory; ``mean_rate_by_category`` / ``mean_rate_by_tool``:
        those shares averaged equally across the runs that called a tool in the task; ``top`` and
        ``bottom``: keys of the five best and five worst runs by Overall (disjoint; fewer when
        there are fewer than ten); ``median_calls``: per task, the median over each group of the
        runs' medians.
    """
    models = []
    for row in rows:
        summary = summaries.get(row.key)
        if summary is None:
            continue
        entry = {**_point(row), "overall": row.overall, "calls": {}, "median_calls": {},
                 "rate_by_tool": {}, "rate_by_category": {}}
        for task in SIGNAL_TASKS:
            usage = summary.tool_use.get(task)
            if usage is None:
                continue
            total = sum(usage["calls"].values())
            entry["calls"][task] = total
            entry["median_calls"][task] = _median(usage["per_episode"])
            if total:
                entry["rate_by_tool"][task] = {tool: n / total for tool, n in usage["calls"].items()}
                by_category: dict[str, float] = defaultdict(float)
                for tool, n in usage["calls"].items():
                    by_category[TOOL_CATEGORIES.get(tool, OTHER_TOOL)] += n / total
                entry["rate_by_category"][task] = dict(by_category)
        models.append(entry)

    def mean_rates(kind: str, names: Sequence[str]) -> dict[str, dict[str, float]]:
        means = {}
        for task in SIGNAL_TASKS:
            rated = [model[kind][task] for model in models if task in model[kind]]
            if rated:
                means[task] = {name: sum(rates.get(name, 0.0) for rates in rated) / len(rated) for name in names}
        return means

    ranked = [model for model in models if model["overall"] is not None]
    ranked.sort(key=lambda model: -model["overall"])
    n_top = min(TOP_BOTTOM, (len(ranked) + 1) // 2)
    top, bottom = ranked[:n_top], ranked[n_top:][-TOP_BOTTOM:]

    def group_median(group: list[dict], task: str) -> float | None:
        return _median(m["median_calls"][task] for m in group if m["median_calls"].get(task) is not None)

    called = {tool for model in models for rates in model["rate_by_tool"].values() for tool in rates}
    other_tools = sorted(called - set(OFFICIAL_TOOLS))
    return {
        "tasks": list(SIGNAL_TASKS),
        "tools": [*OFFICIAL_TOOLS, *other_tools],
        "categories": list(CATEGORIES),
        "tool_categories": dict(TOOL_CATEGORIES),
        "models": models,
        "mean_rate_by_category": mean_rates("rate_by_category", CATEGORIES),
        "mean_rate_by_tool": mean_rates("rate_by_tool", [*OFFICIAL_TOOLS, *other_tools]),
        "top": [model["key"] for model in top],
        "bottom": [model["key"] for model in bottom],
        "median_calls": {
            task: {"top": group_median(top, task), "bottom": group_median(bottom, task)} for task in SIGNAL_TASKS
        },
    }


def analysis(*, suite: str = PAPER_BOARD) -> Analysis:
    """The analysis page of a board (all rows, no filters); see ``Analysis`` for the fields.

    Raises ``UnknownBoard`` like ``leaderboard``.
    """
    data = board_data(suite, details=True)
    rows = rank_rows(data.rows(), among_paper_rows=data.has_paper_rows)
    summaries = {f"run-{run.pk}": summary for run, summary in data.runs}
    items = {key: summary.items for key, summary in summaries.items()}
    cost_performance = sorted(
        (
            {**_point(row), "cost_usd": float(row.cost_paper_usd), "overall": row.overall,
             "on_pareto_frontier": row.on_pareto_frontier}
            for row in rows if row.cost_paper_usd is not None and row.overall is not None
        ),
        key=lambda point: (point["cost_usd"], -point["overall"]),
    )
    scale = []
    for row in rows:
        if row.overall is None:
            continue
        try:
            active = parse_parameters(row.parameters)[1]
        except ValueError:
            active = None
        scale.append({
            **_point(row), "family": row.family, "parameters": row.parameters, "parameters_b": row.parameters_b,
            "active_parameters_b": active, "is_open_weight": row.is_open_weight, "overall": row.overall,
        })
    tokens = sorted(
        (
            {**_point(row), "prompt_tokens": row.prompt_tokens, "completion_tokens": row.completion_tokens,
             "total_tokens": row.total_tokens}
            for row in rows if row.total_tokens is not None
        ),
        key=lambda point: -point["total_tokens"],
    )
    return Analysis(
        suite=suite,
        is_synthetic=data.is_synthetic,
        rows=rows,
        distributions=_distributions(rows, items),
        cost_performance=cost_performance,
        scale=scale,
        tool_use=_tool_use(rows, summaries),
        tokens=tokens,
        rank_stability=_rank_stability(rows, summaries),
    )


def _rank_stability(rows: list[LeaderboardRow], summaries: dict[str, RunSummary]) -> dict[str, Any]:
    """The runs of ``rows`` with an Overall, in board order, and how often each outranks each other one."""
    resamples = {}
    for row in rows:
        summary = summaries.get(row.key)
        if summary is not None and row.overall is not None:
            distribution = overall_resamples(summary)
            if distribution is not None:
                resamples[row.key] = distribution
    return {"keys": list(resamples), "above": stats.rank_stability(list(resamples.values())).tolist()}


@dataclass
class TaskAnalysis:
    """A task page's data; the parts that do not apply to the task are None.

    ``rows``: every board row with this task's metrics, official flag and ``comparable`` flag with
    its ``reasons`` (on a board with the paper's rows, ``among_paper_rows``, only comparable rows are
    ranked among the paper's), ``rank`` (on the board, by Overall) and the ``DefaultMark`` fields of
    the task: of a model's runs with equal settings, the latest that scored the task completely is
    shown by default. ``confusion`` (T1-T4):
    per run, the pooled confusion matrix (gold rows, predicted columns plus ``__invalid__``).
    ``snr`` (T2): see ``_t2_snr``. ``miss_over_alarm`` (T5): per run, the share of seizure-positive
    records no prediction touches and of seizure-free records with any prediction.
    ``duration_bins`` (T6): see ``_t6_duration_bins``.
    """

    suite: str
    task: str
    name: str
    is_synthetic: bool
    rows: list[dict[str, Any]]
    among_paper_rows: bool = False
    confusion: list[dict[str, Any]] | None = None
    snr: dict[str, Any] | None = None
    miss_over_alarm: list[dict[str, Any]] | None = None
    duration_bins: dict[str, Any] | None = None


def _accuracy(items: Iterable[dict]) -> float | None:
    return _mean(1.0 if item["correct"] else 0.0 for item in items)


def _t2_snr(runs: list[tuple[LeaderboardRow, RunSummary]]) -> dict[str, Any]:
    """Per-class accuracy of T2 by SNR level (Figure 8), per run and as a band across runs.

    Returns ``{"levels": SNR dB from +2 down to -7 (as found), "classes", "models": [point +
    {"clean_accuracy", "accuracy": {class: {level: accuracy}}, "detection_rate",
    "type_confusion"}], "band": {class: {level: {"median", "q1", "q3"}}, "clean": {...}}}``.
    The detection rate is the share of contaminated epochs given either artifact label; the type
    confusion the share of those given the other artifact's label.
    """
    levels = sorted(
        {item["snr_db"] for _, summary in runs for item in summary.items.get("T2", []) if item["snr_db"] is not None},
        reverse=True,
    )
    models = []
    for row, summary in runs:
        items = summary.items.get("T2")
        if not items:
            continue
        contaminated = [item for item in items if item["gold"] in T2_ARTIFACT_CLASSES]
        detected = [item for item in contaminated if item["predicted"] in T2_ARTIFACT_CLASSES]
        models.append({
            **_point(row),
            "clean_accuracy": _accuracy(item for item in items if item["gold"] == "clean"),
            "accuracy": {
                label: {
                    level: _accuracy(item for item in items if item["gold"] == label and item["snr_db"] == level)
                    for level in levels
                }
                for label in T2_ARTIFACT_CLASSES
            },
            "detection_rate": len(detected) / len(contaminated) if contaminated else None,
            "type_confusion": (
                sum(item["predicted"] != item["gold"] for item in detected) / len(detected) if detected else None
            ),
        })
    band = {
        label: {
            level: _band([m["accuracy"][label][level] for m in models if m["accuracy"][label][level] is not None])
            for level in levels
        }
        for label in T2_ARTIFACT_CLASSES
    }
    band["clean"] = _band([m["clean_accuracy"] for m in models if m["clean_accuracy"] is not None])
    return {"levels": levels, "classes": list(T2_ARTIFACT_CLASSES), "models": models, "band": band}


def _duration_bin(duration_sec: float) -> int:
    hours = duration_sec / 3600
    return sum(hours >= edge for edge in DURATION_EDGES_H)


def _t6_duration_bins(runs: list[tuple[LeaderboardRow, RunSummary]]) -> dict[str, Any]:
    """T6 macro-F1 by recording duration on the Sleep Cassette records (Figure 7d).

    Returns ``{"bins": labels, "models": [point + {"macro_f1": [mean per bin or None],
    "n_records": [...]}], "band": [{"median", "q1", "q3"} or None per bin]}``.
    """
    models = []
    for row, summary in runs:
        items = [
            item for item in summary.items.get("T6", [])
            if (item.get("subject") or "").startswith(SLEEP_CASSETTE_PREFIX) and item.get("duration_sec")
        ]
        if not items:
            continue
        by_bin: dict[int, list[float]] = defaultdict(list)
        records: dict[int, set] = defaultdict(set)  # a run of several epochs has a row per night and epoch
        for item in items:
            by_bin[_duration_bin(item["duration_sec"])].append(item["macro_f1"])
            records[_duration_bin(item["duration_sec"])].add(item.get("instance"))
        models.append({
            **_point(row),
            "macro_f1": [_mean(by_bin[index]) for index in range(len(DURATION_BINS))],
            "n_records": [len(records[index]) for index in range(len(DURATION_BINS))],
        })
    band = [
        _band([m["macro_f1"][index] for m in models if m["macro_f1"][index] is not None])
        for index in range(len(DURATION_BINS))
    ]
    return {"bins": list(DURATION_BINS), "models": models, "band": band}


def task_analysis(*, suite: str = PAPER_BOARD, task: str) -> TaskAnalysis:
    """A task page of a board: its rows and the paper's analyses of that task.

    Published rows give only their Table 2 metrics; the analyses come from this site's runs.
    Raises ``UnknownBoard`` like ``leaderboard`` and ``ValueError`` for an unknown task.
    """
    if task not in TASK_IDS:
        raise ValueError(f"unknown task {task!r}; tasks are {', '.join(TASK_IDS)}")
    data = board_data(suite, details=True)
    rows = data.rows()
    show_default_rows(rows)
    rows = rank_rows(rows, among_paper_rows=data.has_paper_rows)
    by_key = {row.key: row for row in rows}
    runs = [(by_key[f"run-{run.pk}"], summary) for run, summary in data.runs if task in summary.tasks]
    runs.sort(key=lambda pair: rows.index(pair[0]))
    scored = [row for row in rows if row.official[task] is not None]
    marks = default_marks(scored, completeness=lambda row: (row.official[task],))
    result = TaskAnalysis(
        suite=suite,
        task=task,
        name=TASK_NAMES[task],
        is_synthetic=data.is_synthetic,
        rows=[
            {**_point(row), "rank": row.rank, "metrics": row.metrics[task], "official": row.official[task],
             "comparable": row.comparable, "reasons": row.comparability.reasons if row.comparability else (),
             **asdict(marks[row.key])}
            for row in scored
        ],  # fmt: skip
        among_paper_rows=data.has_paper_rows,
    )
    if task in REFERENCE_CLASSES:
        classes = list(REFERENCE_CLASSES[task])
        result.confusion = [
            {
                **_point(row),
                "classes": classes,
                "columns": [*classes, INVALID],
                "matrix": [
                    [summary.tasks[task]["metrics"]["confusion"][gold].get(column, 0) for column in (*classes, INVALID)]
                    for gold in classes
                ],
                "per_class": summary.tasks[task]["metrics"].get("per_class"),
            }
            for row, summary in runs
        ]
    if task == "T2":
        result.snr = _t2_snr(runs)
    if task == "T5":
        result.miss_over_alarm = [
            {
                **_point(row),
                "miss_rate": summary.tasks[task]["metrics"].get("miss_rate"),
                "over_alarm_rate": summary.tasks[task]["metrics"].get("over_alarm_rate"),
                "n_positive": summary.tasks[task]["metrics"].get("n_positive"),
                "n_negative": summary.tasks[task]["metrics"].get("n_negative"),
            }
            for row, summary in runs
        ]
    if task == "T6":
        result.duration_bins = _t6_duration_bins(runs)
    return result
