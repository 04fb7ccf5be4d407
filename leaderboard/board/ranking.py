"""Read and aggregation queries behind the leaderboard pages and the REST API.

A *board* is named by a suite. It shows every run on that suite that has at least one completed
episode and, on the paper's suite (``eegagentbench``), the 29 rows the paper published; a board
whose suite comes from a synthetic release (the demo) is marked synthetic. Scores come from each
run's ``RunSummary`` (the official scorer's summaries, which the runs side keeps up to date through
``summaries.scoring.episodes_ended``). Nothing here writes: a summary that is missing or out of date (an
episode ended since its last refresh, or a run stored before summaries were) is re-scored in memory
and not saved (``summaries.scoring.current_summary``), so what is shown always matches the episodes. Every
function runs the same number of queries whatever the number of runs, episodes or steps, once the
summaries are fresh.

Values are JSON-ready (floats, ints, str, None) except costs, which stay ``Decimal`` on rows.
"""
from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count

from benchmark.models import OFFICIAL_TASKS, ModelSpec, Suite
from benchmark.scoring import PRIMARY_METRIC, SECONDARY_METRICS, TASK_IDS
from benchmark.scoring.epochs import overall_over_epochs
from leaderboard.access import ENDED
from leaderboard.audit.reads import shortcut_audits
from leaderboard.board import significance
from leaderboard.board.comparability import Comparability, comparability, run_settings
from leaderboard.board.ordering import rank_rows
from leaderboard.board.published import CITATION, PAPER_BOARD
from leaderboard.models import PublishedResult, RunSummary, ShortcutAudit
from leaderboard.summaries.scoring import fresh_summaries
from runs.agents import is_baseline
from runs.cost import Pricing
from runs.models import Run

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


class UnknownBoard(LookupError):
    """No suite and no published rows go by that name."""


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
    group of its own). ``below_p`` is the Holm-adjusted p-value of the paired test of its Overall
    against the ranked row above it (both this site's runs, ``board.significance``; None when not
    tested), and ``significantly_below`` says it is below ``significance.ALPHA``. ``comparability`` says whether a run is comparable with the paper's rows
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
    below_p: float | None = None
    significantly_below: bool = False
    comparability: Comparability | None = None
    epochs: int = 1
    overall_epochs: dict[str, Any] | None = None
    epoch_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    baseline: bool = False  # a built-in baseline's run: it calls no model and costs nothing
    settings: dict[str, Any] | None = None
    shown_by_default: bool = True
    default_run_id: int | None = None
    n_other_runs: int = 0
    submitted: bool | None = None  # a run submitted from outside: verified (True) or not (False); None otherwise

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
    def n_run_rows(self) -> int:
        """How many of the rows are this site's runs (two of them may be compared)."""
        return sum(row.run_id is not None for row in self.rows)

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


def run_row(run: Run, summary: RunSummary, *, suite: Suite) -> LeaderboardRow:
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
        submitted=submission_verified(run),
    )


def submission_verified(run: Run) -> bool | None:
    """Whether a run submitted from outside passed every check (None for any other run)."""
    if run.source != Run.Source.SUBMISSION:
        return None
    submission = getattr(run, "submission", None)
    return bool(submission and submission.verified)


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


def show_default_rows(rows: list[LeaderboardRow]) -> None:
    """Mark on ``rows`` the row of each model and settings the board shows (``default_marks``)."""
    marks = default_marks(rows)
    for row in rows:
        mark = marks[row.key]
        row.shown_by_default, row.default_run_id, row.n_other_runs = (
            mark.shown_by_default, mark.default_run_id, mark.n_other_runs
        )


@dataclass
class BoardData:
    """What a board is built from: its suite (None for a published-only board), runs and published rows."""

    name: str
    suite: Suite | None
    runs: list[tuple[Run, RunSummary]]
    published: list[PublishedResult]

    @property
    def is_synthetic(self) -> bool:
        return bool(self.suite and self.suite.release.is_synthetic)

    def rows(self) -> list[LeaderboardRow]:
        runs = [run_row(run, summary, suite=self.suite) for run, summary in self.runs]
        return runs + [_published_row(p) for p in self.published]

    @property
    def has_paper_rows(self) -> bool:
        return bool(self.published)


def board_data(name: str, *, details: bool) -> BoardData:
    """Everything a board shows, in four queries; ``details`` adds the per-instance rows and tool use.

    The board of a held-out suite shows runs that have ended only (``leaderboard.access``).
    """
    suite = Suite.objects.select_related("release").filter(name=name).first()
    published = list(PublishedResult.objects.filter(board=name).select_related("model").order_by("position"))
    if suite is None and not published:
        raise UnknownBoard(f"no suite and no published results are named {name!r}")
    runs: list[tuple[Run, RunSummary]] = []
    if suite is not None:
        queryset = Run.objects.filter(suite=suite).select_related("model", "leaderboard_summary", "submission").order_by("id")
        if suite.is_held_out:
            queryset = queryset.filter(status__in=ENDED)
        if not details:
            queryset = queryset.defer("leaderboard_summary__items", "leaderboard_summary__tool_use")
        listed = list(queryset)
        summaries = fresh_summaries(listed, answered_only=True)
        runs = [(run, summaries[run.pk]) for run in listed if run.pk in summaries]
    return BoardData(name=name, suite=suite, runs=runs, published=published)


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
    data = board_data(suite, details=False)
    rows = data.rows()
    show_default_rows(rows)
    families = sorted({row.family for row in rows if row.family}, key=str.casefold)
    if source is not None:
        rows = [row for row in rows if row.source == source]
    if family:
        rows = [row for row in rows if row.family.casefold() == family.casefold()]
    if weights is not None:
        rows = [row for row in rows if row.is_open_weight is (weights == "open")]
    rows = rank_rows(rows, among_paper_rows=data.has_paper_rows)
    significance.mark_rows(rows, {run.pk: summary for run, summary in data.runs})
    return Leaderboard(
        suite=suite,
        suite_obj=data.suite,
        is_synthetic=data.is_synthetic,
        rows=rows,
        families=families,
        filters={"source": source, "family": family, "weights": weights},
        citation=CITATION if data.published else "",
        among_paper_rows=data.has_paper_rows,
    )


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


TASK_NAMES = {spec["code"]: spec["name"] for spec in OFFICIAL_TASKS}
