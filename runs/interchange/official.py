"""The official runner's file formats and how our record maps to them, both ways.

``export`` writes these formats and ``importing`` reads them back, so what each field means is
decided here once:

- status: completed and failed episodes are results (``invalid`` is true for failed ones,
  whose prediction is ``{}``); pending, running and cancelled episodes have none.
- ``usage.format_failure``: the episode ended without a valid final answer (format failure,
  tool-call limit, turn limit or cost cap); ``usage.protocol_retries``: the repair nudges
  (invalid final answer, unusable action, tool call past the budget); ``total_tokens`` is
  prompt plus completion tokens.
- ``score``/``score_details``: the runner's per-item extras (``mcq_correct``,
  ``artifact_correct``, ``classification_correct``, ``hypnogram_*``) where our per-item
  scores give the same quantity, with the reference left out (as ``--redact-gold`` does).
  The official scorer ignores them.
- events: a ``prompt`` step is the step-0 ``prompt`` event; each model turn is an
  ``agent_action`` and starts the next step number; a tool call is a ``tool_call`` event
  (native calls answered with a stub are not: they never ran); a memory acknowledgement is a
  ``memory_update``; the accepted answer is ``final_answer``; repair and empty-turn nudges
  and every error are ``error`` events worded as the runner words them, which an import
  reads back as nudges.
- summaries: our scorer's task summary under the official ``summary.json`` names.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from datetime import timezone as dt_timezone

from django.utils import timezone

from benchmark.scoring.classification import REFERENCE_CLASSES
from benchmark.wording import Wording, default_prompt_set
from benchmark.wording import prompt_set as prompt_set_wording
from runs import protocol
from runs.episode.limits import MAX_EMPTY_NUDGES, MAX_PROTOCOL_RETRIES
from runs.models import Episode, Run, Status, Step

Kind = Step.Kind
EndedBy = Episode.EndedBy

# Endings without a valid final answer: the official runner's ``format_failure``.
FORMAT_FAILURE_ENDINGS = frozenset(
    {EndedBy.FORMAT_FAILURE, EndedBy.TOOL_CALL_LIMIT, EndedBy.TURN_LIMIT, EndedBy.COST_CAP}
)
REPAIR_REASONS = frozenset({"invalid_final_answer", "invalid_action", "tool_budget"})
GOLD_KEYS = frozenset({"gold", "gold_label", "gold_tags"})

# The runner's per-item extras that our per-item scores give: {task: {official name: our key}}.
PER_ITEM_SCORES = {
    "T1": {"mcq_correct": "correct"},
    "T2": {"artifact_correct": "correct"},
    "T3": {"classification_correct": "correct"},
    "T4": {"classification_correct": "correct"},
    "T5": {},
    "T6": {
        "hypnogram_macro_f1": "macro_f1",
        "hypnogram_cohen_kappa": "cohen_kappa",
        "hypnogram_transition_accuracy": "transition_accuracy",
        "hypnogram_architecture_error": "architecture_error",
    },
}
ACTION_TYPES = {"tool_call": "tool_call", "final_answer": "final_answer", "memory_update": "memory_update",
                "invalid": "invalid_action"}  # fmt: skip
ACTIONS = {official: ours for ours, official in ACTION_TYPES.items()}


class InterchangeError(Exception):
    """An output directory cannot be imported, or a run cannot be exported; the message says why."""


# ── the official summaries ───────────────────────────────────────────────────────────────────


def _renamed(counts: dict) -> dict:
    """Per-subject or pooled T5 figures under the official names (``event_based_f1``)."""
    return {("event_based_f1" if key == "event_f1" else key): value for key, value in counts.items()}


def official_metrics(task_id: str, summary: dict) -> dict:
    """The ``metrics`` block of the official summary, from our scorer's summary of the task."""
    metrics = summary["metrics"]
    if task_id == "T1":
        return {key: metrics[key] for key in ("accuracy", "invalid_predictions", "confusion")}
    if task_id in ("T2", "T3", "T4"):
        return {
            "n": summary["n_items"],
            "reference_classes": list(REFERENCE_CLASSES[task_id]),
            **{key: metrics[key] for key in ("accuracy", "macro_f1", "invalid_predictions", "per_class", "confusion")},
        }
    if task_id == "T5":
        return {
            "n": summary["n_items"],
            **{key: metrics[key] for key in (
                "n_subjects", "event_f1", "dice_s", "sensitivity", "precision", "fp_per_24h",
                "miss_rate", "over_alarm_rate", "prediction_warning_count", "event_parameters",
            )},  # fmt: skip
            "subject_metrics": {subject: _renamed(counts) for subject, counts in metrics["subjects"].items()},
            "pooled": _renamed(metrics["pooled"]),
        }
    return {
        "n": summary["n_items"],
        **{key: metrics[key] for key in ("macro_f1", "cohen_kappa", "empty_predictions")},
        "per_record": {
            item["scenario_id"]: {"macro_f1": item["macro_f1"], "cohen_kappa": item["cohen_kappa"]}
            for item in summary["per_item"]
        },
    }


