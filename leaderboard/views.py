"""The site's pages: leaderboard, tasks, analysis, runs, the trajectory explorer, and staff run management.

Views are thin: they read what the selectors aggregate (``leaderboard.selectors``), build plotly
figure dicts with ``leaderboard.charts`` and render a template. Writes go through the services
(``runs.services``, ``runs.queue``). Anonymous visitors may read every public page; the run
form and the cancel and resume buttons are for staff, and every form carries a CSRF token.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Case, CharField, Count, Exists, F, OuterRef, Q, Sum, Value, When
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from benchmark.models import Release, Task
from benchmark.scoring import PRIMARY_METRIC, TASK_IDS
from benchmark.scoring.epochs import T6_CORRECT_MACRO_F1, overall_over_epochs
from leaderboard import charts, episode_charts, selectors
from leaderboard.access import (
    HELD_OUT_NOTE,
    has_ended,
    is_staff,
    shows_items,
    shows_references,
    shows_run_scores,
    visible_episode,
    visible_episodes,
)
from leaderboard.api.serializers import LeaderboardSerializer
from leaderboard.comparability import comparability, how_called
from leaderboard.forms import EpisodeFilterForm, NewRunForm, RunFilterForm
from leaderboard.published import PAPER_BOARD
from leaderboard.models import RunSummary
from leaderboard.services import current_summary, item_score, task_signatures
from leaderboard.signal import MAX_POINTS, SIGNAL_TOOLS, read_signal, signal_window, visitor_points
from leaderboard.templatetags.leaderboard import metric_name, score as score_text
from runs import specs
from runs.agents import free_of_charge
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step
from runs.queue import dispatch, lifecycle
from runs.queue.dispatch import workers_alive
from runs.queue.workers import WORKER_COMMAND
from runs.redaction import public_error
from runs.services import create_run
from tools_app.budget import with_true_lengths
from tools_app.recording import RecordingError, open_recording

STEPS_PER_PAGE = 50
EPISODES_PER_PAGE = 100
RUNS_PER_PAGE = 50
INLINE_TEXT_CHARS = 4000
TABLE_ROWS_SHOWN = 2000
EPISODE_RELATED = ("run__model", "run__suite__release", "instance__task", "instance__suite__release")

Kind = Step.Kind


# ── episode outcomes ─────────────────────────────────────────────────────────────────────────

_ANSWERED = Q(status=Status.COMPLETED, final_answer__isnull=False)
# What counts as a correct answer, per task: the right label (T1-T4); every seizure found with no
# false alarm, which on a seizure-free record means staying silent (T5); a night staged with a
# macro-F1 of at least T6_CORRECT_MACRO_F1 (T6, which has no single right answer). The run page
# writes this rule beside its outcome column; benchmark.scoring.epochs.is_correct is the same rule.
_CORRECT = (
    Q(instance__task__code__in=["T1", "T2", "T3", "T4"], scores__correct=True)
    | Q(instance__task__code="T5", scores__fn=0, scores__fp=0)
    | Q(instance__task__code="T6", scores__macro_f1__gte=T6_CORRECT_MACRO_F1)
)
OUTCOME = Case(
    When(status=Status.FAILED, then=Value("error")),
    When(status=Status.COMPLETED, final_answer__isnull=True, then=Value("missing")),
    When(_ANSWERED & _CORRECT, then=Value("correct")),
    When(_ANSWERED, then=Value("wrong")),
    default=F("status"),
    output_field=CharField(),
)


def with_outcome(episodes):
    """Episodes annotated with ``outcome``: correct, wrong, missing, error, or their status while unfinished."""
    return episodes.annotate(outcome=OUTCOME)


def shown_outcome(outcome: str, *, references: bool) -> str:
    """The outcome a visitor may see: without references, correct and wrong are both just answered."""
    if not references and outcome in ("correct", "wrong"):
        return "answered"
    return outcome


# ── leaderboard, tasks, analysis ─────────────────────────────────────────────────────────────

def _board_filters(request: HttpRequest) -> dict:
    """The leaderboard filters of the query string, unknown values dropped."""
    source = request.GET.get("source") or None
    weights = request.GET.get("weights") or None
    return {
        "source": source if source in selectors.SOURCES else None,
        "family": (request.GET.get("family") or "").strip() or None,
        "weights": weights if weights in selectors.WEIGHTS else None,
    }


def _row_point(row: selectors.LeaderboardRow) -> dict:
    return {"key": row.key, "model": row.model, "source": row.source, "run_id": row.run_id}


def _labels_for(points: list[dict]) -> dict[str, str]:
    """Chart labels of a board's points (``key``, ``model``, ``run_id``): the model, with the run when it repeats."""
    names = [point["model"] for point in points]
    return {
        point["key"]: f"{point['model']} · run {point['run_id']}"
        if names.count(point["model"]) > 1 and point["run_id"] else point["model"]
        for point in points
    }


def _chart_points(points, labels: dict[str, str], **fields) -> list[dict]:
    """Selector points as chart input: ``label``, ``key`` (the model's colour), ``published`` and the
    ``fields`` renamed (chart name → key)."""
    return [
        {"label": labels[point["key"]], "key": point["key"], "published": point["source"] == "published",
         **{name: point.get(key) for name, key in fields.items()}}
        for point in points
    ]


def _board_section(board: selectors.Leaderboard) -> dict:
    """A board's section of the leaderboard page; its chart shows the rows the table shows by default."""
    shown = [row for row in board.rows if row.shown_by_default]
    labels = _labels_for([_row_point(row) for row in shown])
    chart_rows = [
        {"label": labels[row.key], "overall": row.overall, "published": row.is_published,
         "ci_low": row.overall_ci[0] if row.overall_ci else None,
         "ci_high": row.overall_ci[1] if row.overall_ci else None}
        for row in shown
    ]
    figure = charts.overall_figure(chart_rows)
    return {
        "board": board,
        "figure": figure,
        "markers": _chart_markers(figure),
        "has_runs": any(not row.is_published for row in board.rows),
    }


