"""The item analysis pages: a task's instances with their solve rate and discrimination, and one instance's episodes."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from benchmark.models import Instance, Release, Task
from leaderboard.access import shows_items, shows_references
from leaderboard.board import ranking
from leaderboard.items import selectors as item_reads

ITEMS_PER_PAGE = 100


def _chosen_board(request: HttpRequest) -> tuple[ranking.Board | None, list[ranking.Board]]:
    """The board ``?suite=`` names, else the first listed board of a suite with runs, else of any suite; and
    the boards this visitor may pick.

    A held-out suite's board shows its instances to staff only (``access.shows_items``): to anyone
    else it is a 404, as a name no board has. A board of the paper's rows alone has no instances.
    """
    listed = [board for board in ranking.boards() if board.suite is None or shows_items(request, board.suite)]
    wanted = request.GET.get("suite")
    if wanted:
        board = next((board for board in listed if board.name == wanted), None)
        if board is None:
            raise Http404(f"No board is named {wanted!r}.")
        return board, listed
    suites = [board for board in listed if board.suite is not None]
    return next((board for board in suites if board.n_runs), suites[0] if suites else None), listed


def _choice(request: HttpRequest, name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    """``?name=`` when it is one of ``choices``, else ``default``: a page falls back where the API answers 400."""
    value = request.GET.get(name)
    return value if value in choices else default


def _query(request: HttpRequest, **changes: str | None) -> str:
    """This page's query string with ``changes`` (None removes a parameter), back on its first page."""
    query = request.GET.copy()
    for name, value in {**changes, "page": None}.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = value
    return query.urlencode()


def _sort_links(request: HttpRequest, sort: str) -> dict[str, dict]:
    """Per sort key, the query that sorts by it (the reverse when it is the current one) and the column's aria-sort."""
    return {
        key: {
            "query": _query(request, sort=f"-{key}" if sort == key else key),
            "aria_sort": "ascending" if sort == key else "descending" if sort == f"-{key}" else None,
        }
        for key in item_reads.SORT_KEYS
    }


@require_safe
def task_items(request: HttpRequest, code: str) -> HttpResponse:
    """A task's instances on a board: runs, solve rate or mean item score, discrimination, flags; most suspect first."""
    task = get_object_or_404(Task, code=code)
    board, listed = _chosen_board(request)
    context = {"nav": code, "task": task, "boards": listed, "board": board, "suite": board.name if board else None}
    if board is None or board.suite is None:
        return render(request, "leaderboard/items/items.html", context)
    sort = _choice(request, "sort", item_reads.SORTS, "discrimination")
    flag = _choice(request, "flag", item_reads.FLAG_FILTERS, None)
    analysis = item_reads.item_analysis(suite=board.name, task=code,
                                        runs=_choice(request, "runs", item_reads.RUN_CHOICES, None))
    figures = shows_references(request, board.suite)
    rows = item_reads.listed_items(analysis, sort=sort, flag=flag, figures=figures)
    flags = [row["flag"] for row in analysis.items] if figures else []
    return render(request, "leaderboard/items/items.html", {
        **context,
        "analysis": analysis,
        "figures": figures,
        "page": Paginator(rows, ITEMS_PER_PAGE).get_page(request.GET.get("page")),
        "query": _query(request),
        "sort": sort,
        "flag": flag if figures else None,
        "sort_links": _sort_links(request, sort),
        "flag_links": [
            {"label": "every instance", "query": _query(request, flag=None), "chosen": flag is None, "count": None},
            *({"label": label, "query": _query(request, flag=name), "chosen": flag == name, "count": flags.count(name)}
              for name, label in item_reads.FLAG_NAMES.items()),
        ],  # fmt: skip
        "other_runs_query": _query(request, runs="comparable" if analysis.runs == "all" else "all"),
        "flag_names": item_reads.FLAG_NAMES,
    })


@require_safe
def task_item(request: HttpRequest, code: str, pk: int) -> HttpResponse:
    """One instance of a task: every run's episode of it, with its answer and outcome, each linked to its page."""
    instances = Instance.objects.select_related("task", "suite__release").defer(*Release.unread("suite__release"))
    instance = get_object_or_404(instances, pk=pk, task__code=code)
    if not shows_items(request, instance.suite):
        raise Http404("No such instance.")  # as for an instance that does not exist
    references = shows_references(request, instance.suite)
    return render(request, "leaderboard/items/item.html", {
        "nav": code,
        "task": instance.task,
        "instance": instance,
        "episodes": item_reads.instance_episodes(request, instance, references=references),
        "references": references,
    })