def official_task_summary(summary: dict) -> dict:
    """Our scorer's task summary in the official ``summary.json`` format.

    The official scorer writes metrics only for a complete task; otherwise the first reason
    it refused the task becomes ``error``.
    """
    if not summary["official"]:
        return {"schema": summary["schema"], "official": False, "error": summary["reasons"][0]}
    return {
        "schema": summary["schema"],
        "official": True,
        "task_id": summary["task_id"],
        "primary_metric": summary["primary_metric"],
        "primary_score": summary["primary_score"],
        "completeness": summary["completeness"],
        "metrics": official_metrics(summary["task_id"], summary),
    }


# ── the runner's wording of its nudges ───────────────────────────────────────────────────────


def _nudge_error(result: dict) -> str | None:
    """A repair or empty-turn nudge worded as the official runner logs it; None for other nudges."""
    reason, attempt = result.get("reason"), result.get("attempt")
    if reason == "invalid_final_answer":
        errors = "; ".join(result.get("errors") or [])
        return f"final-answer schema repair {attempt}/{MAX_PROTOCOL_RETRIES}: {errors}"
    if reason == "invalid_action":
        return f"unparseable action; protocol repair {attempt}/{MAX_PROTOCOL_RETRIES}"
    if reason == "tool_budget":
        return f"tool budget exhausted; final-answer repair {attempt}/{MAX_PROTOCOL_RETRIES}"
    if reason == "empty_answer":
        return f"empty assistant turn; nudge {attempt}/{MAX_EMPTY_NUDGES}"
    return None


# The same wording read back as our nudges, (pattern, reason): the pattern's groups are the attempt
# and, for a schema repair, its errors.
NUDGE_PATTERNS = (
    (re.compile(r"^final-answer schema repair (\d+)/\d+: ?(.*)$", re.DOTALL), "invalid_final_answer"),
    (re.compile(r"^unparseable action; protocol repair (\d+)/\d+$"), "invalid_action"),
    (re.compile(r"^tool budget exhausted; final-answer repair (\d+)/\d+$"), "tool_budget"),
    (re.compile(r"^empty assistant turn; nudge (\d+)/\d+$"), "empty_answer"),
)


def imported_wording() -> Wording:
    """The wording of nudges in an official runner's run: the official package's, where it is installed."""
    return prompt_set_wording(default_prompt_set())


# ── trajectories, rows and the run status ────────────────────────────────────────────────────


def _timestamp(moment: datetime | None) -> str:
    moment = moment or timezone.now()
    return moment.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _token_usage(step: Step) -> dict:
    usage = {"prompt_tokens": step.prompt_tokens or 0, "completion_tokens": step.completion_tokens or 0}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    for name in ("reasoning_tokens", "cache_read_tokens", "cache_write_tokens"):
        if getattr(step, name) is not None:
            usage[name] = getattr(step, name)
    return usage


def _observed_content(step, result: dict):
    """The tool result as the agent read it, parsed back from the step's text.

    The text keeps the result's key order; a JSON column does not on every database
    (PostgreSQL's jsonb re-sorts keys), and the official trajectory shows the order the agent saw.
    """
    text = step.text or ""
    body = text[len(protocol.TOOL_RESULT_PREFIX):] if text.startswith(protocol.TOOL_RESULT_PREFIX) else text
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return result.get("content")
    return value if isinstance(value, dict) else result.get("content")


def trajectory_events(episode: Episode, steps: Iterable[Step]) -> list[dict]:
    """The episode's steps as the official runner's trajectory events."""
    scenario_id = episode.instance.scenario_id
    events, turn, memory = [], 0, None

    def event(event_type: str, step_number: int, created_at, **parts) -> None:
        entry = {"scenario_id": scenario_id, "step": step_number, "event_type": event_type,
                 "timestamp": _timestamp(created_at)}  # fmt: skip
        entry.update({name: value for name, value in parts.items() if value})
        events.append(entry)

    for step in steps:
        result = step.result if isinstance(step.result, dict) else {}
        if step.kind == Kind.PROMPT:
            event("prompt", 0, step.created_at, agent_message={"messages": result.get("messages", [])})
        elif step.kind == Kind.AGENT_MESSAGE:
            turn += 1
            memory = result.get("memory")
            message = {
                "action_type": ACTION_TYPES.get(result.get("action"), "invalid_action"),
                "thought": result.get("thought") or None,
                "token_usage": _token_usage(step),
                "latency_ms": step.latency_ms,
                "raw_content": step.text,
            }
            if step.reasoning:
                message["reasoning"] = step.reasoning
            event("agent_action", turn, step.created_at, agent_message=message)
        elif step.kind == Kind.TOOL_CALL:
            if result.get("status") == "not_executed":
                continue
            observation = {"status": result.get("status", "ok"), "content": _observed_content(step, result),
                           "latency_ms": step.latency_ms, "error": step.error or None}  # fmt: skip
            call = {"name": step.tool_name, "arguments": step.arguments or {}}
            event("tool_call", turn, step.created_at, tool_call=call, observation=observation)
        elif step.kind == Kind.NUDGE:
            if result.get("reason") == "memory_update":
                observation = {"status": "ok", "content": _observed_content(step, {"content": None})}
                event("memory_update", turn, step.created_at, agent_message={"memory_content": memory},
                      observation=observation)  # fmt: skip
            elif (text := _nudge_error(result)) is not None:
                event("error", turn, step.created_at, error=text)
        elif step.kind == Kind.FINAL_ANSWER:
            event("final_answer", turn, step.created_at,
                  agent_message={"thought": step.text or None, "final_answer": step.arguments})  # fmt: skip
        elif step.kind == Kind.ERROR:
            # A failed provider attempt belongs to the turn it was retried for.
            number = turn + 1 if result.get("reason") == "provider_attempt" else turn
            event("error", number, step.created_at, error=step.error or "error")
    return events


