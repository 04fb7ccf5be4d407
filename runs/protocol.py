"""The episode protocol as pure functions: reading a model's turn as an action, and checking a final answer.

A turn is read as the official runner reads it (528why/EEGAgentBenchmark,
``agents/adapters/openai_compatible.py`` and ``runners/run_scenario.py``), so that a model
behaves here as it does there:

- **Text protocol** (``parse_text_action``), in this order: ``<tool_call><function=…>
  <parameter=…>`` tags (every tagged call); else the first JSON value found in the reply,
  trying the whole reply, then the first ```` ``` ```` fence, then the first balanced
  ``{…}``. A top-level array yields its tool-call items, or else stands for its first
  object. An object is a tool call when ``action`` is ``"tool_call"`` (the tool name may
  also sit inside ``arguments``), a memory update when it is ``"memory_update"``, a final
  answer when it is ``"final_answer"`` *or* the object has a ``classification`` key, and a
  tool call again when the reply carries a tool-call marker and the object names a tool.
  Anything else is invalid. A ``thought`` key is removed from the object and kept apart.
- **Native protocol** (``parse_native_action``): the provider's ``tool_calls``; a call of
  ``submit_final_answer`` makes the turn a final answer whose arguments are the answer;
  a turn without tool calls is read as text.

``final_answer_errors`` is the official check of a final answer: a small JSON-Schema subset
(type, enum, minimum, maximum, required, nested properties and items) and, for T6, a
hypnogram that runs contiguously from epoch 0 to the last epoch. What the loop says to the
model (nudges, stubs, tool results) is the run's prompt set's (``benchmark.wording``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmark.wording import MAX_ERRORS_SHOWN, SUBMIT_TOOL_NAME, TOOL_RESULT_PREFIX  # noqa: F401  (used through this module)

ActionKind = Literal["tool_call", "final_answer", "memory_update", "invalid"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a turn: the id the result must quote (native protocol), the tool and its arguments."""

    id: str
    name: str
    arguments: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Action:
    """What a model's turn asks for.

    Attributes
    ----------
    kind : {"tool_call", "final_answer", "memory_update", "invalid"}
    thought : str
        The turn's free text around the action (or its ``thought`` key).
    tool_calls : tuple of ToolCall
        For ``tool_call``: every call of the turn, in order (the loop runs at most three).
    final_answer : dict or None
        For ``final_answer``: the answer object as given (an ``action`` key included).
    memory : object
        For ``memory_update``: what the model asked to remember.
    """

    kind: ActionKind
    thought: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    final_answer: dict | None = None
    memory: Any = None


# ── text protocol ────────────────────────────────────────────────────────────────────────────

