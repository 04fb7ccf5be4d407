"""Two runs compared, task by task with paired tests and instance by instance: ``/runs/compare/?a=&b=``."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from benchmark.scoring import TASK_IDS
from leaderboard.access import HELD_OUT_NOTE, shows_comparison
from leaderboard.comparison import selectors as reads
from leaderboard.summaries.pairs import CHANGES, CONFIDENCE
from runs.models import Run

INSTANCES_PER_PAGE = 100
CHANGE_NAMES = {
    "regressed": "regressed (A better)",
    "improved": "improved (B better)",
    "same_wrong": "same, both wrong",
    "same_right": "same, both right",
}


def _error(request: HttpRequest, message: str, query) -> HttpResponse:
    given = {key: query.get(key, "")[:20] for key in ("a", "b")}
    return render(request, "leaderboard/comparison/compare.html", {"error": message, "given": given, "nav": "runs"},
                  status=400)


@require_safe
def compare_runs(request: HttpRequest) -> HttpResponse:
    """Runs A and B of one suite: per task B − A with its interval and test, then every shared instance.

    Without ``a`` and ``b``: the form. Runs on two suites, one run twice, or ids that are not
    numbers: the form again saying why (400). A run that does not exist: 404.
    """
    if not any(request.GET.get(key) for key in ("a", "b", "run")):
        return render(request, "leaderboard/comparison/compare.html", {"given": {}, "nav": "runs"})
    try:
        a, b = reads.compared_runs(*reads.chosen_ids(request.GET))
    except reads.ComparisonError as exc:
        return _error(request, str(exc), request.GET)
    except Run.DoesNotExist as exc:
        raise Http404(str(exc)) from None
    scores, instances = shows_comparison(request, a, b)
    data = reads.run_comparison(a, b) if scores else None
    task, change = request.GET.get("task", ""), request.GET.get("change", "")
    task, change = (task if task in TASK_IDS else ""), (change if change in CHANGES else "")
    page = None
    if data and instances:
        page = Paginator(reads.filtered_instances(data.comparison, task=task, change=change),
                         INSTANCES_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "leaderboard/comparison/compare.html", {
        "nav": "runs",
        "a": a,
        "b": b,
        "given": {"a": a.pk, "b": b.pk},
        "data": data,
        "tasks": list(data.comparison.tasks.values()) if data else [],
        "overall": data.comparison.overall if data else None,
        "confidence": round(CONFIDENCE * 100),
        "scores_shown": scores,
        "instances_shown": instances,
        "held_out": a.suite.is_held_out,
        "held_out_note": HELD_OUT_NOTE,
        "counts": reads.change_counts(data.comparison) if data and instances else {},
        "change_names": CHANGE_NAMES,
        "task_choices": list(data.comparison.tasks) if data else [],
        "task": task,
        "change": change,
        "page": page,
        "records": data.records if data else {},
        "only": data.comparison.only if data and instances else [],
        "query": query.urlencode(),
    })