# The glyph that stands for a plotly marker symbol in the legend written under a chart.
MARKER_GLYPHS = {"circle": "●", "diamond": "◆", "square": "■", "triangle-up": "▲", "cross": "✚", "x": "✖"}


def _chart_markers(figure: dict) -> list[dict]:
    """The legend of a figure's marker traces, read from the figure so it always matches what is drawn.

    Each legend trace's ``name``, ``glyph`` (its marker symbol as a character) and ``color`` (blank
    when its markers have one colour per point).
    """
    markers = []
    for trace in figure["data"]:
        marker = trace.get("marker")
        if not marker or not trace.get("name") or trace.get("showlegend") is False:
            continue
        color = marker.get("color")
        markers.append({"name": trace["name"], "glyph": MARKER_GLYPHS.get(marker.get("symbol", "circle"), "●"),
                        "color": color if isinstance(color, str) else ""})
    return markers


# Table headers short enough for nineteen columns to fit, with the full names the tooltips and
# the legend give: the task code stands above each header.
METRIC_HEADERS = {
    "accuracy": ("Acc", "accuracy"),
    "macro_f1": ("F1", "macro-F1"),
    "event_f1": ("Ev-F1", "event-F1"),
    "dice_s": ("Dice", "Dice@seizure"),
    "cohen_kappa": ("κ", "Cohen's κ"),
}


def _metric_columns() -> list[dict]:
    """The leaderboard's task columns: per task its code, name and metrics, primary first.

    Each metric is ``{"key", "label", "name", "title", "primary"}``: its key in the row's metrics,
    its short header, its full name, and the header's tooltip.
    """
    columns = []
    for task in Task.objects.order_by("code"):
        metrics = []
        for metric in [task.primary_metric, *task.secondary_metrics]:
            primary = metric == task.primary_metric
            label, name = METRIC_HEADERS.get(metric, (metric_name(metric), metric_name(metric)))
            metrics.append({
                "key": metric,
                "label": label,
                "name": name,
                "title": f"{task.code} {name} ({'primary' if primary else 'secondary'} metric)",
                "primary": primary,
            })
        columns.append({"code": task.code, "name": task.name, "metrics": metrics})
    return columns


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard: one table per board (suite), the paper's rows on its suite's board, synthetic boards last.

    ``run_boards`` names the boards that show runs, so that a board without any can point to them.
    """
    filters = _board_filters(request)
    sections = []
    for listed in selectors.boards():
        sections.append(_board_section(selectors.leaderboard(suite=listed.name, **filters)))
    families = sorted({family for section in sections for family in section["board"].families}, key=str.casefold)
    columns = _metric_columns()
    return render(request, "leaderboard/index.html", {
        "nav": "leaderboard",
        "sections": sections,
        "run_boards": [section["board"].suite for section in sections if section["has_runs"]],
        "paper_board": PAPER_BOARD,
        "columns": columns,
        "abbreviations": {metric["label"]: metric["name"] for column in columns for metric in column["metrics"]},
        "filters": filters,
        "families": families,
        "query": request.GET.urlencode(),
    })


def _download_name(suite: str, fmt: str) -> str:
    """The file name of a board's download: the site, what it is, the board (``eegagentbench-leaderboard-demo.csv``)."""
    return f"eegagentbench-leaderboard-{suite}.{fmt}"


@require_safe
def download(request: HttpRequest, fmt: str) -> HttpResponse:
    """One board as CSV or JSON (``?suite=`` and the page's filters), for download."""
    try:
        board = selectors.leaderboard(suite=request.GET.get("suite") or PAPER_BOARD, **_board_filters(request))
    except selectors.UnknownBoard as exc:
        raise Http404(str(exc)) from None
    if fmt == "csv":
        response = HttpResponse(selectors.leaderboard_csv(board), content_type="text/csv; charset=utf-8")
    else:
        data = LeaderboardSerializer(board).data
        response = HttpResponse(json.dumps(data, indent=2, ensure_ascii=False, default=str),
                                content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_download_name(board.suite, fmt)}"'
    return response


def _wanted_board(request: HttpRequest) -> tuple[str | None, list]:
    """The board ``?suite=`` names (None when it names none) and all boards; a 404 for a name no board has."""
    listed = selectors.boards()
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
        charts.confusion_figure(entry["matrix"], classes=entry["classes"], columns=entry["columns"],
                                title=labels[entry["key"]])
        for entry in confusion
    ]


def _task_figures(
    analysis: selectors.TaskAnalysis, labels: dict[str, str], *, audit_score: float | None = None, items: bool = True
) -> dict:
    """The figures of a task page; those that do not apply to the task are absent.

    ``audit_score``: the one-feature shortcut audit's score, a reference line on the scores chart.
    Without ``items`` (a held-out suite, for anyone but staff) the breakdowns by reference class,
    SNR and recording length are absent: they restate the answer key in aggregate.
    """
    primary = PRIMARY_METRIC[analysis.task]
    shown = [{**row, "score": row["metrics"][primary]} for row in analysis.rows if row["shown_by_default"]]
    figures = {"scores": charts.task_scores_figure(
        _chart_points(shown, labels, score="score"),
        metric=metric_name(primary),
        audit_score=audit_score,
    )}
    if analysis.miss_over_alarm is not None:
        figures["miss_over_alarm"] = charts.miss_over_alarm_figure(
            _chart_points(analysis.miss_over_alarm, labels, miss_rate="miss_rate", over_alarm_rate="over_alarm_rate")
        )
    if not items:
        return figures
    if analysis.confusion:
        figures["confusion"] = _confusion_figures(analysis.confusion, labels)
    if analysis.snr is not None:
        figures["snr"] = charts.snr_figure(analysis.snr, labels=labels)
    if analysis.duration_bins is not None:
        figures["duration_bins"] = charts.duration_bins_figure(analysis.duration_bins, labels=labels)
    return figures


