"""The runs list, a run's page and its progress polled as JSON."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from benchmark.models import Release
from benchmark.scoring.epochs import T6_CORRECT_MACRO_F1
from leaderboard.access import (
    HELD_OUT_NOTE,
    is_staff,
    shows_items,
    shows_references,
    shows_run_scores,
)
from leaderboard.analysis.failure_modes import mode_shares, shown_codes
from leaderboard.board.comparability import comparability, how_called
from leaderboard.run_pages import selectors as run_reads
from leaderboard.run_pages.forms import EpisodeFilterForm, RunFilterForm
from leaderboard.run_pages.selectors import (
    episode_rows,
    filtered_episodes,
    listed_score,
    run_epochs,
    run_progress_data,
    run_scores,
    waiting_for_a_worker,
)
from leaderboard.summaries.scoring import fresh_summaries
from runs.agents import free_of_charge
from runs.models import Episode, Run
from runs.queue.workers import WORKER_COMMAND

EPISODES_PER_PAGE = 100
RUNS_PER_PAGE = 50


@require_safe
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A run: live progress, its Overall, per-task metrics, and its episodes, filterable and searchable."""
    runs = Run.objects.select_related("model", "suite__release", "created_by").defer(*Release.unread("suite__release"))
    run = get_object_or_404(runs, pk=pk)
    references = shows_references(request, run.suite)

    form = EpisodeFilterForm(request.GET or None, ended_by_choices=Episode.EndedBy.choices,
                             failure_modes=list(shown_codes(references=references)))
    if not references:
        form.fields["outcome"].choices = [
            choice for choice in form.fields["outcome"].choices if choice[0] not in ("correct", "wrong")
        ]
    episodes = filtered_episodes(request, run, form) if shows_items(request, run.suite) else Episode.objects.none()
    page = Paginator(episodes, EPISODES_PER_PAGE).get_page(request.GET.get("page"))
    scores_shown = shows_run_scores(request, run)
    summary = run_reads.run_summary(run) if scores_shown else None
    rows = episode_rows(page.object_list, references=references, staff=is_staff(request))
    query = request.GET.copy()
    query.pop("page", None)
    modes = mode_shares([run.pk], references=references).get(run.pk, {})
    return render(request, "leaderboard/run_pages/run.html", {
        "run": run,
        "failure_modes": modes,
        "mode_codes": {
            code: definition for code, definition in shown_codes(references=references).items()
            if any(code in entry["modes"] for entry in modes.values())
        },
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
        "can_cancel": run.can_cancel(),
        "can_resume": run.can_resume(),
    })


@require_safe
def runs_list(request: HttpRequest) -> HttpResponse:
    """Every run, newest first, filterable by status, model and suite; staff also see its cancel and resume buttons.

    Anyone may read it: a run's counts and scores are on its page too; nothing of an episode is shown.
    """
    form = RunFilterForm(request.GET or None)
    runs = (
        run_reads.run_list(**form.selection())
        .select_related("created_by", "leaderboard_summary")
        .defer("leaderboard_summary__items", "leaderboard_summary__tool_use")
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    # Scores as they stand, as on the leaderboard: a stored summary when it is up to date (the
    # runs side keeps it so), else re-scored in memory; none for a run with no ended episode.
    scored = [run for run in page.object_list if run.n_completed + run.n_failed and shows_run_scores(request, run)]
    summaries = fresh_summaries(scored)
    rows = [
        {
            "run": run,
            "score": listed_score(summaries.get(run.pk)),
            "scores_held_back": not shows_run_scores(request, run),
            "ended": run.n_completed + run.n_failed + run.n_cancelled,
            "can_cancel": run.can_cancel(),
            "can_resume": run.can_resume(),
        }
        for run in page.object_list
    ]
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "leaderboard/run_pages/runs.html", {
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
