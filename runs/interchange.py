"""Results in the official runner's file formats, both ways: export a run, import an official output directory.

The layout is that of the official ``run-all`` command (528why/EEGAgentBenchmark, ``cli.py``):
one directory per task, ``<dir>/Tn/``, holding

- ``runs.jsonl``: one row per scenario, ``{scenario_id, status, invalid, prediction, score,
  score_details, usage, error}``;
- ``trajectories/<scenario_id>.jsonl``: the scenario's events, ``{scenario_id, step,
  event_type, timestamp, agent_message?, tool_call?, observation?, error?}``;
- ``summary.json``: the official task summary (``{schema, official: false, error}`` when
  the run does not cover exactly the task's instances);
- ``run_status.json`` and ``failed_cases.json``, as the runner writes them;

and ``<dir>/benchmark_summary.json``. The official ``summarize`` command scores an exported
task directory (``--runs <dir>/Tn/runs.jsonl``) and we score its output directories with our
scorer, to the same numbers.

How our fields map to the official ones:

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

An import creates a run with ``source = imported``: one episode per result row (for a
scenario retried by the official runner, the latest completed row), its steps rebuilt from
the trajectory, scored by our scorer.
"""
from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmark.models import ModelSpec, Suite
from benchmark.scoring import TASK_IDS, benchmark_summary
from benchmark.scoring.classification import REFERENCE_CLASSES
from benchmark.scoring.files import ScoringInputError, iter_jsonl, read_predictions
from benchmark.wording import OFFICIAL, PLATFORM, PROMPT_SETS, Wording, default_prompt_set
from benchmark.wording import prompt_set as prompt_set_wording
from runs import db, protocol
from runs.agents import is_baseline
from runs.cost import Pricing, TokenUsage, total_cost
from runs.episode.limits import MAX_EMPTY_NUDGES, MAX_PROTOCOL_RETRIES
from runs.episode.scoring import score_prediction
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step
from runs.reports import json_safe, task_summaries
from runs.services import episode_record_ids, keep_litellm_rates
from tools_app.views import result_text

Kind = Step.Kind
EndedBy = Episode.EndedBy

# Endings without a valid final answer: the official runner's ``format_failure``.
FORMAT_FAILURE_ENDINGS = frozenset(
    {EndedBy.FORMAT_FAILURE, EndedBy.TOOL_CALL_LIMIT, EndedBy.TURN_LIMIT, EndedBy.COST_CAP}
)
REPAIR_REASONS = frozenset({"invalid_final_answer", "invalid_action", "tool_budget"})
GOLD_KEYS = frozenset({"gold", "gold_label", "gold_tags"})
PROVIDER_ATTEMPT = re.compile(r"^provider attempt \d+ failed: ")

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


# ── export ───────────────────────────────────────────────────────────────────────────────────


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


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(payload), ensure_ascii=False, indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(json_safe(row), ensure_ascii=False, allow_nan=False) + "\n")


def _safe_file_name(scenario_id: str) -> str:
    if not scenario_id or "/" in scenario_id or "\\" in scenario_id or scenario_id in (".", ".."):
        raise InterchangeError(f"scenario id {scenario_id!r} cannot name a trajectory file")
    return f"{scenario_id}.jsonl"


def epoch_dir_name(epoch: int) -> str:
    """The directory of a 0-based epoch in the export of a run of several epochs: ``epoch-1``, ``epoch-2``, …"""
    return f"epoch-{epoch + 1}"


