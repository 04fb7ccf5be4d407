"""The ``/episodes/`` page: every ended episode a visitor may see, across runs, filtered by a GET form."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from leaderboard.access import is_staff, shows_references
from leaderboard.search.forms import EpisodeSearchForm
from leaderboard.search.selectors import episode_search, search_row

EPISODES_PER_PAGE = 50


@require_safe
def episodes(request: HttpRequest) -> HttpResponse:
    """Episodes across runs, 50 a page; every filter state has its URL. A bad filter is the form's error (400)."""
    references = shows_references(request)
    form = EpisodeSearchForm(request.GET or None, staff=is_staff(request), references=references)
    invalid = form.is_bound and not form.is_valid()
    page = None if invalid else Paginator(episode_search(request, **form.selection()), EPISODES_PER_PAGE).get_page(
        request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "leaderboard/search/episodes.html", {
        "form": form,
        "page": page,
        "rows": [search_row(episode, references=references) for episode in page.object_list] if page else [],
        "query": query.urlencode(),
        "references": references,
        "nav": "episodes",
    }, status=400 if invalid else 200)