def _by_task_score(analysis: selectors.TaskAnalysis) -> list[dict]:
    """A task's rows best first by the task's primary metric, each with its ``task_rank``.

    Only the rows shown by default are ranked (one per model and settings), and beside the paper's
    rows only they and the comparable runs; the others keep their place.
    """
    primary = PRIMARY_METRIC[analysis.task]
    rows = sorted(analysis.rows, key=lambda row: (row["metrics"][primary] is None, -(row["metrics"][primary] or 0)))
    ranked, position = [], 0
    for row in rows:
        counted = row["shown_by_default"] and (row["comparable"] or not analysis.among_paper_rows)
        position += counted
        ranked.append({**row, "task_rank": position if counted else None})
    return ranked


@require_safe
def task(request: HttpRequest, code: str) -> HttpResponse:
    """A task's leaderboard with all its metrics, the spread across models and the paper's analyses of it."""
    task = get_object_or_404(Task, code=code)
    suite, listed = _chosen_board(request)
    data = selectors.task_analysis(suite=suite, task=code) if suite else None
    labels = _labels_for(data.rows) if data else {}
    audit = selectors.shortcut_audits(suite=suite).get(code) if suite else None
    items = shows_items(request, next((board.suite for board in listed if board.name == suite), None))
    return render(request, "leaderboard/task.html", {
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
        "audit_label": charts.AUDIT_LINE_LABEL,
        "boards": listed,
        "suite": suite,
    })