_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)\n?\s*```", re.DOTALL)
_TAGGED_BLOCK = re.compile(
    r"<\|?tool_call(?:_begin)?\|?>(.*?)</?\|?tool_call(?:_end)?\|?>|<tool_call>(.*?)</tool_call>",
    re.IGNORECASE | re.DOTALL,
)
_TAGGED_FUNCTION = re.compile(r"<function=([A-Za-z_][\w.-]*)>", re.IGNORECASE)
_TAGGED_PARAMETER = re.compile(r"<parameter=([A-Za-z_][\w.-]*)>(.*?)</parameter>", re.IGNORECASE | re.DOTALL)
_TOOL_MARKER = re.compile(r"<\|?tool_call(?:_begin)?\|?>|</?tool_call>|\[TOOL_CALLS\]", re.IGNORECASE)


def _call_id(prefix: str, index: int) -> str:
    return f"{prefix}{index}"


def _tagged_value(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _tagged_calls(content: str) -> list[tuple[str, dict]]:
    calls = []
    for match in _TAGGED_BLOCK.finditer(content):
        block = match.group(1) if match.group(1) is not None else match.group(2) or ""
        function = _TAGGED_FUNCTION.search(block)
        if function:
            arguments = {m.group(1): _tagged_value(m.group(2)) for m in _TAGGED_PARAMETER.finditer(block)}
            calls.append((function.group(1), arguments))
    return calls


def _pop_thought(value: Any, outside: str) -> tuple[Any, str]:
    """Remove a ``thought`` key from an object; the text outside the JSON wins when there is any."""
    if isinstance(value, dict):
        inner = value.pop("thought", "")
        if not outside and inner:
            return value, inner
    return value, outside


def _first_json(content: str) -> tuple[Any, str] | None:
    """The first JSON value of a reply and the text around it, or None when there is none.

    Tried in order: the whole reply, the first fence, the first balanced ``{…}`` (braces are
    counted without regard to strings, and only that first candidate is tried).
    """
    text = content.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        pass
    else:
        return _pop_thought(value, "") if isinstance(value, dict) else (value, "")

    fence = _FENCE.search(text)
    if fence:
        try:
            value = json.loads(fence.group(1).strip())
        except json.JSONDecodeError:
            pass
        else:
            return _pop_thought(value, (text[: fence.start()] + text[fence.end() :]).strip())

    start = text.find("{")
    if start >= 0:
        depth = 0
        for position in range(start, len(text)):
            if text[position] == "{":
                depth += 1
            elif text[position] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start : position + 1])
                    except json.JSONDecodeError:
                        return None
                    return _pop_thought(value, (text[:start] + text[position + 1 :]).strip())
    return None


def _array_action(items: list, thought: str, id_prefix: str) -> Action | dict | None:
    """A top-level array: its tool calls, else its first object (to be read as one), else None."""
    calls = []
    for item in items:
        if not isinstance(item, dict):
            continue
        name = item.get("tool_name") or item.get("name")
        if name:
            arguments = item.get("arguments", {})
            arguments = arguments if isinstance(arguments, dict) else {}
            calls.append(ToolCall(_call_id(id_prefix, len(calls)), name, arguments))
    if calls:
        return Action("tool_call", thought=thought, tool_calls=tuple(calls))
    return next((item for item in items if isinstance(item, dict)), None)


def _single_call(name: str, arguments: dict, thought: str, id_prefix: str) -> Action:
    call = ToolCall(_call_id(id_prefix, 0), name, arguments)
    return Action("tool_call", thought=thought, tool_calls=(call,))


def _object_action(value: dict, thought: str, content: str, id_prefix: str) -> Action:
    kind = value.get("action", "")
    if kind == "tool_call":
        arguments = value.get("arguments", {})
        if not isinstance(arguments, dict):
            arguments = {}
        name = value.get("tool_name", "") or arguments.pop("tool_name", "")
        if not name:
            return Action("invalid", thought=thought or content)
        return _single_call(name, arguments, thought, id_prefix)
    if kind == "memory_update":
        return Action("memory_update", thought=thought, memory=value.get("memory", value.get("content", "")))
    if kind == "final_answer" or "classification" in value:
        return Action("final_answer", thought=thought, final_answer=value)
    if _TOOL_MARKER.search(content):
        # A marker-wrapped object naming a tool, with its arguments inline or under "arguments".
        arguments = value.get("arguments") if isinstance(value.get("arguments"), dict) else value
        name = value.get("tool_name") or value.get("name")
        if not name:
            name = arguments.get("tool_name") or arguments.get("name")
            arguments = {k: v for k, v in arguments.items() if k not in ("tool_name", "name")}
        if name:
            return _single_call(str(name), arguments, thought, id_prefix)
    return Action("invalid", thought=thought or content)


def parse_text_action(content: str | None, *, id_prefix: str = "call_") -> Action:
    """Read a text-protocol turn as an action, the way the official parser does.

    Parameters
    ----------
    content : str or None
        The model's visible reply.
    id_prefix : str
        Tool calls found in text get the ids ``{id_prefix}0``, ``{id_prefix}1``, …
    """
    content = content or ""
    tagged = _tagged_calls(content)
    if tagged:
        calls = tuple(ToolCall(_call_id(id_prefix, i), name, args) for i, (name, args) in enumerate(tagged))
        return Action("tool_call", tool_calls=calls)

    found = _first_json(content)
    if found is None:
        return Action("invalid", thought=content.strip())
    value, thought = found
    if isinstance(value, list):
        value = _array_action(value, thought, id_prefix)
        if isinstance(value, Action):
            return value
    if not isinstance(value, dict):
        return Action("invalid", thought=thought or content)
    return _object_action(value, thought, content, id_prefix)


# ── native protocol ──────────────────────────────────────────────────────────────────────────


def parse_native_action(content: str | None, tool_calls, *, id_prefix: str = "call_") -> Action:
    """Read a native-protocol turn: its ``tool_calls`` first, its text when it has none.

    Parameters
    ----------
    content : str or None
        The visible reply.
    tool_calls : sequence of (id, name, arguments_json)
        The provider's tool calls; arguments that are not a JSON object count as ``{}``.
    """
    calls = []
    for call_id, name, raw_arguments in tool_calls or ():
        try:
            arguments = json.loads(raw_arguments) if raw_arguments else {}
        except (json.JSONDecodeError, TypeError):
            arguments = {}
        if not isinstance(arguments, dict):
            arguments = {}
        if name == SUBMIT_TOOL_NAME:
            # The official runner stops at the first submission; calls listed before it are dropped.
            return Action("final_answer", thought=content or "", final_answer=arguments)
        calls.append(ToolCall(call_id or _call_id(id_prefix, len(calls)), name or "", arguments))
    if calls:
        return Action("tool_call", thought=content or "", tool_calls=tuple(calls))
    return parse_text_action(content, id_prefix=id_prefix)


# ── final-answer validation ──────────────────────────────────────────────────────────────────

_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def schema_errors(value: Any, schema: Any, path: str = "$") -> list[str]:
    """Errors of ``value`` against the official JSON-Schema subset, each prefixed by its JSON path.

    The error strings are the official runner's: the repair nudge shows them to the model, so
    they say exactly as much (no value, no list of allowed values) as the paper's runs saw.

    A value of the wrong type gets that one error and is not looked into further. Unknown
    keywords and unknown types are ignored, and so are properties the schema does not name.
    """
    if not isinstance(schema, dict):
        return []
    expected = schema.get("type")
    check = _TYPE_CHECKS.get(expected)
    if check is not None and not check(value):
        return [f"{path}: expected {expected}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: value is not in enum")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above maximum")
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", []) if key not in value]
        errors += [f"{path}.{key}: required field missing" for key in missing]
        for key, child in (schema.get("properties") or {}).items():
            if key in value:
                errors += schema_errors(value[key], child, f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{index}]")
    return errors


def hypnogram_errors(answer: dict, n_epochs: int | None) -> list[str]:
    """The T6 coverage check: segments run 0, 1, … without gap or overlap up to ``n_epochs - 1``.

    As in the official runner, segments that are not objects or whose bounds are not
    integers are passed over here (the scorer deals with them), and the end of the night is
    checked only when ``n_epochs`` is known.
    """
    segments = answer.get("hypnogram_rle")
    if not isinstance(segments, list) or not segments:
        return ["$.hypnogram_rle: must contain at least one segment"]
    errors = []
    next_start = 0
    for index, segment in enumerate(segments):
        if not isinstance(segment, dict):
            continue
        start, end = segment.get("start_epoch"), segment.get("end_epoch")
        if not isinstance(start, int) or not isinstance(end, int):
            continue
        if start != next_start:
            errors.append(f"$.hypnogram_rle[{index}]: expected start_epoch {next_start}, got {start}")
        if end < start:
            errors.append(f"$.hypnogram_rle[{index}]: end_epoch precedes start_epoch")
        next_start = end + 1
    if isinstance(n_epochs, int) and next_start != n_epochs:
        errors.append(f"$.hypnogram_rle: must cover epochs 0..{n_epochs - 1}; ended at {next_start - 1}")
    return errors


def final_answer_errors(
    answer: Any, schema: dict | None, *, task: str = "", n_epochs: int | None = None
) -> list[str]:
    """Everything wrong with a final answer; an empty list means it is accepted.

    Parameters
    ----------
    answer : object
        The final answer as given.
    schema : dict or None
        The task's output schema.
    task : str
        The task code; ``"T6"`` adds the hypnogram coverage check (only once the schema passes).
    n_epochs : int, optional
        T6: the night's number of 30-s epochs.
    """
    if not isinstance(answer, dict):
        return ["$: final answer must be a JSON object"]
    errors = schema_errors(answer, schema or {})
    if not errors and task == "T6":
        errors = hypnogram_errors(answer, n_epochs)
    return errors


def is_empty_answer(answer: dict | None) -> bool:
    """True when a final answer carries nothing (``{}``, or only an empty ``raw_response``)."""
    if not answer:
        return True
    if set(answer) <= {"raw_response", "parse_error"}:
        return not str(answer.get("raw_response") or "").strip()
    return False


# ── what the environment says back ───────────────────────────────────────────────────────────

# How an episode that ends without a valid answer is logged: the official runner's messages,
# which the official trajectory files and runs.jsonl ``error`` carry.
ACTION_NOT_RECOGNISED = "Action type not recognised."
NO_PARSEABLE_ACTION = "protocol recovery exhausted: no parseable action"
SCHEMA_RECOVERY_EXHAUSTED = "protocol recovery exhausted: final answer failed schema: "
TOOL_BUDGET_EXHAUSTED = "tool budget exhausted before a valid final answer"
MAX_TURNS_EXCEEDED = "max turns exceeded before a valid final answer"


def arguments_json(arguments: dict) -> str:
    """Tool-call arguments as the native protocol sends them back in the assistant message."""
    return json.dumps(arguments, ensure_ascii=False)
