"""The play pages: a player picks a suite and task and plays its episodes in the browser (``leaderboard.play``).

Every page is for players only: a visitor who is not signed in is sent to the login page, a
signed-in user who is neither staff nor in the ``players`` group gets 403. A player reaches only
their own episodes (another player's answer 404, as an episode that does not exist), and, while
one runs, only what its agent would see: the prompt, the tools and their results. The reference
and the score show on the episode's own page once it has ended.
"""
from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from benchmark.models import Suite
from leaderboard.access import HELD_OUT_NOTE, shows_items, shows_references
from leaderboard.explorer.browser import browser_context, window_answer
from leaderboard.explorer.reads import signal_step
from leaderboard.explorer.record import WindowError
from leaderboard.explorer.steps import step_details, step_signal, step_view
from leaderboard.play import players
from runs.environment import service as environment
from runs.environment.bodies import json_body
from runs.models import Episode, Status, Step


def player_required(view):
    """Players (and staff) only: the login page for a visitor, 403 for a signed-in non-player."""

    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not players.is_player(request.user):
            raise PermissionDenied("Playing is for invited players; ask the site's staff for an invitation.")
        return view(request, *args, **kwargs)

    return checked


@require_safe
@player_required
def index(request: HttpRequest) -> HttpResponse:
    """Pick a suite and task to play; the player's unfinished episodes to go back to, and those they finished."""
    episodes = players.player_episodes(request.user).select_related("run__suite", "instance__task").order_by("-started_at")
    suites = list(Suite.objects.select_related("release").order_by("name"))
    return render(request, "leaderboard/play/index.html", {
        "nav": "play",
        "suites": [{"suite": suite, "tasks": players.task_progress(request.user, suite)} for suite in suites],
        "unfinished": episodes.filter(status=Status.RUNNING),
        "finished": episodes.filter(status__in=players.ENDED)[:50],
        "held_out_note": HELD_OUT_NOTE,
    })


@require_POST
@player_required
def start(request: HttpRequest) -> HttpResponse:
    """Start the player's next unplayed instance of the chosen suite and task, and open it."""
    name, task = request.POST.get("suite", ""), request.POST.get("task", "")
    if "\x00" in name + task:  # PostgreSQL cannot even look such a name up
        return HttpResponseBadRequest("A suite or task name holds a NUL character.", content_type="text/plain")
    suite = get_object_or_404(Suite, name=name)
    try:
        episode = players.start_play(user=request.user, suite=suite, task=task)
    except (ValueError, environment.EnvironmentRefused) as exc:
        messages.error(request, str(exc))
        return redirect("play:index")
    return redirect("play:episode", pk=episode.pk)


@require_safe
@player_required
def episode(request: HttpRequest, pk: int) -> HttpResponse:
    """Play an episode: its prompt, the tool forms, the steps so far and the final-answer form.

    An episode that has ended has nothing left to play: its own page shows the result.
    """
    episode = players.own_episode(request.user, pk)
    if episode.status != Status.RUNNING:
        return redirect(_ended_url(request, episode))
    offer = environment.started_episode(episode)
    facts = players.record_facts(episode)
    task = episode.instance.task
    return render(request, "leaderboard/play/episode.html", {
        "nav": "play",
        "episode": episode,
        "task": task,
        "opening": offer.messages,
        "limits": offer.limits,
        "official_limits": offer.limits == {"max_turns": task.max_turns, "max_tool_calls": task.max_tool_calls},
        "references": shows_references(request, episode.run.suite),
        "items": shows_items(request, episode.run.suite),
        "tools": players.tool_forms(offer.tools, facts),
        "answer_fields": players.schema_fields(offer.output_schema, facts),
        "steps": _steps(episode),
        "browser": _browser(episode),
        "preview": players.answer_preview(episode, {}),
        "steps_url": reverse("play:steps", args=[pk]),
        "preview_url": reverse("play:preview", args=[pk]),
        "play_config": {
            "action_url": reverse("play:action", args=[pk]),
            "task": episode.instance.task.code,
            "n_epochs": facts.n_epochs,
            "duration_sec": facts.duration_sec,
        },
    })


def _browser(episode: Episode) -> dict | None:
    """The record browser of the episode's recording, without references (None for a task without one)."""
    if not episode.instance.recording_path:
        return None
    browser = browser_context(episode, references=False, step_index=None, step_link=_play_step_link(episode.pk))
    browser["window_url"] = reverse("play:record_window", args=[episode.pk])
    return browser