def _analysis_figures(data: selectors.Analysis, labels: dict[str, str]) -> dict:
    """The analysis page's figures of a board, each an empty one (its sentence alone) when it has nothing to draw."""
    tool_use = data.tool_use
    unpriced = [{**_row_point(row), "overall": row.overall}
                for row in data.rows if row.overall is not None and row.cost_paper_usd is None]
    return {
        "distributions": charts.box_plot_figure(
            {task: [{"label": labels[model["key"]], "score": model["score"]} for model in entry["models"]]
             for task, entry in data.distributions.items()},
            baselines={task: entry["random_baseline"] for task, entry in data.distributions.items()},
            metric_names={task: metric_name(entry["metric"]) for task, entry in data.distributions.items()},
        ),
        "cost": charts.cost_figure(
            _chart_points(data.cost_performance, labels, cost="cost_usd", overall="overall",
                          frontier="on_pareto_frontier")
            + _chart_points(unpriced, labels, overall="overall")
        ),
        "scale": charts.parameters_figure(_chart_points(
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
        "tokens": charts.tokens_figure(_chart_points(
            data.tokens, labels, prompt_tokens="prompt_tokens", completion_tokens="completion_tokens"
        )),
        "rank_stability": charts.rank_stability_figure(
            [labels[key] for key in data.rank_stability["keys"]], data.rank_stability["above"]
        ),
    }


def _board_analysis(suite: str) -> dict:
    """A board's analysis (``data``), chart labels and figures, and how many of its figures draw something."""
    data = selectors.analysis(suite=suite)
    labels = _labels_for([_row_point(row) for row in data.rows])
    figures = _analysis_figures(data, labels)
    return {"data": data, "labels": labels, "figures": figures,
            "drawn": sum(not figure.get("empty") for figure in figures.values())}


@require_safe
def analysis(request: HttpRequest) -> HttpResponse:
    """Distributions, cost and scale against Overall, tool use and tokens of a board (paper Figs. 1, 4-6, Table 5).

    ``?suite=``, else the board whose page draws the most figures, then the one with the most rows,
    then the first listed (the paper's first, synthetic ones last): after ``manage.py demo`` that is
    the paper's board, whose published rows fill the cost, size and token charts that the demo's
    two baselines (free, of no size, spending no tokens) leave empty. An empty figure is its
    sentence alone, with links to the boards where it is drawn.
    """
    wanted, listed = _wanted_board(request)
    if not listed:
        return render(request, "leaderboard/analysis.html", {"nav": "analysis", "analysis": None, "boards": listed})
    boards = {board.name: _board_analysis(board.name) for board in listed}
    suite = wanted or max(boards, key=lambda name: (boards[name]["drawn"], len(boards[name]["data"].rows)))
    shown = boards[suite]
    drawn_elsewhere = {
        key: [name for name, board in boards.items() if name != suite and not board["figures"][key].get("empty")]
        for key, figure in shown["figures"].items() if figure.get("empty")
    }
    tool_use = shown["data"].tool_use
    return render(request, "leaderboard/analysis.html", {
        "nav": "analysis",
        "analysis": shown["data"],
        "figures": shown["figures"],
        "drawn_elsewhere": drawn_elsewhere,
        "labels": shown["labels"],
        "top": [shown["labels"][key] for key in tool_use["top"]],
        "bottom": [shown["labels"][key] for key in tool_use["bottom"]],
        "boards": listed,
        "suite": suite,
    })


# ── the trajectory explorer ──────────────────────────────────────────────────────────────────


def _episode(pk: int) -> Episode:
    episodes = Episode.objects.select_related(*EPISODE_RELATED).defer(
        *Release.unread("run__suite__release"), *Release.unread("instance__suite__release")
    )
    return get_object_or_404(with_outcome(episodes), pk=pk)


def _tool_status(step: Step) -> str:
    return (step.result or {}).get("status", "") if step.kind == Kind.TOOL_CALL else ""


def _tool_message(step: Step) -> str:
    """The error message a tool call's result holds ("" for none).

    A windowed refusal's gives the record's true length beside the requested range's, which the
    official text, and so what a model read under the official prompt set, calls the record's.
    """
    content = with_true_lengths((step.result or {}).get("content")) if step.kind == Kind.TOOL_CALL else None
    return str(content["error"]) if isinstance(content, dict) and content.get("error") else ""


def is_signal_step(step: Step) -> bool:
    """A tool call that was executed and read samples of the recording."""
    return step.kind == Kind.TOOL_CALL and step.tool_name in SIGNAL_TOOLS and _tool_status(step) == "ok"


def step_view(step: Step, episode_pk: int, *, staff: bool) -> dict:
    """What the step list shows of a step without loading its details (a traceback for staff only).

    Its error is the platform's (``public_error`` of it for anyone but staff), else a tool's own message,
    whole, as the step's details show its result to anyone who may see the step.
    """
    text = step.text if step.kind != Kind.TOOL_CALL else ""
    error = (step.error if staff else public_error(step.error)) or _tool_message(step)
    result = step.result or {}
    has_details = bool(
        step.reasoning
        or len(text) > INLINE_TEXT_CHARS
        or step.kind == Kind.TOOL_CALL
        or (step.kind == Kind.AGENT_MESSAGE and result)
    )
    return {
        "step": step,
        "text": text[:INLINE_TEXT_CHARS],
        "truncated": len(text) > INLINE_TEXT_CHARS,
        "error": error[:INLINE_TEXT_CHARS],
        "status": _tool_status(step),
        "tool_calls": (result.get("tool_calls") or []) if step.kind == Kind.AGENT_MESSAGE else [],
        "action": result.get("action", "") if step.kind == Kind.AGENT_MESSAGE else "",
        "reason": result.get("reason", "") if step.kind in (Kind.NUDGE, Kind.ERROR) else "",
        "tokens": sum(getattr(step, name) or 0 for name in ("prompt_tokens", "completion_tokens")),
        "details_url": reverse("leaderboard:episode_step", args=[episode_pk, step.index]) if has_details else "",
        "signal": is_signal_step(step),
    }


def _prompt(episode: Episode) -> dict:
    """The opening messages the model got, with the prompt set and protocol they were sent in."""
    step = episode.steps.filter(kind=Kind.PROMPT).order_by("index").only("result").first()
    result = (step.result or {}) if step is not None else {}
    return {
        "messages": list(result.get("messages") or []),
        # Prompt steps recorded before prompt sets existed were the platform's wording.
        "prompt_set": result.get("prompt_set") or episode.run.prompt_set,
        "protocol": result.get("protocol") or "",
    }


def _labels(episode: Episode, *, references: bool) -> dict | None:
    """Predicted and reference labels of a classification episode (T1-T4)."""
    task = episode.instance.task.code
    if task not in ("T1", "T2", "T3", "T4") or episode.status != Status.COMPLETED:
        return None
    reference = episode.scores.get("gold") or episode.instance.reference.get("answer" if task == "T1" else "label")
    return {
        "predicted": episode.scores.get("predicted") or "no valid answer",
        "reference": reference if references else None,
    }


def outcome_figure(episode: Episode, *, references: bool) -> dict | None:
    """T5 reference against predicted intervals, T6 reference against predicted hypnogram; else None."""
    if episode.status != Status.COMPLETED:
        return None
    return episode_charts.prediction_figure(episode.instance, episode.prediction, references=references)


def seizure_counts_text(scores: dict) -> str:
    """A T5 record's per-item result in words: the seizures found and the false alarms.

    It is what the scorer gives for a seizure-free record answered with silence, whose Event-F1
    is undefined: "no events, no false alarms".
    """
    tp, fp, fn = (int(scores.get(key) or 0) for key in ("tp", "fp", "fn"))
    alarms = f"{fp} false alarm{'s' if fp != 1 else ''}"
    if tp + fn == 0:
        return "no events, no false alarms" if fp == 0 else f"no seizure, {alarms}"
    return f"{tp} of {tp + fn} seizure{'s' if tp + fn != 1 else ''} found, {alarms}"


def _episode_summary(episode: Episode, *, references: bool) -> dict:
    """The header, labels and outcome figure of an episode, as the page and the compare view show them.

    ``score`` is the item's score (None when undefined or not shown), ``score_note`` the T5 event
    counts beside it, and ``score_hidden`` whether a score exists that this visitor may not see.
    """
    task = episode.instance.task
    scored = bool(episode.scores)
    return {
        "episode": episode,
        "task": task,
        "outcome": shown_outcome(episode.outcome, references=references),
        "score": item_score(task.code, episode.scores) if references and scored else None,
        "score_note": seizure_counts_text(episode.scores) if references and scored and task.code == "T5" else "",
        "score_hidden": scored and not references,
        "primary_metric": task.primary_metric,
        "labels": _labels(episode, references=references),
        "figure": outcome_figure(episode, references=references),
        "total_tokens": episode.prompt_tokens + episode.completion_tokens,
        "free": free_of_charge(episode.run.model.provider_model),
    }


def _steps_page(episode: Episode, page_number, *, staff: bool) -> tuple:
    steps = episode.steps.exclude(kind=Kind.PROMPT).order_by("index")
    page = Paginator(steps, STEPS_PER_PAGE).get_page(page_number)
    return page, [step_view(step, episode.pk, staff=staff) for step in page.object_list]


def _other_episodes(request: HttpRequest, episode: Episode, *, limit: int) -> list[Episode]:
    """The other episodes of ``episode``'s instance this visitor may see, the closest comparison first.

    Another model's episodes come first, then another run's of the same model, then the same
    run's other epochs; within each, completed before failed or cancelled, then by model, newest
    run first, by epoch. The first is the one a comparison opens with.
    """
    same_instance = Episode.objects.filter(instance_id=episode.instance_id).exclude(pk=episode.pk)
    closeness = Case(
        When(run_id=episode.run_id, then=Value(2)),
        When(run__model_id=episode.run.model_id, then=Value(1)),
        default=Value(0),
    )
    unanswered = Case(When(status=Status.COMPLETED, then=Value(0)), default=Value(1))
    return list(
        with_outcome(visible_episodes(request, same_instance))
        .select_related("run__model", "instance__task")
        .annotate(closeness=closeness, unanswered=unanswered)
        .order_by("closeness", "unanswered", "run__model__name", "-run_id", "epoch")[:limit]
    )


def _episode_choices(episodes: list[Episode], *, references: bool) -> list[dict]:
    """``{"episode", "label"}`` for each of ``episodes`` (of one instance), labelled so that no two read alike.

    A label names the model and run, the run's settings where the runs differ in them, the epoch
    of a run of several, the outcome and, where this visitor may see it, the score:
    "Alpha-1 · run 3 · temperature 0.7 · epoch 2 of 3 · correct · score 1.000 · episode 12".
    """
    settings = {episode.run_id: how_called(episode.run) for episode in episodes}
    differing = [name for name in next(iter(settings.values()), {})
                 if len({shown[name] for shown in settings.values()}) > 1]
    choices = []
    for episode in episodes:
        parts = [episode.run.model.name, f"run {episode.run_id}"]
        parts += [f"{name.replace('_', ' ')} {settings[episode.run_id][name]}" for name in differing]
        if episode.run.epochs > 1:
            parts.append(f"epoch {episode.epoch + 1} of {episode.run.epochs}")
        parts.append(shown_outcome(episode.outcome, references=references))
        task = episode.instance.task.code
        score = item_score(task, episode.scores) if references and episode.scores else None
        if score is not None:
            parts.append(f"score {score_text(score)}")
        elif references and episode.scores and task == "T5":
            parts.append(seizure_counts_text(episode.scores))
        parts.append(f"episode {episode.pk}")
        choices.append({"episode": episode, "label": " · ".join(parts)})
    return choices


@require_safe
def episode(request: HttpRequest, pk: int) -> HttpResponse:
    """One trajectory: header, prompt, every turn (50 per page, details on demand) and the outcome."""
    episode = visible_episode(request, _episode(pk))
    references = shows_references(request, episode.run.suite)
    page, steps = _steps_page(episode, request.GET.get("page"), staff=is_staff(request))
    return render(request, "leaderboard/episode.html", {
        "summary": _episode_summary(episode, references=references),
        "prompt": _prompt(episode) if page.number == 1 else None,
        "page": page,
        "steps": steps,
        "others": _episode_choices(_other_episodes(request, episode, limit=50), references=references),
        "references": references,
    })


@require_safe
def episode_step(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One step's details, loaded when it is expanded: full text, reasoning, result and signal plot."""
    step = get_object_or_404(Step.objects.select_related("episode"), episode_id=pk, index=index)
    visible_episode(request, step.episode)
    return step_details(request, step, signal_url=reverse("leaderboard:episode_signal", args=[pk, index]))


def step_details(request: HttpRequest, step: Step, *, signal_url: str) -> HttpResponse:
    """A step's details, for a visitor the caller has let see it (the explorer, or a player's own episode).

    ``signal_url``: where its signal plot is fetched, used when the step read the signal.
    """
    content = (step.result or {}).get("content") if step.kind == Kind.TOOL_CALL else None
    return render(request, "leaderboard/_step_details.html", {
        "step": step,
        "full_text": step.kind != Kind.TOOL_CALL and len(step.text) > INLINE_TEXT_CHARS,
        "content": content,
        "tables": result_tables(content) if isinstance(content, dict) else [],
        "signal_url": signal_url if is_signal_step(step) else "",
    })


def _flat_row(row: dict) -> dict:
    """A result row with one level of nested objects spread into ``parent.key`` columns."""
    flat = {}
    for key, value in row.items():
        if isinstance(value, dict) and all(not isinstance(item, dict | list) for item in value.values()):
            flat.update({f"{key}.{inner}": item for inner, item in value.items()})
        elif not isinstance(value, dict | list):
            flat[key] = value
    return flat


def _table(title: str, rows: list) -> dict:
    flat = [_flat_row(row) for row in rows[:TABLE_ROWS_SHOWN] if isinstance(row, dict)]
    columns = list(dict.fromkeys(key for row in flat for key in row))
    return {
        "title": title,
        "columns": columns,
        "rows": [[row.get(column) for column in columns] for row in flat],
        "n_rows": len(rows),
        "cut": len(rows) > TABLE_ROWS_SHOWN,
    }


def result_tables(content: dict) -> list[dict]:
    """The row lists of a tool result as tables: windowed features one table per channel, others per key."""
    tables = []
    for key, value in content.items():
        if key == "_meta" or not isinstance(value, list) or not value or not isinstance(value[0], dict):
            continue
        if key == "channels" and "windows" in value[0]:
            tables.extend(_table(f"{channel.get('channel')}: windows", channel.get("windows") or [])
                          for channel in value)
        else:
            tables.append(_table(key, value))
    return [table for table in tables if table["columns"]]


@require_safe
def episode_signal(request: HttpRequest, pk: int, index: int) -> JsonResponse:
    """The signal one tool call covered, decimated, as plotly figures (and windowed features over time)."""
    step = signal_step(pk, index)
    visible_episode(request, step.episode)
    return step_signal(request, step)


def signal_step(pk: int, index: int) -> Step:
    """Step ``index`` of episode ``pk``, with the release its recording is read from; a 404 when there is none."""
    return get_object_or_404(
        Step.objects.select_related("episode__instance__suite__release").defer(
            *Release.unread("episode__instance__suite__release")
        ),
        episode_id=pk,
        index=index,
    )


def step_signal(request: HttpRequest, step: Step) -> JsonResponse:
    """A step's signal window as ``episode_signal`` gives it, for a visitor the caller has let see the step."""
    if not is_signal_step(step):
        raise Http404("This step is not a tool call that read the signal.")
    content = (step.result or {}).get("content")
    features = (
        episode_charts.windowed_features_figure(content)
        if step.tool_name == "compute_windowed_features" and isinstance(content, dict)
        else None
    )
    instance = step.episode.instance
    try:
        recording = open_recording(
            Path(instance.suite.release.source) / instance.recording_path, metadata=instance.metadata
        )
    except RecordingError as exc:
        return JsonResponse({"figure": None, "features_figure": features, "notes": [f"{exc} The signal cannot be shown."]})
    eeg = [recording.ch_names[pick] for pick in recording.eeg_picks]
    window = signal_window(
        step.tool_name, step.arguments, ch_names=recording.ch_names, eeg_channels=eeg,
        sfreq=recording.sfreq, n_times=recording.n_times,
    )
    # Staff see up to MAX_POINTS points; anyone else never the samples themselves, only a min/max
    # decimation (half the samples or fewer), whatever the window.
    n_samples = window.stop - window.start
    traces = read_signal(recording, window, max_points=MAX_POINTS if is_staff(request) else visitor_points(n_samples))
    start_sec, stop_sec = window.start / recording.sfreq, window.stop / recording.sfreq
    notes = []
    if window.n_requested > len(window.channels):
        notes.append(f"Showing the first {len(window.channels)} of the {window.n_requested} channels the call covered.")
    if window.missing:
        notes.append(f"Not in the recording: {', '.join(window.missing)}.")
    title = f"{step.tool_name} · {start_sec:.1f}–{stop_sec:.1f} s"
    response = JsonResponse({
        "figure": episode_charts.signal_figure(traces, title=title),
        "features_figure": features,
        "channels": list(window.channels),
        "time_range": [start_sec, stop_sec],
        "notes": notes,
    })
    # A shared cache may keep a visitor's window (decimated, of an ended episode), never staff's.
    response["Cache-Control"] = "private, max-age=3600" if is_staff(request) else "public, max-age=3600"
    return response


COMPARE_HINT = "Give two episode ids, the numbers in the episodes' addresses (/episodes/<id>/), as ?a=12&b=15."


def _episode_id(value: str) -> int | None:
    """An episode id from the query string; None when ``value`` is not a positive whole number."""
    return int(value) if value.isascii() and value.isdigit() and int(value) > 0 else None


def _compare_error(given: dict[str, str], ids: dict[str, int | None]) -> str:
    """What is wrong with the ids given to the compare view; empty when they can be looked up."""
    for key in ("a", "b"):
        if given[key] and ids[key] is None:
            return f"“{given[key]}” is not an episode id. {COMPARE_HINT}"
    if given["b"] and not given["a"]:
        return f"Give the first episode too. {COMPARE_HINT}"
    return ""


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    """Two episodes of the same instance (two models) side by side; without them, a form to choose them.

    No ids: the form. Only the first: a redirect to it beside the closest other episode of its
    instance (``_other_episodes``), when there is one. An id that is not a number, a second
    episode without a first, or episodes of two instances: the form again saying what is wrong
    (400). An episode that does not exist, or that a visitor may not see yet, is a 404 like any other.
    """
    given = {key: request.GET.get(key, "").strip() for key in ("a", "b")}
    ids = {key: _episode_id(value) for key, value in given.items()}
    error = _compare_error(given, ids)
    if error or not given["a"]:
        status = 400 if error else 200
        return render(request, "leaderboard/compare.html", {"given": given, "error": error}, status=status)
    first = visible_episode(request, _episode(ids["a"]))
    candidates = _other_episodes(request, first, limit=100)
    if not ids["b"] and candidates:
        return redirect(f"{reverse('leaderboard:compare')}?a={first.pk}&b={candidates[0].pk}")
    second = visible_episode(request, _episode(ids["b"])) if ids["b"] else None
    if second is not None and second.instance_id != first.instance_id:
        error = (f"Episodes {first.pk} ({first.record_id}) and {second.pk} ({second.record_id}) are of different "
                 "instances: compare two episodes of one instance, e.g. two models on the same record.")
        return render(request, "leaderboard/compare.html", {"given": given, "error": error}, status=400)
    if second is not None and second.pk != first.pk and second not in candidates:
        candidates.append(second)  # beyond the chooser's limit: listed all the same, as the one shown
    references = shows_references(request, first.run.suite)
    sides = []
    for chosen in (first, second):
        if chosen is None:
            continue
        page, steps = _steps_page(chosen, 1, staff=is_staff(request))
        sides.append({"summary": _episode_summary(chosen, references=references), "page": page, "steps": steps})
    first_choice, *choices = _episode_choices([first, *candidates], references=references)
    return render(request, "leaderboard/compare.html", {
        "given": given,
        "first": first,
        "first_label": first_choice["label"],
        "sides": sides,
        "candidates": choices,
        "references": references,
    })


# ── runs ─────────────────────────────────────────────────────────────────────────────────────


def staff_required(view):
    """Staff only: anonymous visitors are sent to the login page, signed-in non-staff get 403."""

    def wrapped(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Only staff can manage runs.")
        return view(request, *args, **kwargs)

    wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
    return wrapped


def run_progress_data(run: Run) -> dict:
    """Episodes by status, tokens and cost of a run, summed over its episodes as they stand (one query)."""
    sums = run.episodes.aggregate(
        **{f"n_{status}": Count("id", filter=Q(status=status)) for status in Status.values},
        **{f"total_{name}": Sum(name) for name in TOKEN_FIELDS},
        total_cost=Sum("cost_usd"),
        n_unpriced=Count("id", filter=Q(cost_usd__isnull=True, prompt_tokens__gt=0)),
    )
    counts = {status: sums[f"n_{status}"] for status in Status.values}
    usage = {name: sums[f"total_{name}"] or 0 for name in TOKEN_FIELDS}
    cost = None if sums["n_unpriced"] else float(sums["total_cost"] or 0)
    paper_cost = selectors.paper_cost(run.model, usage["prompt_tokens"], usage["completion_tokens"])
    total = sum(counts.values())
    return {
        "id": run.pk,
        "status": run.status,
        "finished": run.status in (Status.COMPLETED, Status.FAILED, Status.CANCELLED),
        "episodes": counts,
        "total": total,
        "done": counts[Status.COMPLETED],
        "failed": counts[Status.FAILED],
        "tokens": {**usage, "total": usage["prompt_tokens"] + usage["completion_tokens"]},
        "cost_usd": cost,
        "paper_cost_usd": None if paper_cost is None else float(paper_cost),
    }


def _filtered_episodes(request: HttpRequest, run: Run, form: EpisodeFilterForm):
    episodes = (
        with_outcome(run.episodes.select_related("instance__task"))
        .defer("final_answer", "prediction", "error_message")
        .order_by(*selectors.episode_order(staff=is_staff(request)))
    )
    if not form.is_valid():
        return episodes
    data = form.cleaned_data
    if data["task"]:
        episodes = episodes.filter(instance__task__code=data["task"])
    if data["outcome"]:
        episodes = episodes.filter(outcome=data["outcome"])
    if data["ended_by"]:
        episodes = episodes.filter(ended_by=data["ended_by"])
    if data["q"]:
        # A search looks only into episodes this visitor may see: never into one that has not ended. Errors
        # hold what only staff read (tracebacks, a model provider's words): nobody else searches them.
        text = data["q"]
        searched = Q(text__icontains=text) | Q(reasoning__icontains=text)
        if is_staff(request):
            searched |= Q(error__icontains=text)
        matching_steps = Step.objects.filter(episode=OuterRef("pk")).filter(searched)
        episodes = visible_episodes(request, episodes).filter(Q(Exists(matching_steps)) | Q(record_id__icontains=text))
    return episodes


def has_scores(completeness: dict) -> bool:
    """Whether a task summary scores anything yet: an episode of the task has ended (answered or failed)."""
    return completeness["completed"] + completeness["noncompleted"] > 0


def can_cancel(run: Run) -> bool:
    """Whether staff may cancel the run (``run_cancel``): it has not ended."""
    return run.status in (Status.PENDING, Status.RUNNING)


def can_resume(run: Run) -> bool:
    """Whether staff may resume the run (``run_resume``): one played here that failed, was cancelled or is stuck."""
    return run.source == Run.Source.RUN and run.status in (Status.FAILED, Status.CANCELLED, Status.RUNNING)


def run_scores(summary: RunSummary) -> dict:
    """A run page's scores: its task rows and its Overall, neither shown as scored before anything has ended.

    Returns ``tasks`` (``selectors.run_task_rows`` with ``scored``: an episode of the task has
    ended), ``unscored`` (the codes of the others) and ``overall``: None, or its ``score``, 95%
    ``ci`` (None without one), ``official`` and ``so_far`` (episodes still to end), given only
    once every one of the six tasks has an ended episode.
    """
    tasks = [{**row, "scored": has_scores(row["completeness"])} for row in selectors.task_rows(summary)]
    unscored = [row["task"] for row in tasks if not row["scored"]]
    overall = None
    if summary.overall is not None and not unscored:
        overall = {
            "score": summary.overall,
            "ci": summary.overall_ci,
            "official": summary.overall_official,
            "so_far": any(row["completeness"]["missing"] for row in tasks),
        }
    return {"tasks": tasks, "unscored": unscored, "overall": overall}


def waiting_for_a_worker(run: Run) -> bool:
    """Episodes of the run are queued (not played by a ``--sync`` command) and no queue worker is up."""
    queued = run.episodes.filter(status=Status.PENDING, queued_at__isnull=False)
    return run.source == Run.Source.RUN and queued.exists() and not workers_alive()


def run_epochs(run: Run, summary: RunSummary) -> dict | None:
    """A run page's repeated-run figures: None for a run of one epoch.

    Otherwise ``k``, ``overall`` (``overall_over_epochs``: per-epoch Overall and its sd, None
    without all six tasks) and ``tasks``: per scored task, its summary's ``epochs``
    entry (per-epoch scores, sd, flip rate, and pass^k and pass@k for T1-T4) with its code,
    name and primary metric.
    """
    if run.epochs == 1:
        return None
    tasks = [
        {**row["epochs"], "task": row["task"], "name": row["name"], "primary_metric": row["primary_metric"],
         "mean": row["primary_score"]}
        for row in selectors.task_rows(summary) if "epochs" in row
    ]  # fmt: skip
    return {"k": run.epochs, "overall": overall_over_epochs(summary.tasks), "tasks": tasks}


@require_safe
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A run: live progress, its Overall, per-task metrics, and its episodes, filterable and searchable."""
    runs = Run.objects.select_related("model", "suite__release", "created_by").defer(*Release.unread("suite__release"))
    run = get_object_or_404(runs, pk=pk)
    references = shows_references(request, run.suite)
    form = EpisodeFilterForm(request.GET or None, ended_by_choices=Episode.EndedBy.choices)
    if not references:
        form.fields["outcome"].choices = [
            choice for choice in form.fields["outcome"].choices if choice[0] not in ("correct", "wrong")
        ]
    episodes = _filtered_episodes(request, run, form) if shows_items(request, run.suite) else Episode.objects.none()
    page = Paginator(episodes, EPISODES_PER_PAGE).get_page(request.GET.get("page"))
    scores_shown = shows_run_scores(request, run)
    summary = selectors.run_summary(run) if scores_shown else None
    staff = is_staff(request)
    rows = [
        {
            "episode": episode,
            "outcome": shown_outcome(episode.outcome, references=references),
            "score": item_score(episode.instance.task.code, episode.scores) if references and episode.scores else None,
            "score_note": (
                seizure_counts_text(episode.scores)
                if references and episode.scores and episode.instance.task.code == "T5" else ""
            ),  # fmt: skip
            "visible": staff or has_ended(episode),  # a visitor follows no link into a running episode
        }
        for episode in page.object_list
    ]
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "leaderboard/run.html", {
        "run": run,
        "comparability": comparability(run),
        "called": how_called(run),
        "progress": run_progress_data(run),
        "free": free_of_charge(run.model.provider_model),
        **(run_scores(summary) if scores_shown else {"tasks": [], "unscored": [], "overall": None}),
        "scores_shown": scores_shown,
        "items_shown": shows_items(request, run.suite),
        "held_out_note": HELD_OUT_NOTE,
        "no_worker": waiting_for_a_worker(run),
        "worker_command": WORKER_COMMAND,
        "t6_cut_off": T6_CORRECT_MACRO_F1,
        "epochs": run_epochs(run, summary) if scores_shown else None,
        "form": form,
        "page": page,
        "rows": rows,
        "query": query.urlencode(),
        "references": references,
        "can_cancel": can_cancel(run),
        "can_resume": can_resume(run),
    })


def listed_score(summary: RunSummary | None) -> dict:
    """A run's score in the runs list, from its summary.

    ``overall`` and its ``ci`` once all six tasks score something (else None); otherwise ``tasks``,
    the primary metric of each task that does, as (code, metric, score); empty when none does.
    """
    tasks = summary.tasks if summary is not None else {}
    scored = [code for code in TASK_IDS if code in tasks and has_scores(tasks[code]["completeness"])]
    if summary is not None and summary.overall is not None and len(scored) == len(TASK_IDS):
        return {"overall": summary.overall, "ci": summary.overall_ci, "tasks": []}
    return {"overall": None, "ci": None,
            "tasks": [(code, tasks[code]["primary_metric"], tasks[code]["primary_score"]) for code in scored]}


@require_safe
def runs_list(request: HttpRequest) -> HttpResponse:
    """Every run, newest first, filterable by status, model and suite; staff also see its cancel and resume buttons.

    Anyone may read it: a run's counts and scores are on its page too; nothing of an episode is shown.
    """
    form = RunFilterForm(request.GET or None)
    runs = (
        selectors.run_list(**form.selection())
        .select_related("created_by", "leaderboard_summary")
        .defer("leaderboard_summary__items", "leaderboard_summary__tool_use")
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    # Scores as they stand, as on the leaderboard: a stored summary when it is up to date (the
    # runs side keeps it so), else re-scored in memory; none for a run with no ended episode.
    scored = [run for run in page.object_list if run.n_completed + run.n_failed and shows_run_scores(request, run)]
    signatures = task_signatures(run_ids=[run.pk for run in scored])
    summaries = {
        run.pk: current_summary(run, stored=getattr(run, "leaderboard_summary", None), signatures=signatures[run.pk])
        for run in scored
    }
    rows = [
        {
            "run": run,
            "score": listed_score(summaries.get(run.pk)),
            "scores_held_back": not shows_run_scores(request, run),
            "ended": run.n_completed + run.n_failed + run.n_cancelled,
            "can_cancel": can_cancel(run),
            "can_resume": can_resume(run),
        }
        for run in page.object_list
    ]
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "leaderboard/runs.html", {
        "nav": "runs",
        "form": form,
        "page": page,
        "rows": rows,
        "query": query.urlencode(),
    })


@require_safe
def run_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """The run's progress as JSON, polled by its page while it runs."""
    run = get_object_or_404(Run.objects.select_related("model"), pk=pk)
    response = JsonResponse(run_progress_data(run))
    response["Cache-Control"] = "no-store"
    return response


@staff_required
def new_run(request: HttpRequest) -> HttpResponse:
    """The staff form that creates a run and queues its episodes."""
    form = NewRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                model = specs.spec_to_run(data["model"], data["provider_model"])
                run = create_run(
                    suite=data["suite"],
                    model=model,
                    tasks=data["tasks"],
                    name=data["name"],
                    limit=data["limit"],
                    epochs=data["epochs"],
                    api_base=data["api_base"],
                    api_key_env=data["api_key_env"],
                    settings=form.decoding_settings(),
                    prompt_set=data["prompt_set"],
                    limits=form.limits(),
                    created_by=request.user,
                )
                dispatch.queue_run(run_id=run.pk)
        except (ValueError, ValidationError) as exc:
            form.add_error(None, exc.messages if isinstance(exc, ValidationError) else str(exc))
        else:
            messages.success(request, f"Run {run.pk} is queued: {run.episodes.count()} episodes.")
            return redirect("leaderboard:run", pk=run.pk)
    return render(request, "leaderboard/new_run.html", {"form": form, "nav": "new_run"})


@require_POST
@staff_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a run: pending episodes at once, running ones at their next turn."""
    run = get_object_or_404(Run, pk=pk)
    try:
        lifecycle.cancel_run(run_id=run.pk)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} is cancelled.")
    return redirect("leaderboard:run", pk=run.pk)


@require_POST
@staff_required
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """Resume a run: failed, cancelled and stale episodes become pending again and are queued."""
    run = get_object_or_404(Run, pk=pk)
    try:
        with transaction.atomic():
            resumed = lifecycle.resume_run(run_id=run.pk)
            dispatch.queue_run(run_id=run.pk)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} resumed: {resumed.reset} episodes reset, {resumed.pending} pending.")
    return redirect("leaderboard:run", pk=run.pk)
