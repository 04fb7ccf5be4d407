"""The site's pages: leaderboard, tasks, analysis, runs, the trajectory explorer, and staff run management.

Views are thin: they read what the selectors aggregate (``leaderboard.selectors``), build plotly
figure dicts with ``leaderboard.charts`` and render a template. Writes go through the services
(``runs.services``, ``runs.execution``). Anonymous visitors may read every public page; the run
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
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from benchmark.models import Release, Task
from benchmark.scoring import PRIMARY_METRIC
from benchmark.scoring.hypnogram import align, expand_rle
from benchmark.scoring.seizure import parse_raw_events
from leaderboard import charts, selectors
from leaderboard.access import has_ended, is_staff, visible_episode, visible_episodes
from leaderboard.api.serializers import LeaderboardSerializer
from leaderboard.comparability import comparability, how_called
from leaderboard.forms import EpisodeFilterForm, NewRunForm
from leaderboard.published import PAPER_BOARD
from leaderboard.services import item_score
from leaderboard.signal import MAX_POINTS, SIGNAL_TOOLS, read_signal, signal_window, visitor_points
from leaderboard.templatetags.leaderboard import metric_name
from runs import execution
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step
from runs.redaction import public_error
from runs.services import create_run
from tools_app.recording import RecordingError, open_recording

STEPS_PER_PAGE = 50
EPISODES_PER_PAGE = 100
INLINE_TEXT_CHARS = 4000
TABLE_ROWS_SHOWN = 2000
EPISODE_RELATED = ("run__model", "run__suite__release", "instance__task", "instance__suite__release")

Kind = Step.Kind


def references_visible(request: HttpRequest) -> bool:
    """Whether this visitor may see reference answers: always staff, others per EEGAB_PUBLIC_REFERENCES."""
    return bool(settings.EEGAB_PUBLIC_REFERENCES or request.user.is_staff)


# ── episode outcomes ─────────────────────────────────────────────────────────────────────────

_ANSWERED = Q(status=Status.COMPLETED, final_answer__isnull=False)
# What counts as a correct answer, per task: the right label (T1-T4); every seizure found with no
# false alarm, which on a seizure-free record means staying silent (T5); a night staged with a
# macro-F1 of at least 0.5 (T6, which has no single right answer).
_CORRECT = (
    Q(instance__task__code__in=["T1", "T2", "T3", "T4"], scores__correct=True)
    | Q(instance__task__code="T5", scores__fn=0, scores__fp=0)
    | Q(instance__task__code="T6", scores__macro_f1__gte=0.5)
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
    """Selector points as chart input: ``label``, ``published`` and the ``fields`` renamed (chart name → key)."""
    return [
        {"label": labels[point["key"]], "published": point["source"] == "published",
         **{name: point.get(key) for name, key in fields.items()}}
        for point in points
    ]


def _board_section(board: selectors.Leaderboard) -> dict:
    labels = _labels_for([_row_point(row) for row in board.rows])
    chart_rows = [
        {"label": labels[row.key], "overall": row.overall, "published": row.is_published,
         "ci_low": row.overall_ci[0] if row.overall_ci else None,
         "ci_high": row.overall_ci[1] if row.overall_ci else None}
        for row in board.rows
    ]
    return {"board": board, "figure": charts.overall_figure(chart_rows)}


def _metric_columns() -> list[dict]:
    """The leaderboard's task columns: per task its code, name and metrics (primary first)."""
    columns = []
    for task in Task.objects.order_by("code"):
        metrics = [task.primary_metric, *task.secondary_metrics]
        columns.append({"code": task.code, "name": task.name, "metrics": metrics, "primary": task.primary_metric})
    return columns


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard: one table per board (suite), runs and published rows side by side, synthetic boards last."""
    filters = _board_filters(request)
    sections = []
    for listed in selectors.boards():
        sections.append(_board_section(selectors.leaderboard(suite=listed.name, **filters)))
    families = sorted({family for section in sections for family in section["board"].families}, key=str.casefold)
    return render(request, "leaderboard/index.html", {
        "nav": "leaderboard",
        "sections": sections,
        "columns": _metric_columns(),
        "filters": filters,
        "families": families,
        "query": request.GET.urlencode(),
    })


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
    response["Content-Disposition"] = f'attachment; filename="eegagentbench-{board.suite}.{fmt}"'
    return response


def _chosen_board(request: HttpRequest) -> tuple[str | None, list]:
    """The board a task or analysis page shows (``?suite=``, else the first listed) and all boards."""
    listed = selectors.boards()
    names = [board.name for board in listed]
    wanted = request.GET.get("suite")
    if wanted and wanted not in names:
        raise Http404(f"No board is named {wanted!r}.")
    return (wanted or (names[0] if names else None)), listed


def _confusion_figures(confusion: list[dict], labels: dict[str, str]) -> list[dict]:
    return [
        charts.confusion_figure(entry["matrix"], classes=entry["classes"], columns=entry["columns"],
                                title=labels[entry["key"]])
        for entry in confusion
    ]


def _task_figures(analysis: selectors.TaskAnalysis, labels: dict[str, str]) -> dict:
    """The figures of a task page; those that do not apply to the task are absent."""
    metric = metric_name(PRIMARY_METRIC[analysis.task])
    figures = {"scores": charts.task_scores_figure(
        [{"label": labels[row["key"]], "score": row["metrics"][PRIMARY_METRIC[analysis.task]],
          "published": row["source"] == "published"} for row in analysis.rows],
        metric=metric,
    )}
    if analysis.confusion:
        figures["confusion"] = _confusion_figures(analysis.confusion, labels)
    if analysis.snr is not None:
        figures["snr"] = charts.snr_figure(analysis.snr, labels=labels)
    if analysis.miss_over_alarm is not None:
        figures["miss_over_alarm"] = charts.miss_over_alarm_figure(
            _chart_points(analysis.miss_over_alarm, labels, miss_rate="miss_rate", over_alarm_rate="over_alarm_rate")
        )
    if analysis.duration_bins is not None:
        figures["duration_bins"] = charts.duration_bins_figure(analysis.duration_bins, labels=labels)
    return figures


def _by_task_score(analysis: selectors.TaskAnalysis) -> list[dict]:
    """A task's rows best first by the task's primary metric, each with its ``task_rank``.

    Beside the paper's rows only they and the comparable runs are ranked; the others keep their place.
    """
    primary = PRIMARY_METRIC[analysis.task]
    rows = sorted(analysis.rows, key=lambda row: (row["metrics"][primary] is None, -(row["metrics"][primary] or 0)))
    ranked, position = [], 0
    for row in rows:
        counted = row["comparable"] or not analysis.among_paper_rows
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
    return render(request, "leaderboard/task.html", {
        "nav": code,
        "task": task,
        "metrics": [task.primary_metric, *task.secondary_metrics],
        "analysis": data,
        "rows": _by_task_score(data) if data else [],
        "labels": labels,
        "figures": _task_figures(data, labels) if data else {},
        "boards": listed,
        "suite": suite,
    })


@require_safe
def analysis(request: HttpRequest) -> HttpResponse:
    """Distributions, cost and scale against Overall, tool use and tokens of a board (paper Figs. 1, 4-6, Table 5)."""
    suite, listed = _chosen_board(request)
    if suite is None:
        return render(request, "leaderboard/analysis.html", {"nav": "analysis", "analysis": None, "boards": listed})
    data = selectors.analysis(suite=suite)
    labels = _labels_for([_row_point(row) for row in data.rows])
    tool_use = data.tool_use
    figures = {
        "distributions": charts.box_plot_figure(
            {task: [{"label": labels[model["key"]], "score": model["score"]} for model in entry["models"]]
             for task, entry in data.distributions.items()},
            baselines={task: entry["random_baseline"] for task, entry in data.distributions.items()},
            metric_names={task: metric_name(entry["metric"]) for task, entry in data.distributions.items()},
        ),
        "cost": charts.cost_figure(_chart_points(
            data.cost_performance, labels, cost="cost_usd", overall="overall", frontier="on_pareto_frontier"
        )),
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
        ),
        "tokens": charts.tokens_figure(_chart_points(
            data.tokens, labels, prompt_tokens="prompt_tokens", completion_tokens="completion_tokens"
        )),
    }
    return render(request, "leaderboard/analysis.html", {
        "nav": "analysis",
        "analysis": data,
        "figures": figures,
        "labels": labels,
        "top": [labels[key] for key in tool_use["top"]],
        "bottom": [labels[key] for key in tool_use["bottom"]],
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


def _tool_error(step: Step) -> str:
    """The error a tool call returned or met: the platform's error text, else the tool's error object."""
    if step.error:
        return step.error
    content = (step.result or {}).get("content")
    if isinstance(content, dict) and content.get("error"):
        return str(content["error"])
    return ""


def is_signal_step(step: Step) -> bool:
    """A tool call that was executed and read samples of the recording."""
    return step.kind == Kind.TOOL_CALL and step.tool_name in SIGNAL_TOOLS and _tool_status(step) == "ok"


def _step_view(step: Step, episode_pk: int, *, staff: bool) -> dict:
    """What the step list shows of a step without loading its details (a traceback for staff only)."""
    text = step.text if step.kind != Kind.TOOL_CALL else ""
    error = _tool_error(step) if step.kind == Kind.TOOL_CALL else step.error
    error = error if staff else public_error(error)
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
    task, instance = episode.instance.task.code, episode.instance
    if episode.status != Status.COMPLETED:
        return None
    prediction = episode.prediction if isinstance(episode.prediction, dict) else {}
    if task == "T5":
        duration = instance.duration_sec or (instance.metadata or {}).get("duration_sec") or 0.0
        predicted = parse_raw_events(prediction.get("seizure_events"))
        reference = parse_raw_events(instance.reference.get("seizure_events")) if references else None
        return charts.seizure_intervals_figure(predicted, duration_sec=float(duration), reference=reference)
    if task == "T6":
        reference = list(instance.reference.get("epoch_labels_aasm") or [])
        n_epochs = instance.n_epochs or (instance.metadata or {}).get("n_epochs_total") or len(reference)
        predicted = expand_rle(prediction.get("hypnogram_rle", []), int(n_epochs)).labels
        if reference:
            predicted = align(predicted, len(reference))
        return charts.hypnogram_figure(predicted, reference=reference if references else None)
    return None


def _episode_summary(episode: Episode, *, references: bool) -> dict:
    """The header, labels and outcome figure of an episode, as the page and the compare view show them."""
    task = episode.instance.task
    return {
        "episode": episode,
        "task": task,
        "outcome": shown_outcome(episode.outcome, references=references),
        "score": item_score(task.code, episode.scores) if references and episode.scores else None,
        "primary_metric": task.primary_metric,
        "labels": _labels(episode, references=references),
        "figure": outcome_figure(episode, references=references),
        "total_tokens": episode.prompt_tokens + episode.completion_tokens,
    }


def _steps_page(episode: Episode, page_number, *, staff: bool) -> tuple:
    steps = episode.steps.exclude(kind=Kind.PROMPT).order_by("index")
    page = Paginator(steps, STEPS_PER_PAGE).get_page(page_number)
    return page, [_step_view(step, episode.pk, staff=staff) for step in page.object_list]


@require_safe
def episode(request: HttpRequest, pk: int) -> HttpResponse:
    """One trajectory: header, prompt, every turn (50 per page, details on demand) and the outcome."""
    episode = visible_episode(request, _episode(pk))
    references = references_visible(request)
    page, steps = _steps_page(episode, request.GET.get("page"), staff=is_staff(request))
    same_instance = Episode.objects.filter(instance_id=episode.instance_id).exclude(pk=episode.pk)
    others = (
        with_outcome(visible_episodes(request, same_instance))
        .select_related("run__model")
        .order_by("run__model__name", "-id")[:50]
    )
    return render(request, "leaderboard/episode.html", {
        "summary": _episode_summary(episode, references=references),
        "prompt": _prompt(episode) if page.number == 1 else None,
        "page": page,
        "steps": steps,
        "others": others,
        "references": references,
    })


@require_safe
def episode_step(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One step's details, loaded when it is expanded: full text, reasoning, result and signal plot."""
    step = get_object_or_404(Step.objects.select_related("episode"), episode_id=pk, index=index)
    visible_episode(request, step.episode)
    content = (step.result or {}).get("content") if step.kind == Kind.TOOL_CALL else None
    return render(request, "leaderboard/_step_details.html", {
        "step": step,
        "full_text": step.kind != Kind.TOOL_CALL and len(step.text) > INLINE_TEXT_CHARS,
        "content": content,
        "tables": result_tables(content) if isinstance(content, dict) else [],
        "signal_url": reverse("leaderboard:episode_signal", args=[pk, index]) if is_signal_step(step) else "",
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
    step = get_object_or_404(
        Step.objects.select_related("episode__instance__suite__release").defer(
            *Release.unread("episode__instance__suite__release")
        ),
        episode_id=pk,
        index=index,
    )
    visible_episode(request, step.episode)
    if not is_signal_step(step):
        raise Http404("This step is not a tool call that read the signal.")
    content = (step.result or {}).get("content")
    features = (
        charts.windowed_features_figure(content)
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
        "figure": charts.signal_figure(traces, title=title),
        "features_figure": features,
        "channels": list(window.channels),
        "time_range": [start_sec, stop_sec],
        "notes": notes,
    })
    response["Cache-Control"] = "public, max-age=3600"
    return response


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    """Two episodes of the same instance (two models) side by side."""
    try:
        first_pk = int(request.GET.get("a", ""))
    except ValueError:
        return HttpResponseBadRequest("Give the episodes to compare as ?a=<id>&b=<id>.")
    first = visible_episode(request, _episode(first_pk))
    references = references_visible(request)
    same_instance = Episode.objects.filter(instance_id=first.instance_id).exclude(pk=first.pk)
    candidates = (
        with_outcome(visible_episodes(request, same_instance))
        .select_related("run__model")
        .order_by("run__model__name", "-id")[:100]
    )
    second = None
    if request.GET.get("b"):
        try:
            second = visible_episode(request, _episode(int(request.GET["b"])))
        except ValueError:
            raise Http404("No such episode.") from None
        if second.instance_id != first.instance_id:
            return HttpResponseBadRequest("These episodes are of different instances; compare two runs of one instance.")
    sides = []
    for chosen in (first, second):
        if chosen is None:
            continue
        page, steps = _steps_page(chosen, 1, staff=is_staff(request))
        sides.append({"summary": _episode_summary(chosen, references=references), "page": page, "steps": steps})
    return render(request, "leaderboard/compare.html", {
        "first": first,
        "sides": sides,
        "candidates": candidates,
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
        .order_by("instance__task__code", "instance__position", "id")
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
        # A search looks only into episodes this visitor may see: never into one that has not ended.
        text = data["q"]
        matching_steps = Step.objects.filter(episode=OuterRef("pk")).filter(
            Q(text__icontains=text) | Q(reasoning__icontains=text) | Q(error__icontains=text)
        )
        episodes = visible_episodes(request, episodes).filter(Q(Exists(matching_steps)) | Q(record_id__icontains=text))
    return episodes


@require_safe
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A run: live progress, per-task metrics, and its episodes, filterable and searchable."""
    runs = Run.objects.select_related("model", "suite__release", "created_by").defer(*Release.unread("suite__release"))
    run = get_object_or_404(runs, pk=pk)
    references = references_visible(request)
    form = EpisodeFilterForm(request.GET or None, ended_by_choices=Episode.EndedBy.choices)
    if not references:
        form.fields["outcome"].choices = [
            choice for choice in form.fields["outcome"].choices if choice[0] not in ("correct", "wrong")
        ]
    page = Paginator(_filtered_episodes(request, run, form), EPISODES_PER_PAGE).get_page(request.GET.get("page"))
    staff = is_staff(request)
    rows = [
        {
            "episode": episode,
            "outcome": shown_outcome(episode.outcome, references=references),
            "score": item_score(episode.instance.task.code, episode.scores) if references and episode.scores else None,
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
        "tasks": selectors.run_task_rows(run),
        "form": form,
        "page": page,
        "rows": rows,
        "query": query.urlencode(),
        "references": references,
        "can_cancel": run.status in (Status.PENDING, Status.RUNNING),
        "can_resume": run.source == Run.Source.RUN and run.status in (Status.FAILED, Status.CANCELLED, Status.RUNNING),
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
                model = data["model"] or execution.model_spec_for(data["provider_model"].strip())
                run = create_run(
                    suite=data["suite"],
                    model=model,
                    tasks=data["tasks"],
                    name=data["name"],
                    limit=data["limit"],
                    api_base=data["api_base"],
                    api_key_env=data["api_key_env"],
                    settings=form.decoding_settings(),
                    prompt_set=data["prompt_set"],
                    limits=form.limits(),
                    created_by=request.user,
                )
                execution.queue_run(run_id=run.pk)
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
        execution.cancel_run(run_id=run.pk)
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
            resumed = execution.resume_run(run_id=run.pk)
            execution.queue_run(run_id=run.pk)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} resumed: {resumed.reset} episodes reset, {resumed.pending} pending.")
    return redirect("leaderboard:run", pk=run.pk)
