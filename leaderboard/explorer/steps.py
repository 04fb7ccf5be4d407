"""An episode's steps as the explorer and the play pages show them.

The step list, a step's details and tables, its signal plot, and the header's summary. The play
pages use these for a player's own episode; ``leaderboard.access`` decides who may see a step.
"""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from leaderboard.access import is_staff, shown_failure_modes
from leaderboard.explorer import charts as episode_charts
from leaderboard.explorer.windows import step_window
from leaderboard.formats import seizure_counts_text
from leaderboard.outcomes import shown_outcome
from leaderboard.summaries.scoring import item_score
from runs.agents import free_of_charge
from runs.failures import CODES
from runs.models import Episode, Status, Step
from runs.redaction import public_error
from tools_app.budget import with_true_lengths
from tools_app.spans import SIGNAL_TOOLS

STEPS_PER_PAGE = 50
INLINE_TEXT_CHARS = 4000
TABLE_ROWS_SHOWN = 2000


def _tool_status(step: Step) -> str:
    return (step.result or {}).get("status", "") if step.kind == Step.Kind.TOOL_CALL else ""


def _tool_message(step: Step) -> str:
    """The error message a tool call's result holds ("" for none).

    A windowed refusal's gives the record's true length beside the requested range's, which the
    official text, and so what a model read under the official prompt set, calls the record's.
    """
    content = with_true_lengths((step.result or {}).get("content")) if step.kind == Step.Kind.TOOL_CALL else None
    return str(content["error"]) if isinstance(content, dict) and content.get("error") else ""


def is_signal_step(step: Step) -> bool:
    """A tool call that was executed and read samples of the recording."""
    return step.kind == Step.Kind.TOOL_CALL and step.tool_name in SIGNAL_TOOLS and _tool_status(step) == "ok"


def step_view(step: Step, episode_pk: int, *, staff: bool) -> dict:
    """What the step list shows of a step without loading its details (a traceback for staff only).

    Its error is the platform's (``public_error`` of it for anyone but staff), else a tool's own message,
    whole, as the step's details show its result to anyone who may see the step.
    """
    text = step.text if step.kind != Step.Kind.TOOL_CALL else ""
    error = (step.error if staff else public_error(step.error)) or _tool_message(step)
    result = step.result or {}
    has_details = bool(
        step.reasoning
        or len(text) > INLINE_TEXT_CHARS
        or step.kind == Step.Kind.TOOL_CALL
        or (step.kind == Step.Kind.AGENT_MESSAGE and result)
    )
    return {
        "step": step,
        "text": text[:INLINE_TEXT_CHARS],
        "truncated": len(text) > INLINE_TEXT_CHARS,
        "error": error[:INLINE_TEXT_CHARS],
        "status": _tool_status(step),
        "tool_calls": (result.get("tool_calls") or []) if step.kind == Step.Kind.AGENT_MESSAGE else [],
        "action": result.get("action", "") if step.kind == Step.Kind.AGENT_MESSAGE else "",
        "reason": result.get("reason", "") if step.kind in (Step.Kind.NUDGE, Step.Kind.ERROR) else "",
        "tokens": sum(getattr(step, name) or 0 for name in ("prompt_tokens", "completion_tokens")),
        "details_url": reverse("leaderboard:episode_step", args=[episode_pk, step.index]) if has_details else "",
        "signal": is_signal_step(step),
    }


def prompt_messages(episode: Episode) -> dict:
    """The opening messages the model got, with the prompt set and protocol they were sent in."""
    step = episode.steps.filter(kind=Step.Kind.PROMPT).order_by("index").only("result").first()
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


def step_url(episode_pk: int, index: int) -> str:
    """The stable link of a step: its episode page's page of steps, at the step (``#step-<index>``)."""
    page = max(index - 1, 0) // STEPS_PER_PAGE + 1  # step 0 is the prompt, shown above the steps
    return reverse("leaderboard:episode", args=[episode_pk]) + (f"?page={page}" if page > 1 else "") + f"#step-{index}"


def failure_mode_rows(episode: Episode, *, references: bool) -> list[dict]:
    """The failure modes an episode's header lists: code, definition, and links to the steps that show it."""
    return [
        {"code": mode["code"], "definition": CODES.get(mode["code"], ""),
         "steps": [{"index": index, "url": step_url(episode.pk, index)} for index in mode["steps"]]}
        for mode in shown_failure_modes(episode.failure_modes, references=references)
    ]  # fmt: skip


def episode_summary(episode: Episode, *, references: bool) -> dict:
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
        "failure_modes": failure_mode_rows(episode, references=references),
    }


def steps_page(episode: Episode, page_number, *, staff: bool) -> tuple:
    steps = episode.steps.exclude(kind=Step.Kind.PROMPT).order_by("index")
    page = Paginator(steps, STEPS_PER_PAGE).get_page(page_number)
    return page, [step_view(step, episode.pk, staff=staff) for step in page.object_list]


def step_details(request: HttpRequest, step: Step, *, signal_url: str) -> HttpResponse:
    """A step's details, for a visitor the caller has let see it (the explorer, or a player's own episode).

    ``signal_url``: where its signal plot is fetched, used when the step read the signal.
    """
    content = (step.result or {}).get("content") if step.kind == Step.Kind.TOOL_CALL else None
    return render(request, "leaderboard/explorer/_step_details.html", {
        "step": step,
        "full_text": step.kind != Step.Kind.TOOL_CALL and len(step.text) > INLINE_TEXT_CHARS,
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


def step_signal(request: HttpRequest, step: Step) -> JsonResponse:
    """A step's signal window as ``episode_signal`` gives it, for a visitor the caller has let see the step."""
    if not is_signal_step(step):
        raise Http404("This step is not a tool call that read the signal.")
    staff = is_staff(request)
    window = step_window(step, staff=staff)
    response = JsonResponse(window)
    if window["figure"] is not None:  # a recording that could not be opened may be back on the next visit
        # A shared cache may keep a visitor's window (decimated, of an ended episode), never staff's.
        response["Cache-Control"] = "private, max-age=3600" if staff else "public, max-age=3600"
    return response
