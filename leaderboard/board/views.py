"""The leaderboard page (one table and chart per board) and a board's CSV and JSON downloads."""
from __future__ import annotations

import json

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from benchmark.models import Task
from leaderboard.board import downloads, ranking
from leaderboard.board.charts import board_section
from leaderboard.board.published import PAPER_BOARD
from leaderboard.board.serializers import LeaderboardSerializer
from leaderboard.formats import metric_name


def _board_filters(request: HttpRequest) -> dict:
    """The leaderboard filters of the query string, unknown values dropped."""
    source = request.GET.get("source") or None
    weights = request.GET.get("weights") or None
    return {
        "source": source if source in ranking.SOURCES else None,
        "family": (request.GET.get("family") or "").strip() or None,
        "weights": weights if weights in ranking.WEIGHTS else None,
    }


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
    for listed in ranking.boards():
        sections.append(board_section(ranking.leaderboard(suite=listed.name, **filters)))
    families = sorted({family for section in sections for family in section["board"].families}, key=str.casefold)
    columns = _metric_columns()
    return render(request, "leaderboard/board/index.html", {
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
        board = ranking.leaderboard(suite=request.GET.get("suite") or PAPER_BOARD, **_board_filters(request))
    except ranking.UnknownBoard as exc:
        raise Http404(str(exc)) from None
    if fmt == "csv":
        response = HttpResponse(downloads.leaderboard_csv(board), content_type="text/csv; charset=utf-8")
    else:
        data = LeaderboardSerializer(board).data
        response = HttpResponse(json.dumps(data, indent=2, ensure_ascii=False, default=str),
                                content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_download_name(board.suite, fmt)}"'
    return response
