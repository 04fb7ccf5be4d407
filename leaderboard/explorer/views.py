"""The trajectory explorer's pages: an episode, a step's details and signal, two episodes of one instance compared."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from config.ids import query_id
from leaderboard.access import (
    is_staff,
    shows_references,
    visible_episode,
)
from leaderboard.board.comparability import how_called
from leaderboard.explorer.browser import browser_context, window_answer
from leaderboard.explorer.record import WindowError
from leaderboard.explorer.reads import get_episode, other_episodes, signal_step
from leaderboard.explorer.steps import (
    episode_summary,
    prompt_messages,
    step_details,
    step_signal,
    steps_page,
)
from leaderboard.formats import score as score_text
from leaderboard.formats import seizure_counts_text
from leaderboard.outcomes import shown_outcome
from leaderboard.summaries.scoring import item_score
from runs.models import Episode, Step


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
    episode = visible_episode(request, get_episode(pk))
    references = shows_references(request, episode.run.suite)
    page, steps = steps_page(episode, request.GET.get("page"), staff=is_staff(request))
    return render(request, "leaderboard/explorer/episode.html", {
        "summary": episode_summary(episode, references=references),
        "prompt": prompt_messages(episode) if page.number == 1 else None,
        "page": page,
        "steps": steps,
        "others": _episode_choices(other_episodes(request, episode, limit=50), references=references),
        "references": references,
    })


@require_safe
def episode_step(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One step's details, loaded when it is expanded: full text, reasoning, result and signal plot."""
    step = get_object_or_404(Step.objects.select_related("episode"), episode_id=pk, index=index)
    visible_episode(request, step.episode)
    return step_details(request, step, signal_url=reverse("leaderboard:episode_signal", args=[pk, index]))


@require_safe
def episode_signal(request: HttpRequest, pk: int, index: int) -> JsonResponse:
    """The signal one tool call covered, decimated, as plotly figures (and windowed features over time)."""
    step = signal_step(pk, index)
    visible_episode(request, step.episode)
    return step_signal(request, step)


@require_safe
def episode_record(request: HttpRequest, pk: int) -> HttpResponse:
    """The record browser: the episode's whole recording, paged and zoomed, with its tool calls and answer over it.

    ``?step=N`` opens it at the window and channels signal step ``N`` read.
    """
    episode = visible_episode(request, get_episode(pk))
    references = shows_references(request, episode.run.suite)
    browser = browser_context(episode, references=references, step_index=query_id(request.GET.get("step", "")))
    browser["window_url"] = reverse("leaderboard:episode_record_window", args=[pk])
    return render(request, "leaderboard/explorer/record.html", {
        "summary": {"episode": episode},
        "browser": browser,
        "references": references,
    })


@require_safe
def episode_record_window(request: HttpRequest, pk: int) -> JsonResponse:
    """One page of the recording: per channel each pixel's minimum and maximum (``leaderboard.explorer.record``).

    A query that cannot be read is a 400 naming each field that is wrong.
    """
    episode = visible_episode(request, get_episode(pk))
    try:
        return JsonResponse(window_answer(episode, request.GET, staff=is_staff(request)))
    except WindowError as error:
        return JsonResponse({"errors": error.errors}, status=400)


COMPARE_HINT = "Give two episode ids, the numbers in the episodes' addresses (/episodes/<id>/), as ?a=12&b=15."


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
    instance (``other_episodes``), when there is one. An id that is not a number, a second
    episode without a first, or episodes of two instances: the form again saying what is wrong
    (400). An episode that does not exist, or that a visitor may not see yet, is a 404 like any other.
    """
    given = {key: request.GET.get(key, "").strip() for key in ("a", "b")}
    ids = {key: query_id(value) for key, value in given.items()}
    error = _compare_error(given, ids)
    if error or not given["a"]:
        status = 400 if error else 200
        return render(request, "leaderboard/explorer/compare.html", {"given": given, "error": error}, status=status)
    first = visible_episode(request, get_episode(ids["a"]))
    candidates = other_episodes(request, first, limit=100)
    if not ids["b"] and candidates:
        return redirect(f"{reverse('leaderboard:compare')}?a={first.pk}&b={candidates[0].pk}")
    second = visible_episode(request, get_episode(ids["b"])) if ids["b"] else None
    if second is not None and second.instance_id != first.instance_id:
        error = (f"Episodes {first.pk} ({first.record_id}) and {second.pk} ({second.record_id}) are of different "
                 "instances: compare two episodes of one instance, e.g. two models on the same record.")
        return render(request, "leaderboard/explorer/compare.html", {"given": given, "error": error}, status=400)
    if second is not None and second.pk != first.pk and second not in candidates:
        candidates.append(second)  # beyond the chooser's limit: listed all the same, as the one shown
    references = shows_references(request, first.run.suite)
    sides = []
    for chosen in (first, second):
        if chosen is None:
            continue
        page, steps = steps_page(chosen, 1, staff=is_staff(request))
        sides.append({"summary": episode_summary(chosen, references=references), "page": page, "steps": steps})
    first_choice, *choices = _episode_choices([first, *candidates], references=references)
    return render(request, "leaderboard/explorer/compare.html", {
        "given": given,
        "first": first,
        "first_label": first_choice["label"],
        "sides": sides,
        "candidates": choices,
        "references": references,
    })
