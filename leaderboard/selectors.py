"""Read and aggregation queries behind the leaderboard pages and the REST API.

A *board* is named by a suite. It shows every run on that suite that has at least one completed
episode and, on the paper's suite (``eegagentbench``), the 29 rows the paper published; a board
whose suite comes from a synthetic release (the demo) is marked synthetic. Scores come from each
run's ``RunSummary`` (the official scorer's summaries, which the runs side keeps up to date through
``services.episodes_ended``). Nothing here writes: a summary that is missing or out of date (an
episode ended since its last refresh, or a run stored before summaries were) is re-scored in memory
and not saved (``services.current_summary``), so what is shown always matches the episodes. Every
function runs the same number of queries whatever the number of runs, episodes or steps, once the
summaries are fresh.

Values are JSON-ready (floats, ints, str, None) except costs, which stay ``Decimal`` on rows.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
from django.db.models import Count, Q, QuerySet

from benchmark.models import OFFICIAL_TASKS, Instance, ModelSpec, Release, Suite, Task
from benchmark.prompts import OFFICIAL_TOOLS
from benchmark.scoring import PRIMARY_METRIC, SECONDARY_METRICS, TASK_IDS
from benchmark.scoring.classification import INVALID, REFERENCE_CLASSES
from benchmark.scoring.epochs import overall_over_epochs
from leaderboard import stats
from leaderboard.access import ENDED
from leaderboard.comparability import Comparability, comparability, run_settings
from leaderboard.models import PublishedResult, RunSummary, ShortcutAudit
from leaderboard.published import CITATION, PAPER_BOARD, parse_parameters
from leaderboard.services import current_summary, item_score, overall_resamples, task_signatures
from runs.agents import is_baseline
from runs.cost import Pricing
from runs.models import Episode, Run, Status, Step

TASK_NAMES = {spec["code"]: spec["name"] for spec in OFFICIAL_TASKS}
# (task, metric, is_primary) of every leaderboard column, in table order.
METRIC_COLUMNS: tuple[tuple[str, str, bool], ...] = tuple(
    (task, metric, metric == PRIMARY_METRIC[task])
    for task in TASK_IDS
    for metric in (PRIMARY_METRIC[task], *SECONDARY_METRICS[task])
)
SOURCES = ("run", "published")
# Which run of a model and settings a board shows and ranks (``default_marks``), as its downloads and the API say.
DEFAULT_ROWS = (
    "one row per model and settings (prompt set, tool protocol, max tokens, temperature): the latest of its most "
    "completely scored runs; its other runs with the same settings are not ranked"
)
# The one-feature shortcut audit's reference row: its name and its ``source`` in downloads.
AUDIT_LABEL = "one-feature audit"
AUDIT_SOURCE = "one_feature_audit"
WEIGHTS = ("open", "proprietary")
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


class UnknownBoard(LookupError):
    """No suite and no published rows go by that name."""


# ── the leaderboard ─────────────────────────────────────────────────────────────────────────

@dataclass
class LeaderboardRow:
    """One row of a board: a run of this site or a row the paper published.

    ``metrics`` has every task's primary and secondary metrics (None where not scored);
    ``official`` says per task whether its summary is official (None: not scored). ``overall``
    is set when all six tasks are scored and is the official Overall when ``overall_official``.
    ``cost_usd`` is the cache-aware cost of a run (the paper's estimate for a published row);
    ``cost_paper_usd`` is the paper's formula for both, and the frontier uses it. ``rank`` is
    the position by Overall; ``tie_group`` and ``tie_range`` (first and last rank of the group)
    gather the ranks whose intervals overlap the group leader's (a row without an interval is a
    group of its own). ``comparability`` says whether a run is comparable with the paper's rows
    (None for a published row); on a board with the paper's rows, only those and the comparable
    runs are ranked. A run of several epochs has ``epochs`` > 1: its Overall and primary scores
    are means over epochs, ``overall_epochs`` the per-epoch Overall with its standard deviation
    (``benchmark.scoring.epochs.overall_over_epochs``), and ``epoch_stats`` per task the
    summary's ``epochs`` entry (per-epoch scores, ``sd``, ``flip_rate``, and ``pass_hat_k`` and
    ``pass_at_k`` for T1-T4). ``settings`` are a run's (``comparability.run_settings``, None for a
    published row); of a model's runs with equal settings the board shows one by default
    (``shown_by_default``, see ``default_marks``), ``default_run_id`` (the run it shows, for each of
    them) and ``n_other_runs`` (on that run's row, how many others it stands for).
    """

    source: str
    model: str
    family: str
    parameters: str
    parameters_b: float | None
    context_window: int | None
    is_open_weight: bool | None
    group: str
    run_id: int | None
    run_name: str
    run_status: str
    overall: float | None
    overall_official: bool
    overall_ci: tuple[float, float] | None
    metrics: dict[str, dict[str, float | None]]
    official: dict[str, bool | None]
    cost_usd: Decimal | None
    cost_paper_usd: Decimal | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    rank: int | None = None
    tie_group: int | None = None
    tie_range: tuple[int, int] | None = None
    on_pareto_frontier: bool = False
    comparability: Comparability | None = None
    epochs: int = 1
    overall_epochs: dict[str, Any] | None = None
    epoch_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline: bool = False  # a built-in baseline's run: it calls no model and costs nothing
    settings: dict[str, Any] | None = None
    shown_by_default: bool = True
    default_run_id: int | None = None
    n_other_runs: int = 0

    @property
    def overall_sd(self) -> float | None:
        """The standard deviation of the per-epoch Overall of a run of several epochs, else None."""
        return self.overall_epochs["sd"] if self.overall_epochs else None

    @property
    def comparable(self) -> bool:
        """Whether the row may be ranked among the paper's: a published row, or a comparable run."""
        return self.comparability is None or self.comparability.comparable

    @property
    def key(self) -> str:
        """Stable id of the row on its board, for charts and anchors."""
        return f"run-{self.run_id}" if self.source == "run" else f"published-{self.model}"

    @property
    def is_published(self) -> bool:
        return self.source == "published"

    def primary(self, task: str) -> float | None:
        return self.metrics[task][PRIMARY_METRIC[task]]

    @property
    def experiment(self) -> tuple:
        """What a run repeats when another run shares it: its model and settings (a published row's own key)."""
        if self.settings is None:
            return (self.key,)
        return (self.model, *((name, _hashable(value)) for name, value in self.settings.items()))


@dataclass
class Leaderboard:
    """A board: its rows ranked best first, and what the filters can choose from.

    ``among_paper_rows``: the board holds the paper's rows, so only they and comparable runs are ranked.
    """

    suite: str
    suite_obj: Suite | None
    is_synthetic: bool
    rows: list[LeaderboardRow]
    families: list[str]
    filters: dict[str, Any] = field(default_factory=dict)
    citation: str = ""
    among_paper_rows: bool = False
    default_rows: str = DEFAULT_ROWS

    @property
    def has_published(self) -> bool:
        return any(row.is_published for row in self.rows)

    @property
    def n_other_runs(self) -> int:
        """How many of the rows are runs the board does not show by default (``default_marks``)."""
        return sum(not row.shown_by_default for row in self.rows)

    @functools.cached_property
    def audits(self) -> dict[str, ShortcutAudit]:
        """The one-feature shortcut audit of the board's suite per task: a reference beside the rows, never ranked.

        Read when first shown (one query), so that ranking a board costs no more.
        """
        return shortcut_audits(suite=self.suite)


@dataclass(frozen=True)
class Board:
    """A board as the index of boards lists it."""

    name: str
    suite: Suite | None
    is_synthetic: bool
    n_runs: int
    n_published: int


def _metrics_template() -> dict[str, dict[str, float | None]]:
    return {task: {metric: None for metric in (PRIMARY_METRIC[task], *SECONDARY_METRICS[task])} for task in TASK_IDS}


def paper_cost(spec: ModelSpec, prompt_tokens: int, completion_tokens: int) -> Decimal | None:
    """The paper's cost estimate (§6.7) of these tokens for this model; None when it is unpriced.

    Every input token at the standard input price, cache or not; the built-in baselines cost 0.
    """
    pricing = Pricing.free() if is_baseline(spec.provider_model) else Pricing.for_model(spec)
    return pricing.paper_cost(prompt_tokens, completion_tokens)


def _model_fields(spec: ModelSpec) -> dict[str, Any]:
    return {
        "model": spec.name,
        "family": spec.family,
        "parameters": spec.parameters,
        "parameters_b": spec.parameters_b,
        "context_window": spec.context_window,
        "is_open_weight": spec.is_open_weight,
    }


def _run_row(run: Run, summary: RunSummary, *, suite: Suite) -> LeaderboardRow:
    metrics, official = _metrics_template(), dict.fromkeys(TASK_IDS)
    for task, task_summary in summary.tasks.items():
        metrics[task] = {metric: task_summary["metrics"].get(metric) for metric in metrics[task]}
        official[task] = task_summary["official"]
    return LeaderboardRow(
        source="run",
        **_model_fields(run.model),
        group="",
        run_id=run.pk,
        run_name=str(run),
        run_status=run.status,
        overall=summary.overall,
        overall_official=summary.overall_official,
        overall_ci=summary.overall_ci,
        metrics=metrics,
        official=official,
        cost_usd=run.cost_usd,
        cost_paper_usd=paper_cost(run.model, run.prompt_tokens, run.completion_tokens),
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        total_tokens=run.prompt_tokens + run.completion_tokens,
        comparability=comparability(run, suite=suite),
        epochs=run.epochs,
        overall_epochs=overall_over_epochs(summary.tasks),
        epoch_stats={task: scored["epochs"] for task, scored in summary.tasks.items() if "epochs" in scored},
        baseline=is_baseline(run.model.provider_model),
        settings=run_settings(run),
    )


def _published_row(result: PublishedResult) -> LeaderboardRow:
    metrics = _metrics_template()
    for task, values in result.metrics.items():
        metrics[task] = {metric: values.get(metric) for metric in metrics[task]}
    if result.input_price_per_mtok is not None and result.output_price_per_mtok is not None:
        pricing = Pricing(
            source="model_spec",
            input_per_mtok=result.input_price_per_mtok,
            output_per_mtok=result.output_price_per_mtok,
        )
        cost = pricing.paper_cost(result.prompt_tokens or 0, result.completion_tokens or 0)
    else:
        cost = None
    return LeaderboardRow(
        source="published",
        **_model_fields(result.model),
        group=result.group,
        run_id=None,
        run_name="",
        run_status="",
        overall=result.overall,
        overall_official=True,
        overall_ci=None,
        metrics=metrics,
        official=dict.fromkeys(TASK_IDS, True),
        cost_usd=cost,
        cost_paper_usd=cost,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        total_tokens=result.total_tokens,
    )


def _hashable(value: Any) -> Any:
    """A setting's value as part of a key: a number as itself (0 and 0.0 are one temperature), a list or dict as JSON."""
    return value if isinstance(value, (str, int, float, type(None))) else json.dumps(value, sort_keys=True)


def overall_completeness(row: LeaderboardRow) -> tuple:
    """How completely a row is scored: every task on every instance, every task, how many tasks completely, how many."""
    scored = [official for official in row.official.values() if official is not None]
    return (row.overall is not None and row.overall_official, row.overall is not None, sum(scored), len(scored))


@dataclass(frozen=True)
class DefaultMark:
    """Whether a board shows a row by default, the run it shows for the row's model and settings
    (None for a published row), and, on that run's row, how many other runs it stands for."""

    shown_by_default: bool
    default_run_id: int | None
    n_other_runs: int


def default_marks(
    rows: Iterable[LeaderboardRow], *, completeness: Callable[[LeaderboardRow], tuple] = overall_completeness
) -> dict[str, DefaultMark]:
    """Which row a board shows for each model and settings (``LeaderboardRow.experiment``), by row key.

    Of a model's runs with equal settings, the latest (the highest id) of those ``completeness``
    puts first; a published row stands for itself. The choice never looks at a score: the best of
    several runs would flatter a model that was run more often.
    """
    runs: dict[tuple, list[LeaderboardRow]] = defaultdict(list)
    for row in rows:
        runs[row.experiment].append(row)
    marks = {}
    for group in runs.values():
        shown = max(group, key=lambda row: (*completeness(row), row.run_id or 0))
        for row in group:
            marks[row.key] = DefaultMark(row is shown, shown.run_id, len(group) - 1 if row is shown else 0)
    return marks


def _show_default_rows(rows: list[LeaderboardRow]) -> None:
    """Mark on ``rows`` the row of each model and settings the board shows (``default_marks``)."""
    marks = default_marks(rows)
    for row in rows:
        mark = marks[row.key]
        row.shown_by_default, row.default_run_id, row.n_other_runs = (
            mark.shown_by_default, mark.default_run_id, mark.n_other_runs
        )


def _rank(rows: list[LeaderboardRow], *, among_paper_rows: bool = False) -> list[LeaderboardRow]:
    """Order rows best first, number them, group overlapping intervals and mark the frontier.

    Only the rows shown by default (``shown_by_default``) are ranked and on the frontier, and on a
    board with the paper's rows (``among_paper_rows``) only the paper's rows and the comparable runs
    among them; every other row keeps its place by Overall, without a number.
    """
    rows = sorted(rows, key=lambda row: (row.overall is None, -(row.overall or 0.0), row.model, row.key))
    shown = [row for row in rows if row.shown_by_default]
    ranked = [row for row in shown if row.overall is not None and (row.comparable or not among_paper_rows)]
    groups = stats.tie_groups([row.overall_ci for row in ranked])
    spans: dict[int, list[int]] = defaultdict(list)
    for position, (row, group) in enumerate(zip(ranked, groups), start=1):
        row.rank, row.tie_group = position, group
        spans[group].append(position)
    for row in ranked:
        positions = spans[row.tie_group]
        row.tie_range = (positions[0], positions[-1])
    frontier = stats.pareto_frontier([row.cost_paper_usd for row in shown], [row.overall for row in shown])
    for row, on_frontier in zip(shown, frontier):
        row.on_pareto_frontier = on_frontier
    return rows


@dataclass
class _BoardData:
    """What a board is built from: its suite (None for a published-only board), runs and published rows."""

    name: str
    suite: Suite | None
    runs: list[tuple[Run, RunSummary]]
    published: list[PublishedResult]

    @property
    def is_synthetic(self) -> bool:
        return bool(self.suite and self.suite.release.is_synthetic)

    def rows(self) -> list[LeaderboardRow]:
        runs = [_run_row(run, summary, suite=self.suite) for run, summary in self.runs]
        return runs + [_published_row(p) for p in self.published]

    @property
    def has_paper_rows(self) -> bool:
        return bool(self.published)


def _stored_summary(run: Run) -> RunSummary | None:
    return getattr(run, "leaderboard_summary", None)


def _fresh_summaries(runs: Sequence[Run]) -> list[tuple[Run, RunSummary]]:
    """Runs with at least one completed episode, each with an up-to-date summary (unsaved when stale)."""
    signatures = task_signatures(run_ids=[run.pk for run in runs])
    fresh = []
    for run in runs:
        signature = signatures.get(run.pk, {})
        if not any(task["completed"] for task in signature.values()):
            continue
        fresh.append((run, current_summary(run, stored=_stored_summary(run), signatures=signature)))
    return fresh


def _board_data(name: str, *, details: bool) -> _BoardData:
    """Everything a board shows, in four queries; ``details`` adds the per-instance rows and tool use.

    The board of a held-out suite shows runs that have ended only (``leaderboard.access``).
    """
    suite = Suite.objects.select_related("release").filter(name=name).first()
    published = list(PublishedResult.objects.filter(board=name).select_related("model").order_by("position"))
    if suite is None and not published:
        raise UnknownBoard(f"no suite and no published results are named {name!r}")
    runs: list[tuple[Run, RunSummary]] = []
    if suite is not None:
        queryset = Run.objects.filter(suite=suite).select_related("model", "leaderboard_summary").order_by("id")
        if suite.is_held_out:
            queryset = queryset.filter(status__in=ENDED)
        if not details:
            queryset = queryset.defer("leaderboard_summary__items", "leaderboard_summary__tool_use")
        runs = _fresh_summaries(list(queryset))
    return _BoardData(name=name, suite=suite, runs=runs, published=published)


def leaderboard(
    *, suite: str = PAPER_BOARD, source: str | None = None, family: str | None = None, weights: str | None = None
) -> Leaderboard:
    """The board of ``suite``, optionally filtered, ranked by Overall.

    Parameters
    ----------
    suite : str
        Suite name (the board's name).
    source : {"run", "published"}, optional
        Only this site's runs, or only the paper's rows.
    family : str, optional
        Only models of this family (case-insensitive).
    weights : {"open", "proprietary"}, optional
        Only open-weight or only proprietary models (models of unknown kind are left out).

    Returns
    -------
    Leaderboard
        Rows best first. One row per model and settings is shown by default (``shown_by_default``:
        the latest of its most completely scored runs, ``default_marks``), the others beside it
        unranked. Ranks, tie groups and the Pareto frontier are those of the rows shown by default.
        A run's Overall is the mean of its six primary scores when all six tasks are scored
        (``overall_official`` when all six are official, that is, complete), blank otherwise:
        a mean over some of the tasks would not compare with the others. Its interval is a
        95% percentile bootstrap over instances (1,000 resamples within each task, seeded).
        Published rows have no interval, so they are never tied: each is a tie group of its own.

    Raises
    ------
    UnknownBoard
        When no suite and no published rows go by ``suite``.
    ValueError
        For a ``source`` or ``weights`` outside the choices.
    """
    if source is not None and source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    if weights is not None and weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    data = _board_data(suite, details=False)
    rows = data.rows()
    _show_default_rows(rows)
    families = sorted({row.family for row in rows if row.family}, key=str.casefold)
    if source is not None:
        rows = [row for row in rows if row.source == source]
    if family:
        rows = [row for row in rows if row.family.casefold() == family.casefold()]
    if weights is not None:
        rows = [row for row in rows if row.is_open_weight is (weights == "open")]
    return Leaderboard(
        suite=suite,
        suite_obj=data.suite,
        is_synthetic=data.is_synthetic,
        rows=_rank(rows, among_paper_rows=data.has_paper_rows),
        families=families,
        filters={"source": source, "family": family, "weights": weights},
        citation=CITATION if data.published else "",
        among_paper_rows=data.has_paper_rows,
    )


def shortcut_audits(*, suite: str) -> dict[str, ShortcutAudit]:
    """The stored one-feature shortcut audit of each task of ``suite`` (``manage.py shortcut_audit``), by task code."""
    return {audit.task: audit for audit in ShortcutAudit.objects.filter(suite__name=suite).order_by("task")}


def audit_json(audits: dict[str, ShortcutAudit], *, rules: bool) -> dict[str, dict[str, Any]]:
    """The audits as JSON, per task: the stored result with its folds, seed and date.

    Without ``rules`` (anyone but staff) each candidate keeps its feature, score and interval but
    not its rule: the thresholds were fitted on the answer key, and with them anyone who can call
    the tools could label the instances as well as the audit does.
    """

    def shown(candidate: dict) -> dict:
        return candidate if rules else {key: value for key, value in candidate.items() if key != "rule"}

    return {
        task: {**audit.result, "best": shown(audit.best),
               "candidates": [shown(candidate) for candidate in audit.result.get("candidates", [])],
               "folds": audit.folds, "seed": audit.seed, "created_at": audit.created_at.isoformat()}
        for task, audit in audits.items()
    }


def boards() -> list[Board]:
    """Every board: the paper's first, then real suites by name, synthetic ones last (two queries)."""
    published = dict(PublishedResult.objects.values_list("board").annotate(n=Count("id")).order_by())
    suites = {
        suite.name: suite
        for suite in Suite.objects.select_related("release").annotate(n_runs=Count("runs")).order_by("name")
    }
    listed = [
        Board(
            name=name,
            suite=suites.get(name),
            is_synthetic=bool(name in suites and suites[name].release.is_synthetic),
            n_runs=suites[name].n_runs if name in suites else 0,
            n_published=published.get(name, 0),
        )
        for name in {*suites, *published}
    ]
    return sorted(listed, key=lambda board: (board.name != PAPER_BOARD, board.is_synthetic, board.name))


CSV_COLUMNS = (
    "rank", "tie_group", "model", "source", "run_id", "shown_by_default", "default_run_id", "comparable",
    "not_comparable_because", "family", "parameters", "open_weight",
    "overall", "overall_ci_low", "overall_ci_high", "overall_official",
    *(f"{task}_{metric}" for task, metric, _ in METRIC_COLUMNS),
    "cost_usd", "cost_paper_usd", "prompt_tokens", "completion_tokens", "total_tokens", "on_pareto_frontier",
)  # fmt: skip


def _plain_usd(cost: Decimal | None) -> str:
    """A cost as a plain decimal without trailing zeros (``Decimal("0E-8")`` → ``0``); blank when unpriced."""
    if cost is None:
        return ""
    text = f"{cost:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def leaderboard_csv(board: Leaderboard) -> str:
    """The board as CSV text, one line per row in rank order, with ``CSV_COLUMNS`` as header.

    Every run is a line: ``shown_by_default`` marks the one run of each model and settings the page
    shows and ranks (``DEFAULT_ROWS``), ``default_run_id`` names it on each of its model's lines.

    Costs are plain decimals in USD, blank for an unpriced row (a blank cost is unknown, not free).
    A suite with a one-feature shortcut audit ends with its reference row: ``source``
    ``one_feature_audit``, the audited primary scores, and no rank, tie group or frontier.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in board.rows:
        low, high = row.overall_ci or (None, None)
        writer.writerow([
            row.rank, row.tie_group, row.model, row.source, row.run_id, row.shown_by_default, row.default_run_id,
            row.comparable,
            "; ".join(row.comparability.reasons) if row.comparability else "", row.family, row.parameters,
            row.is_open_weight, row.overall, low, high, row.overall_official,
            *(row.metrics[task][metric] for task, metric, _ in METRIC_COLUMNS),
            _plain_usd(row.cost_usd), _plain_usd(row.cost_paper_usd), row.prompt_tokens, row.completion_tokens, row.total_tokens,
            row.on_pareto_frontier,
        ])
    if board.audits:
        # A reference, not an agent: no rank, no tie group, no frontier; only the audited primary scores.
        reference = {"model": AUDIT_LABEL, "source": AUDIT_SOURCE} | {
            f"{task}_{PRIMARY_METRIC[task]}": audit.best.get("score") for task, audit in board.audits.items()
        }
        writer.writerow([reference.get(column) for column in CSV_COLUMNS])
    return buffer.getvalue()


# ── analysis ────────────────────────────────────────────────────────────────────────────────

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
    runs, per-instance scores (``services.item_score``). ``cost_performance``: priced rows with an
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
    data = _board_data(suite, details=True)
    rows = _rank(data.rows(), among_paper_rows=data.has_paper_rows)
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
    data = _board_data(suite, details=True)
    rows = data.rows()
    _show_default_rows(rows)
    rows = _rank(rows, among_paper_rows=data.has_paper_rows)
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


# ── runs, episodes, tasks and instances ─────────────────────────────────────────────────────

def run_list(*, suite: str | None = None, status: str | None = None, model: str | None = None) -> QuerySet[Run]:
    """Runs, newest first, each with its model and suite and its episode counts by status.

    Annotations: ``n_episodes``, ``n_<status>`` for every status, and ``n_process_lost``, the
    episodes ended because the process playing the run stopped (one query per page).
    """
    queryset = Run.objects.select_related("model", "suite__release").defer(*Release.unread("suite__release")).annotate(
        n_episodes=Count("episodes"),
        **{f"n_{value}": Count("episodes", filter=Q(episodes__status=value)) for value in Status.values},
        n_process_lost=Count("episodes", filter=Q(episodes__ended_by=Episode.EndedBy.PROCESS_LOST)),
    )
    if suite:
        queryset = queryset.filter(suite__name=suite)
    if status:
        queryset = queryset.filter(status=status)
    if model:
        queryset = queryset.filter(model__name=model)
    return queryset.order_by("-created_at", "-id")


@dataclass(frozen=True)
class EpisodeRow:
    """One episode of a run page: where it stands and how it scored."""

    id: int
    record_id: str
    task: str
    status: str
    ended_by: str
    attempt: int
    n_turns: int
    n_tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: Decimal | None
    wall_time_sec: float | None
    score: float | None
    epoch: int = 0

    @property
    def outcome(self) -> str:
        """How the episode ended, or where it stands while it has not."""
        return self.ended_by or self.status


def task_rows(summary: RunSummary) -> list[dict[str, Any]]:
    rows = []
    for task in TASK_IDS:
        scored = summary.tasks.get(task)
        if scored is None:
            continue
        names = (PRIMARY_METRIC[task], *SECONDARY_METRICS[task])
        rows.append({
            "task": task,
            "name": TASK_NAMES[task],
            "primary_metric": PRIMARY_METRIC[task],
            "primary_score": scored["primary_score"],
            "metrics": {name: scored["metrics"].get(name) for name in names},
            "official": scored["official"],
            "reasons": scored["reasons"],
            "completeness": scored["completeness"],
            **({"epochs": scored["epochs"]} if "epochs" in scored else {}),
        })
    return rows


def run_task_rows(run: Run) -> list[dict[str, Any]]:
    """A run's scored tasks in task order, from its up-to-date summary (two queries when fresh).

    Each row: ``task``, ``name``, ``primary_metric``, ``primary_score``, ``metrics`` (the primary
    and secondary metrics by name), ``official``, ``reasons`` (why not official) and
    ``completeness`` (``expected``, ``completed``, ``missing``, ``extra``, ``noncompleted``), and
    for a run of several epochs ``epochs`` (the summary's entry; ``primary_score`` and ``metrics``
    are then means over epochs). A task of the run with no episode finished yet is scored as all
    answers missing.
    """
    return task_rows(run_summary(run))


def run_summary(run: Run) -> RunSummary:
    """``run``'s summary as its episodes stand now (the stored one, or re-scored in memory when stale)."""
    return current_summary(run, stored=RunSummary.objects.filter(run=run).first())


@dataclass
class RunDetail:
    """A run's data: the run, its leaderboard row, its task rows (``run_task_rows``), progress, episodes."""

    run: Run
    row: LeaderboardRow
    tasks: list[dict[str, Any]]
    progress: dict[str, int]
    episodes: list[EpisodeRow]


def episode_order(*, staff: bool) -> tuple[str, ...]:
    """How a run's episodes are listed: by task, then, for staff, by the instance's position in the suite.

    Anyone else gets them by task and record id (random, of the episode's own): an order by
    position (or by episode id) would tell which instance a still-running episode plays, from its
    place beside the same task's ended episodes of another run.
    """
    return ("instance__task__code", "instance__position", "epoch", "id") if staff else ("instance__task__code", "record_id", "id")


def run_detail(*, run_id: int, staff: bool = False) -> RunDetail:
    """One run with its up-to-date summary and all its episodes, in three queries when the summary is fresh.

    Raises ``Run.DoesNotExist``.
    """
    run = (
        Run.objects.select_related("model", "suite__release", "leaderboard_summary")
        .defer(*Release.unread("suite__release"))
        .get(pk=run_id)
    )
    summary = current_summary(run, stored=_stored_summary(run))
    episodes = [
        EpisodeRow(
            id=values[0], record_id=values[1], task=values[2], status=values[3], ended_by=values[4],
            attempt=values[5], n_turns=values[6], n_tool_calls=values[7], prompt_tokens=values[8],
            completion_tokens=values[9], cost_usd=values[10], wall_time_sec=values[11],
            score=item_score(values[2], values[12] or {}), epoch=values[13],
        )
        for values in Episode.objects.filter(run=run)
        .order_by(*episode_order(staff=staff))
        .values_list(
            "id", "record_id", "instance__task__code", "status", "ended_by", "attempt", "n_turns",
            "n_tool_calls", "prompt_tokens", "completion_tokens", "cost_usd", "wall_time_sec", "scores", "epoch",
        )
    ]
    progress = dict.fromkeys(Status.values, 0)
    for episode in episodes:
        progress[episode.status] += 1
    return RunDetail(
        run=run,
        row=_run_row(run, summary, suite=run.suite),
        tasks=task_rows(summary),
        progress=progress,
        episodes=episodes,
    )


@dataclass
class EpisodeDetail:
    """An episode page: the episode (with run, model, suite and instance loaded), its steps, its score."""

    episode: Episode
    steps: list[Step]
    score: float | None


def episode_detail(*, episode_id: int) -> EpisodeDetail:
    """One episode and all its steps in order, in two queries. Raises ``Episode.DoesNotExist``."""
    episode = (
        Episode.objects.select_related("run__model", "run__suite__release", "instance__task")
        .defer(*Release.unread("run__suite__release"))
        .get(pk=episode_id)
    )
    steps = list(Step.objects.filter(episode=episode).order_by("index"))
    score = item_score(episode.instance.task.code, episode.scores or {})
    return EpisodeDetail(episode=episode, steps=steps, score=score)


def task_list() -> QuerySet[Task]:
    return Task.objects.order_by("code")


def instance_list(*, suite: str, task: str | None = None, release_order: bool = True) -> QuerySet[Instance]:
    """The instances of a suite by task, with their task loaded: in the release's order, else by record id."""
    queryset = Instance.objects.filter(suite__name=suite).select_related("task")
    if task:
        queryset = queryset.filter(task__code=task)
    return queryset.order_by("task__code", "position" if release_order else "record_id", "id")