def _steps(episode: Episode) -> list[dict]:
    """The episode's steps as the explorer lists them, their details fetched from the play pages."""
    shown = []
    for step in episode.steps.exclude(kind=Step.Kind.PROMPT).order_by("index"):
        item = step_view(step, episode.pk, staff=False)
        if item["details_url"]:
            item["details_url"] = reverse("play:step", args=[episode.pk, step.index])
        shown.append(item)
    return shown


@require_safe
@player_required
def steps(request: HttpRequest, pk: int) -> HttpResponse:
    """The step list of the player's episode, refreshed after each action."""
    episode = players.own_episode(request.user, pk)
    return render(request, "leaderboard/explorer/_steps.html", {"steps": _steps(episode), "no_record_links": True})


@require_safe
@player_required
def step(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One step's details, as the explorer shows them."""
    episode = players.own_episode(request.user, pk)
    found = get_object_or_404(Step.objects.select_related("episode"), episode=episode, index=index)
    return step_details(request, found, signal_url=reverse("play:signal", args=[pk, index]))


def _play_step_link(pk: int):
    return lambda index: reverse("play:episode", args=[pk]) + f"#step-{index}"


@require_safe
@player_required
def record_window(request: HttpRequest, pk: int) -> JsonResponse:
    """A page of the recording the player is reading, as any visitor gets it (envelopes, never samples)."""
    episode = players.own_episode(request.user, pk)
    try:
        data = window_answer(episode, request.GET, staff=False, step_link=_play_step_link(pk))
    except WindowError as error:
        return JsonResponse({"errors": error.errors}, status=400)
    response = JsonResponse(data)
    response["Cache-Control"] = "private, no-store"
    return response


@require_safe
@player_required
def signal(request: HttpRequest, pk: int, index: int) -> JsonResponse:
    """The signal a tool call covered, decimated as for any visitor; cached by the player's browser only."""
    episode = players.own_episode(request.user, pk)
    response = step_signal(request, signal_step(episode.pk, index))
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_POST
@player_required
@json_body
def action(request: HttpRequest, pk: int, *, body: dict) -> JsonResponse:
    """One action of the player, the JSON an external agent posts: ``{"action": "tool_call", "tool_name",
    "arguments"}`` or ``{"action": "final_answer", …}``; the environment's reply, and where to go once it has ended.
    A body the environment API refuses is refused here the same way (``runs.environment.bodies``)."""
    episode = players.own_episode(request.user, pk)
    try:
        outcome = environment.take_action(episode=episode, action=body)
    except environment.EnvironmentRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=exc.status)
    reply = outcome.to_dict()
    if outcome.done:
        reply["episode_url"] = _ended_url(request, episode)
        if reply["received"]:
            messages.success(request, _received_text(request, outcome.episode))
    return JsonResponse(reply)


def _received_text(request: HttpRequest, episode: Episode) -> str:
    """The message that tells a player their final answer was received, on the page they go to next.

    On a held-out suite (``leaderboard.access``) it says no score is shown, and gives none.
    """
    said = f"Your final answer to {episode.instance.task.code} (episode {episode.pk}) was received."
    if episode.ended_by == Episode.EndedBy.FORMAT_FAILURE:
        said += " It still did not fit the answer format after three repair messages, so it is scored as it stands."
    if not shows_items(request, episode.run.suite):
        return f"{said} This suite's references are held out: no score is shown for it."
    if not shows_references(request, episode.run.suite):
        return f"{said} This site does not show scores of single episodes."
    return f"{said} Its score is on this page."


def _ended_url(request: HttpRequest, episode: Episode) -> str:
    """Where a player goes once an episode has ended: its page, or the list of their episodes on a held-out suite."""
    if shows_items(request, episode.run.suite):
        return reverse("leaderboard:episode", args=[episode.pk])
    return reverse("play:index") + "#finished"


@require_POST
@player_required
@json_body
def preview(request: HttpRequest, pk: int, *, body: dict) -> JsonResponse:
    """The chart of the answer being written (T5 intervals, T6 hypnogram), redrawn as the player edits it."""
    episode = players.own_episode(request.user, pk)
    return JsonResponse({"figure": players.answer_preview(episode, body)})
