"""The analysis page (a board's distributions, cost, scale, tool use, tokens, rank stability and failure modes)
and the task pages."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from benchmark.models import Task
from benchmark.scoring import PRIMARY_METRIC
from leaderboard.access import (
    HELD_OUT_NOTE,
    shows_items,
    shows_references,
)
from leaderboard.analysis import charts, failure_charts, failure_modes, task_charts
from leaderboard.analysis import selectors as analysis_reads
from leaderboard.audit import reads as audit_reads
from leaderboard.board import ordering, ranking
from leaderboard.board.charts import chart_points, labels_for, row_point
from leaderboard.formats import metric_name


def _wanted_board(request: HttpRequest) -> tuple[str | None, list]:
    """The board ``?suite=`` names (None when it names none) and all boards; a 404 for a name no board has."""
    listed = ranking.boards()
    wanted = request.GET.get("suite")
    if wanted and wanted not in {board.name for board in listed}:
        raise Http404(f"No board is named {wanted!r}.")
    return wanted or None, listed


def _chosen_board(request: HttpRequest) -> tuple[str | None, list]:
    """The board a task page shows, and all boards.

    ``?suite=``, else the first listed board that has runs (the paper's when it has), else the first
    listed: a board without runs has none of the per-run analyses (tool use, SNR, confusion matrices).
    """
    wanted, listed = _wanted_board(request)
    if wanted:
        return wanted, listed
    return next((board.name for board in listed if board.n_runs), listed[0].name if listed else None), listed


def _confusion_figures(confusion: list[dict], labels: dict[str, str]) -> list[dict]:
    return [
        task_charts.confusion_figure(entry["matrix"], classes=entry["classes"], columns=entry["columns"],
                                title=labels[entry["key"]])
        for entry in confusion
    ]


def _task_figures(
    analysis: analysis_reads.TaskAnalysis, labels: dict[str, str], *, audit_score: float | None = None, items: bool = True
) -> dict:
    """The figures of a task page; those that do not apply to the task are absent.

    ``audit_score``: the one-feature shortcut audit's score, a reference line on the scores chart.
    Without ``items`` (a held-out suite, for anyone but staff) the breakdowns by reference class,
    SNR and recording length are absent: they restate the answer key in aggregate.
    """
    primary = PRIMARY_METRIC[analysis.task]
    shown = [{**row, "score": row["metrics"][primary]} for row in analysis.rows if row["shown_by_default"]]
    figures = {"scores": task_charts.task_scores_figure(
        chart_points(shown, labels, score="score"),
        metric=metric_name(primary),
        audit_score=audit_score,
    )}
    if analysis.miss_over_alarm is not None:
        figures["miss_over_alarm"] = task_charts.miss_over_alarm_figure(
            chart_points(analysis.miss_over_alarm, labels, miss_rate="miss_rate", over_alarm_rate="over_alarm_rate")
        )
    if not items:
        return figures
    if analysis.confusion:
        figures["confusion"] = _confusion_figures(analysis.confusion, labels)
    if analysis.snr is not None:
        figures["snr"] = task_charts.snr_figure(analysis.snr, labels=labels)
    if analysis.duration_bins is not None:
        figures["duration_bins"] = task_charts.duration_bins_figure(analysis.duration_bins, labels=labels)
    return figures


def _by_task_score(analysis: analysis_reads.TaskAnalysis) -> list[dict]:
    """A task's rows best first by the task's primary metric, numbered by the board's rule (``ordering.is_ranked``)."""
    primary = PRIMARY_METRIC[analysis.task]
    rows = sorted(analysis.rows, key=lambda row: ordering.best_first(row["metrics"][primary]))
    ranked, position = [], 0
    for row in rows:
        counted = ordering.is_ranked(row["metrics"][primary], shown_by_default=row["shown_by_default"],
                                    comparable=row["comparable"], among_paper_rows=analysis.among_paper_rows)
        position += counted
        ranked.append({**row, "task_rank": position if counted else None})
    return ranked


@require_safe
def task(request: HttpRequest, code: str) -> HttpResponse:
    """A task's leaderboard with all its metrics, the spread across models and the paper's analyses of it."""
    task = get_object_or_404(Task, code=code)
    suite, listed = _chosen_board(request)
    data = analysis_reads.task_analysis(suite=suite, task=code) if suite else None
    labels = labels_for(data.rows) if data else {}
    audit = audit_reads.shortcut_audits(suite=suite).get(code) if suite else None
    items = shows_items(request, next((board.suite for board in listed if board.name == suite), None))
    return render(request, "leaderboard/analysis/task.html", {
        "nav": code,
        "task": task,
        "metrics": [task.primary_metric, *task.secondary_metrics],
        "analysis": data,
        "rows": _by_task_score(data) if data else [],
        "n_other_runs": sum(not row["shown_by_default"] for row in data.rows) if data else 0,
        "labels": labels,
        "figures": _task_figures(data, labels, audit_score=audit.best.get("score") if audit else None,
                                 items=items) if data else {},
        "items_shown": items,
        "held_out_note": HELD_OUT_NOTE,
        "audit": audit,
        "audit_label": task_charts.AUDIT_LINE_LABEL,
        "boards": listed,
        "suite": suite,
    })


def _analysis_figures(data: analysis_reads.Analysis, labels: dict[str, str]) -> dict:
    """The analysis page's figures of a board, each an empty one (its sentence alone) when it has nothing to draw."""
    tool_use = data.tool_use
    unpriced = [{**row_point(row), "overall": row.overall}
                for row in data.rows if row.overall is not None and row.cost_paper_usd is None]
    return {
        "distributions": charts.box_plot_figure(
            {task: [{"label": labels[model["key"]], "score": model["score"]} for model in entry["models"]]
             for task, entry in data.distributions.items()},
            baselines={task: entry["random_baseline"] for task, entry in data.distributions.items()},
            metric_names={task: metric_name(entry["metric"]) for task, entry in data.distributions.items()},
        ),
        "cost": charts.cost_figure(
            chart_points(data.cost_performance, labels, cost="cost_usd", overall="overall",
                          frontier="on_pareto_frontier")
            + chart_points(unpriced, labels, overall="overall")
        ),
        "scale": charts.parameters_figure(chart_points(
            data.scale, labels, parameters_b="parameters_b", overall="overall"
        )),
        "tool_use": charts.tool_use_figure(tool_use["mean_rate_by_category"], categories=tool_use["categories"]),
        "median_calls": charts.grouped_bars_figure(
            {
                f"Top-{len(tool_use['top'])}": {t: v["top"] for t, v in tool_use["median_calls"].items()},
                f"Bottom-{len(tool_use['bottom'])}": {t: v["bottom"] for t, v in tool_use["median_calls"].items()},
            },
            y_title="Median tool calls per trajectory",
            empty="No run on this board has completed a trajectory yet.",
        ),
        "tokens": charts.tokens_figure(chart_points(
            data.tokens, labels, prompt_tokens="prompt_tokens", completion_tokens="completion_tokens"
        )),
        "rank_stability": charts.rank_stability_figure(
            [labels[key] for key in data.rank_stability["keys"]], data.rank_stability["above"]
        ),
    }


def _failure_figures(rows: list[ranking.LeaderboardRow], labels: dict[str, str], *, references: bool) -> dict:
    """The failure-mode heatmap and the coverage scatters of T5 and T6 of the board's runs shown by default.

    Without ``references`` the modes that tell an episode's reference are left out.
    """
    marks = ranking.default_marks(rows)
    runs = [row for row in rows if row.run_id is not None and marks[row.key].shown_by_default]
    run_ids = [row.run_id for row in runs]
    shares = failure_modes.mode_shares(run_ids, references=references)
    figures = {"failure_modes": failure_charts.failure_modes_figure(
        [{"label": labels[row.key], "shares": shares[row.run_id]} for row in runs if row.run_id in shares],
        codes=list(failure_modes.shown_codes(references=references)),
    )}
    for task in failure_modes.COVERAGE_TASKS:
        scores = failure_modes.coverage_scores(run_ids, task=task)
        figures[f"coverage_{task}"] = failure_charts.coverage_figure(
            chart_points([{**row_point(row), **scores[row.run_id]} for row in runs if row.run_id in scores],
                         labels, coverage="coverage", score="score"),
            task=task, metric=metric_name(PRIMARY_METRIC[task]),
        )
    return figures


def _board_analysis(board: ranking.Board, *, references: bool) -> dict:
    """A board's analysis (``data``), chart labels and figures, and how many of the paper's figures draw something.

    The failure-mode figures (``_failure_figures``) are not counted: the board a page opens on is
    the one that draws most of the paper's analyses.
    """
    data = analysis_reads.analysis(suite=board.name)
    labels = labels_for([row_point(row) for row in data.rows])
    figures = _analysis_figures(data, labels)
    drawn = sum(not figure.get("empty") for figure in figures.values())
    figures |= _failure_figures(data.rows, labels, references=references)
    return {"data": data, "labels": labels, "figures": figures, "drawn": drawn}


@require_safe
def analysis(request: HttpRequest) -> HttpResponse:
    """Distributions, cost and scale against Overall, tool use and tokens of a board (paper Figs. 1, 4-6, Table 5),
    and how its runs fail: failure modes per model, evidence coverage against score on T5 and T6.

    ``?suite=``, else the board whose page draws the most of the paper's figures, then the one with the most rows,
    then the first listed (the paper's first, synthetic ones last): after ``manage.py demo`` that is
    the paper's board, whose published rows fill the cost, size and token charts that the demo's
    two baselines (free, of no size, spending no tokens) leave empty. An empty figure is its
    sentence alone, with links to the boards where it is drawn.
    """
    wanted, listed = _wanted_board(request)
    if not listed:
        return render(request, "leaderboard/analysis/analysis.html", {"nav": "analysis", "analysis": None, "boards": listed})
    references = {board.name: shows_references(request, board.suite) for board in listed}
    boards = {board.name: _board_analysis(board, references=references[board.name]) for board in listed}
    suite = wanted or max(boards, key=lambda name: (boards[name]["drawn"], len(boards[name]["data"].rows)))
    shown = boards[suite]
    drawn_elsewhere = {
        key: [name for name, board in boards.items() if name != suite and not board["figures"][key].get("empty")]
        for key, figure in shown["figures"].items() if figure.get("empty")
    }
    tool_use = shown["data"].tool_use
    return render(request, "leaderboard/analysis/analysis.html", {
        "nav": "analysis",
        "analysis": shown["data"],
        "figures": shown["figures"],
        "drawn_elsewhere": drawn_elsewhere,
        "labels": shown["labels"],
        "top": [shown["labels"][key] for key in tool_use["top"]],
        "bottom": [shown["labels"][key] for key in tool_use["bottom"]],
        "failure_codes": failure_modes.shown_codes(references=references[suite]),
        "failure_references": references[suite],
        "boards": listed,
        "suite": suite,
    })