def _per_item_scores(task_id: str, scores: dict) -> tuple[dict, dict]:
    values, details = {}, {}
    visible = {key: value for key, value in (scores or {}).items() if key not in GOLD_KEYS}
    for name, key in PER_ITEM_SCORES[task_id].items():
        value = (scores or {}).get(key)
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, (int, float)):
            values[name] = float(value)
            details[name] = visible
    return values, details


def _last_error(steps: list[Step]) -> str | None:
    for step in reversed(steps):
        reason = (step.result or {}).get("reason") if isinstance(step.result, dict) else None
        if step.kind == Kind.ERROR and reason != "provider_attempt" and step.error:
            return step.error
    return None


def runs_row(episode: Episode, steps: list[Step]) -> dict:
    """The episode as a row of the official ``runs.jsonl``."""
    failed = episode.status == Status.FAILED
    format_failure = not failed and episode.ended_by in FORMAT_FAILURE_ENDINGS
    score, details = ({}, {}) if failed else _per_item_scores(episode.instance.task.code, episode.scores)
    usage = {
        "tool_calls": episode.n_tool_calls,
        "turns": episode.n_turns,
        "wall_time_sec": round(episode.wall_time_sec or 0.0, 2),
        "prompt_tokens": episode.prompt_tokens,
        "completion_tokens": episode.completion_tokens,
        "total_tokens": episode.prompt_tokens + episode.completion_tokens,
        "protocol_retries": sum(
            step.kind == Kind.NUDGE and (step.result or {}).get("reason") in REPAIR_REASONS for step in steps
        ),
        "format_failure": format_failure,
    }
    if episode.reasoning_tokens:
        usage["reasoning_tokens"] = episode.reasoning_tokens
    error = None
    if failed:
        error = episode.error_message or _last_error(steps)
    elif format_failure:
        error = _last_error(steps) or episode.error_message or None
    prediction = episode.prediction if not failed and isinstance(episode.prediction, dict) else {}
    return {
        "scenario_id": episode.instance.scenario_id,
        "status": "failed" if failed else "completed",
        "invalid": failed,
        "prediction": prediction,
        "score": score,
        "score_details": details,
        "usage": usage,
        "error": error,
    }


def run_status(run: Run, rows: list[dict]) -> dict:
    """The runner's ``run_status.json`` for one task's rows."""
    scores = defaultdict(list)
    for row in rows:
        for metric, value in row["score"].items():
            scores[metric].append(value)
    usage = {
        "total_tool_calls": sum(row["usage"]["tool_calls"] for row in rows),
        "total_turns": sum(row["usage"]["turns"] for row in rows),
        "total_wall_time_sec": round(sum(row["usage"]["wall_time_sec"] for row in rows), 2),
    }
    for key in ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens"):
        total = sum(row["usage"].get(key, 0) for row in rows)
        if total > 0:
            usage[key] = total
    invalid = sum(row["invalid"] for row in rows)
    return {
        "total_scenarios": len(rows),
        "completed": sum(row["status"] == "completed" for row in rows),
        "failed": sum(row["status"] == "failed" for row in rows),
        "max_turns_exceeded": 0,
        "invalid": invalid,
        "scored": len(rows) - invalid,
        "aggregate_scores": {
            metric: {"mean": sum(values) / len(values), "count": len(values)} for metric, values in scores.items()
        },
        "aggregate_usage": usage,
        "run_config": {
            "agent": {"name": run.model.name, "model": run.model.provider_model, "api_base": run.api_base or None,
                      "api_key_env": run.api_key_env or None, **(run.settings or {}),
                      "prompt_set": run.prompt_set},  # fmt: skip
            "platform_run": run.pk,
            "suite": run.suite.name,
            "limits": run.limits or {},
        },
    }
