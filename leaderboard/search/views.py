"""The ``/episodes/`` page: every ended episode a visitor may see, across runs, filtered by a GET form; and its
exports, the same search as CSV or JSON Lines."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from leaderboard.access import is_staff, shows_references
from leaderboard.search import export as exports
from leaderboard.search.forms import EpisodeSearchForm
from leaderboard.search.selectors import episode_search, search_row

EPISODES_PER_PAGE = 50


def _form(request: HttpRequest) -> EpisodeSearchForm:
    return EpisodeSearchForm(request.GET or None, staff=is_staff(request), references=shows_references(request))


def _query(request: HttpRequest, *, without: tuple[str, ...] = ("page",)) -> str:
    """The request's query string without ``without``: the filters, for links that keep them."""
    query = request.GET.copy()
    for name in without:
        query.pop(name, None)
    return query.urlencode()


@require_safe
def episodes(request: HttpRequest) -> HttpResponse:
    """Episodes across runs, 50 a page; every filter state has its URL. A bad filter is the form's error (400)."""
    references = shows_references(request)
    form = _form(request)
    invalid = form.is_bound and not form.is_valid()
    page = None if invalid else Paginator(episode_search(request, **form.selection()), EPISODES_PER_PAGE).get_page(
        request.GET.get("page"))
    return render(request, "leaderboard/search/episodes.html", {
        "form": form,
        "page": page,
        "rows": [search_row(episode, references=references) for episode in page.object_list] if page else [],
        "query": _query(request),
        "max_exported": exports.MAX_EXPORTED,
        "references": references,
        "nav": "episodes",
    }, status=400 if invalid else 200)


@require_safe
def export(request: HttpRequest, fmt: str) -> HttpResponse:
    """The search's episodes (the page's filters and order, every page) as a CSV or JSON Lines file, streamed.

    A bad filter is a 400 naming each field and what is wrong with it, in plain text.
    """
    form = _form(request)
    if form.is_bound and not form.is_valid():
        problems = "".join(f"{field}: {' '.join(errors)}\n" for field, errors in form.errors.items())
        return HttpResponse(problems, status=400, content_type="text/plain; charset=utf-8")
    # One reverse for every line: the episode's id is the path segment "0" stands for.
    head, _, tail = request.build_absolute_uri(reverse("leaderboard:episode", args=[0])).rpartition("/0/")
    rows = exports.exported(episode_search(request, **form.selection()), references=shows_references(request),
                            address=lambda pk: f"{head}/{pk}/{tail}")
    response = StreamingHttpResponse(exports.LINES[fmt](rows), content_type=exports.FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="eegagentbench-episodes.{fmt}"'
    return response
