"""The official runner's results loaded as a run (``source = imported``), scored by our scorer.

One episode per result row (for a scenario retried by the official runner, the latest completed
row), its steps rebuilt from the scenario's trajectory; ``run_status.json`` gives the settings and
prompt set the run was played with where it records them.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmark.models import ModelSpec, Suite
from benchmark.scoring import TASK_IDS
from benchmark.scoring.files import ScoringInputError, iter_jsonl, read_predictions
from benchmark.wording import OFFICIAL, PLATFORM, PROMPT_SETS, Wording
from benchmark.wording import prompt_set as prompt_set_wording
from runs import db, protocol
from runs.agents import is_baseline
from runs.cost import Pricing, TokenUsage, total_cost
from runs.episode.scoring import score_prediction
from runs.interchange.official import ACTIONS, NUDGE_PATTERNS, InterchangeError, imported_wording
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step
from runs.services import episode_record_ids, keep_litellm_rates
from tools_app.views import result_text

Kind = Step.Kind
EndedBy = Episode.EndedBy

# A failed call to the provider as the episode engine words its error step (an export writes it unchanged).
PROVIDER_ATTEMPT = re.compile(r"^provider attempt \d+ failed: ")


def _nudge_step(error: str, wording: Wording, *, native: bool) -> dict | None:
    for pattern, reason in NUDGE_PATTERNS:
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


# What ``run_status.json``'s ``run_config.agent`` records of how the model was called.
_RECORDED_SETTINGS = ("tool_protocol", "temperature", "max_tokens")


def recorded_agent_settings(path: Path) -> list[tuple[dict, str | None]]:
    """Per task folder of an output directory whose ``run_status.json`` records its agent: the decoding
    settings it records (``tool_protocol``, ``temperature``, ``max_tokens``) and its prompt set (None
    when it names none we know)."""
    found = []
    for task_dir in _task_dirs(path):
        status_path = task_dir / "run_status.json"
        try:
            status = json.loads(status_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        config = status.get("run_config") if isinstance(status, dict) else None
        agent = config.get("agent") if isinstance(config, dict) else None
        if isinstance(agent, dict):
            prompt_set = agent.get("prompt_set") if agent.get("prompt_set") in PROMPT_SETS else None
            found.append(({key: agent[key] for key in _RECORDED_SETTINGS if key in agent}, prompt_set))
    return found


def _recorded_settings(path: Path) -> tuple[dict, str]:
    """The decoding settings and prompt set an official runner's output directory records.

    Each task folder's ``run_status.json`` holds ``run_config.agent`` (the agent config without its
    key); the settings are taken when every folder that records them agrees, else left unknown
    (``{}``). The prompt set is ``official`` (the official runner's), unless an export of this
    platform says otherwise.
    """
    found = recorded_agent_settings(path)
    settings = [entry for entry, _ in found]
    prompt_sets = {prompt_set for _, prompt_set in found if prompt_set}
    agreed = settings[0] if settings and all(entry == settings[0] for entry in settings) else {}
    return agreed, prompt_sets.pop() if len(prompt_sets) == 1 else OFFICIAL


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