def export_run(*, run: Run, out_dir: str | Path) -> list[Path]:
    """Write ``run`` to ``out_dir`` in the official output layout; return the files written.

    ``out_dir`` must not exist or be empty, so that no earlier result is mixed in. A run of
    several epochs is written as one official output directory per epoch,
    ``out_dir/epoch-1/``, ``out_dir/epoch-2/``, …, since the official layout holds one result
    per scenario; each scores on its own (``import_official_run`` reads one of them back).
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise InterchangeError(f"{out} is not empty; export into a new directory.")
    run = Run.objects.select_related("model", "suite").get(pk=run.pk)
    if run.epochs == 1:
        return _export_epoch(run, out, epoch=0)
    written = []
    for epoch in range(run.epochs):
        written += _export_epoch(run, out / epoch_dir_name(epoch), epoch=epoch)
    return written


def _export_epoch(run: Run, out: Path, *, epoch: int) -> list[Path]:
    """Write one epoch of ``run`` to ``out`` in the official output layout; return the files written."""
    summaries = task_summaries(run, epoch=epoch)
    episodes = (
        run.episodes.filter(epoch=epoch, status__in=[Status.COMPLETED, Status.FAILED])
        .select_related("instance__task")
        .prefetch_related("steps")
        .order_by("instance__position", "instance_id")
    )
    by_task = defaultdict(list)
    for episode in episodes:
        by_task[episode.instance.task.code].append(episode)
    written = []
    for task_id, summary in summaries.items():
        task_dir = out / task_id
        rows = []
        for episode in by_task[task_id]:
            steps = sorted(episode.steps.all(), key=lambda step: step.index)
            rows.append(runs_row(episode, steps))
            events = _with_release_id(trajectory_events(episode, steps), episode)
            if events:
                path = task_dir / "trajectories" / _safe_file_name(episode.instance.scenario_id)
                _write_jsonl(path, events)
                written.append(path)
        _write_jsonl(task_dir / "runs.jsonl", rows)
        _write_json(task_dir / "run_status.json", run_status(run, rows))
        _write_json(task_dir / "failed_cases.json", [row for row in rows if row["status"] == "failed"])
        _write_json(task_dir / "summary.json", official_task_summary(summary))
        written += [task_dir / name for name in ("runs.jsonl", "run_status.json", "failed_cases.json", "summary.json")]
    _write_json(out / "benchmark_summary.json", benchmark_summary(summaries))
    written.append(out / "benchmark_summary.json")
    return written


# ── import ───────────────────────────────────────────────────────────────────────────────────

# The official runner's wording of its repair and empty-turn nudges, read back as our nudges.
_NUDGE_PATTERNS = (
    (re.compile(r"^final-answer schema repair (\d+)/\d+: ?(.*)$", re.DOTALL), "invalid_final_answer"),
    (re.compile(r"^unparseable action; protocol repair (\d+)/\d+$"), "invalid_action"),
    (re.compile(r"^tool budget exhausted; final-answer repair (\d+)/\d+$"), "tool_budget"),
    (re.compile(r"^empty assistant turn; nudge (\d+)/\d+$"), "empty_answer"),
)


def _nudge_step(error: str, wording: Wording, *, native: bool) -> dict | None:
    for pattern, reason in _NUDGE_PATTERNS:
        match = pattern.match(error)
        if match is None:
            continue
        errors = [part for part in match.group(2).split("; ") if part] if reason == "invalid_final_answer" else []
        text = {
            "invalid_final_answer": lambda: wording.repair_nudge(errors, native=native),
            "invalid_action": lambda: wording.invalid_action_nudge(native=native),
            "tool_budget": wording.tool_budget_nudge,
            "empty_answer": wording.empty_answer_nudge,
        }[reason]()
        return {"kind": Kind.NUDGE, "text": text,
                "result": {"reason": reason, "attempt": int(match.group(1)), "errors": errors}}  # fmt: skip
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _parse_timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt_timezone.utc)


def steps_from_events(
    events: list[dict], *, pricing: Pricing, wording: Wording | None = None, native: bool = False
) -> list[dict]:
    """Step fields (``kind`` and the rest) rebuilt from the official trajectory events, in order.

    The events do not hold the nudges' texts, only that they were sent: those are worded by
    ``wording`` (the official prompt set where the package is installed, else the platform's).
    """
    wording = wording or imported_wording()
    calls_of_turn, answer_of_turn = defaultdict(list), {}
    for entry in events:
        if entry.get("event_type") == "tool_call":
            calls_of_turn[entry.get("step")].append(entry.get("tool_call") or {})
        elif entry.get("event_type") == "final_answer":
            answer_of_turn[entry.get("step")] = (entry.get("agent_message") or {}).get("final_answer")
    steps, calls_seen = [], defaultdict(int)
    memory = None
    for entry in events:
        event_type, turn = entry.get("event_type"), entry.get("step")
        message = entry.get("agent_message") if isinstance(entry.get("agent_message"), dict) else {}
        observation = entry.get("observation") if isinstance(entry.get("observation"), dict) else {}
        if event_type == "prompt":
            result = {"messages": message.get("messages") or [], "protocol": "text", "tools": None}
            steps.append({"kind": Kind.PROMPT, "result": result})
        elif event_type == "agent_action":
            reported = message.get("token_usage") if isinstance(message.get("token_usage"), dict) else {}
            usage = TokenUsage(**{name: _count(reported.get(name)) for name in TOKEN_FIELDS})
            action = ACTIONS.get(message.get("action_type"), "invalid")
            calls = [
                {"id": f"call_{turn}_{index}", "name": str(call.get("name") or ""),
                 "arguments": protocol.arguments_json(call.get("arguments") or {})}
                for index, call in enumerate(calls_of_turn[turn])
            ] if action == "tool_call" else []  # fmt: skip
            steps.append({
                "kind": Kind.AGENT_MESSAGE,
                "text": str(message.get("raw_content") or ""),
                "reasoning": str(message.get("reasoning") or ""),
                "latency_ms": _number(message.get("latency_ms")),
                "cost_usd": pricing.call_cost(usage),
                "result": {"action": action, "thought": str(message.get("thought") or ""), "tool_calls": calls,
                           "final_answer": answer_of_turn.get(turn) if action == "final_answer" else None,
                           "memory": None, "finish_reason": ""},  # fmt: skip
                **usage.as_fields(),
            })
        elif event_type == "tool_call":
            call = entry.get("tool_call") if isinstance(entry.get("tool_call"), dict) else {}
            content, error = observation.get("content"), str(observation.get("error") or "")
            call_id = f"call_{turn}_{calls_seen[turn]}"
            calls_seen[turn] += 1
            steps.append({
                "kind": Kind.TOOL_CALL,
                "tool_name": str(call.get("name") or "")[:64],
                "arguments": call.get("arguments") if isinstance(call.get("arguments"), dict) else {},
                "result": {"status": observation.get("status") or "ok", "content": content, "tool_call_id": call_id},
                "error": error,
                "text": protocol.TOOL_RESULT_PREFIX + result_text(str(call.get("name") or ""), content, error),
                "latency_ms": _number(observation.get("latency_ms")),
            })
        elif event_type == "memory_update":
            memory = message.get("memory_content")
            if steps and steps[-1]["kind"] == Kind.AGENT_MESSAGE:
                steps[-1]["result"]["memory"] = memory
            text = protocol.TOOL_RESULT_PREFIX + result_text("", observation.get("content"))
            steps.append({"kind": Kind.NUDGE, "text": text, "result": {"reason": "memory_update"}})
        elif event_type == "final_answer":
            answer = message.get("final_answer")
            steps.append({"kind": Kind.FINAL_ANSWER, "text": str(message.get("thought") or ""),
                          "arguments": answer if isinstance(answer, dict) else {}})  # fmt: skip
        elif event_type == "error":
            error = str(entry.get("error") or "")
            nudge = _nudge_step(error, wording, native=native)
            if nudge is not None:
                steps.append(nudge)
            else:
                result = {"reason": "provider_attempt"} if PROVIDER_ATTEMPT.match(error) else None
                steps.append({"kind": Kind.ERROR, "error": error, "result": result})
    return steps


def _task_dirs(path: Path) -> list[Path]:
    if (path / "runs.jsonl").is_file():
        return [path]
    dirs = [path / task for task in TASK_IDS if (path / task / "runs.jsonl").is_file()]
    if not dirs:
        raise InterchangeError(f"{path} holds no runs.jsonl, neither at its top nor in T1 … T6 folders.")
    return dirs


def _read_events(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    try:
        return [event for _, event in iter_jsonl(path)]
    except ScoringInputError as exc:
        raise InterchangeError(str(exc)) from None


@dataclass(frozen=True)
class _Result:
    row: dict
    task_dir: Path


def imported_wording() -> Wording:
    """The wording of nudges in an official runner's run: the official package's, where it is installed."""
    return prompt_set_wording(default_prompt_set())


# What ``run_status.json``'s ``run_config.agent`` records of how the model was called.
_RECORDED_SETTINGS = ("tool_protocol", "temperature", "max_tokens")


def _recorded_settings(path: Path) -> tuple[dict, str]:
    """The decoding settings and prompt set an official runner's output directory records.

    Each task folder's ``run_status.json`` holds ``run_config.agent`` (the agent config without its
    key); the settings are taken when every folder that records them agrees, else left unknown
    (``{}``). The prompt set is ``official`` (the official runner's), unless an export of this
    platform says otherwise.
    """
    found, prompt_sets = [], set()
    for task_dir in _task_dirs(path):
        status_path = task_dir / "run_status.json"
        try:
            status = json.loads(status_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        config = status.get("run_config") if isinstance(status, dict) else None
        agent = config.get("agent") if isinstance(config, dict) else None
        if isinstance(agent, dict):
            found.append({key: agent[key] for key in _RECORDED_SETTINGS if key in agent})
            if agent.get("prompt_set") in PROMPT_SETS:
                prompt_sets.add(agent["prompt_set"])
    settings = found[0] if found and all(entry == found[0] for entry in found) else {}
    return settings, prompt_sets.pop() if len(prompt_sets) == 1 else OFFICIAL


def _read_results(path: Path) -> dict[str, _Result]:
    results: dict[str, _Result] = {}
    for task_dir in _task_dirs(path):
        try:
            rows = read_predictions(task_dir / "runs.jsonl")
        except ScoringInputError as exc:
            raise InterchangeError(str(exc)) from None
        for scenario_id, row in rows.items():
            if scenario_id in results:
                raise InterchangeError(
                    f"scenario {scenario_id} has results in both {results[scenario_id].task_dir} and {task_dir}"
                )
            results[scenario_id] = _Result(dict(row), task_dir)
    return results


def _with_release_id(value: Any, episode: Episode) -> Any:
    """``value`` with the episode's record id replaced by the release's own, in every string.

    The official files name a record by the release's id; ours has its length, so no size a tool
    reported changes.
    """
    ours, theirs = episode.record_id, episode.instance.release_record_id
    if not ours or not theirs or ours == theirs:
        return value
    if isinstance(value, str):
        return value.replace(ours, theirs)
    if isinstance(value, list):
        return [_with_release_id(item, episode) for item in value]
    if isinstance(value, dict):
        return {_with_release_id(key, episode): _with_release_id(item, episode) for key, item in value.items()}
    return value


def _episode(run: Run, instance, row: dict, events: list[dict], record_id: str) -> Episode:
    completed = row.get("status") == "completed"
    usage = row.get("usage") if isinstance(row.get("usage"), dict) else {}
    prediction = row.get("prediction") if isinstance(row.get("prediction"), dict) else None
    times = [moment for moment in (_parse_timestamp(e.get("timestamp")) for e in events) if moment]
    episode = Episode(
        run=run,
        instance=instance,
        record_id=record_id,
        status=Status.COMPLETED if completed else Status.FAILED,
        n_turns=_count(usage.get("turns")) or 0,
        n_tool_calls=_count(usage.get("tool_calls")) or 0,
        prompt_tokens=_count(usage.get("prompt_tokens")) or 0,
        completion_tokens=_count(usage.get("completion_tokens")) or 0,
        reasoning_tokens=_count(usage.get("reasoning_tokens")) or 0,
        wall_time_sec=_number(usage.get("wall_time_sec")),
        started_at=min(times) if times else None,
        finished_at=max(times) if times else None,
    )
    if completed:
        episode.ended_by = EndedBy.FORMAT_FAILURE if usage.get("format_failure") else EndedBy.FINAL_ANSWER
        episode.prediction = prediction or {}
        episode.final_answer = prediction or None
        episode.scores = score_prediction(instance, episode.prediction)
        episode.error_message = str(row.get("error") or "") if usage.get("format_failure") else ""
    else:
        episode.ended_by = EndedBy.PROVIDER_ERROR
        episode.error_kind = Episode.ErrorKind.INFRASTRUCTURE
        episode.error_message = str(row.get("error") or "")
    return episode


@transaction.atomic
def import_official_run(*, path: str | Path, suite: Suite, model: ModelSpec, name: str = "") -> Run:
    """Load an official runner's output directory as a run on ``suite``, all or nothing.

    ``path`` is a task directory (holding ``runs.jsonl`` and ``trajectories/``) or a
    ``run-all`` directory with one such folder per task. Every result must name a scenario
    of ``suite``.
    """
    path = Path(path)
    if not path.is_dir():
        raise InterchangeError(f"{path} is not a directory.")
    results = _read_results(path)
    instances = {
        instance.scenario_id: instance
        for instance in suite.instances.filter(scenario_id__in=list(results)).select_related("task")
    }
    unknown = sorted(set(results) - set(instances))
    if unknown:
        listed = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise InterchangeError(f"{len(unknown)} result(s) name no scenario of suite {suite.name}: {listed}")
    if not results:
        raise InterchangeError(f"{path} holds no results.")

    longest = Run._meta.get_field("name").max_length
    if len(name) > longest:
        raise InterchangeError(f"The run name is {len(name)} characters long; at most {longest} fit.")
    if is_baseline(model.provider_model):
        pricing = Pricing.free()
    else:
        keep_litellm_rates(model)
        pricing = Pricing.for_model(model)
    settings, prompt_set = _recorded_settings(path)
    run = Run.objects.create(
        suite=suite,
        model=model,
        tasks=sorted({instance.task.code for instance in instances.values()}),
        name=name or f"{model.name} (imported from {path.name})"[:longest],
        source=Run.Source.IMPORTED,
        settings=settings,
        prompt_set=prompt_set,
    )
    wording = imported_wording() if prompt_set == OFFICIAL else prompt_set_wording(PLATFORM)
    native = settings.get("tool_protocol") == "native"
    steps = []
    order = sorted(results, key=lambda sid: (instances[sid].task.code, instances[sid].position, instances[sid].pk))
    # The official files name each record by the release's id: the imported episodes keep it (T1
    # scenarios have none, and get an id of their own).
    drawn = dict(zip(order, episode_record_ids([instances[sid] for sid in order])))
    for scenario_id in order:
        result = results[scenario_id]
        events = _read_events(result.task_dir / "trajectories" / f"{scenario_id}.jsonl")
        instance = instances[scenario_id]
        episode = _episode(run, instance, result.row, events, instance.release_record_id or drawn[scenario_id])
        fields = steps_from_events(events, pricing=pricing, wording=wording, native=native)
        episode.cache_read_tokens = sum(step.get("cache_read_tokens") or 0 for step in fields)
        episode.cache_write_tokens = sum(step.get("cache_write_tokens") or 0 for step in fields)
        episode.cost_usd = total_cost([step.get("cost_usd") for step in fields], priced=pricing.is_priced)
        episode.save()
        steps += [Step(episode=episode, index=index, **step) for index, step in enumerate(fields)]
    Step.objects.bulk_create(steps, batch_size=500)

    episodes = run.episodes.all()
    run.status = Status.FAILED if episodes.filter(status=Status.FAILED).exists() else Status.COMPLETED
    starts = [moment for moment in episodes.values_list("started_at", flat=True) if moment]
    ends = [moment for moment in episodes.values_list("finished_at", flat=True) if moment]
    run.started_at = min(starts) if starts else None
    run.finished_at = max(ends) if ends else timezone.now()
    run.save(update_fields=["status", "started_at", "finished_at"])
    db.refresh_totals(run)
    return run
