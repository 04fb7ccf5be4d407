"""The platform prompt set: our own wording of every text an episode sends a model.

It says the same facts as the official texts, no more and no fewer: the prompts are
:mod:`benchmark.prompts`, the tools' descriptions come from the tool registry
(:mod:`tools_app.registry`), and the nudges and stubs are below. Where the official runner sends a
format rather than prose (the ``[Tool Result]`` prefix, a result's repr), this set sends the same,
except where that format misstates a fact: the official windowed refusal calls the requested range's
length the record's, and this set gives both (:func:`tools_app.budget.with_true_lengths`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.wording import MAX_ERRORS_SHOWN, PLATFORM, SUBMIT_TOOL_NAME, TOOL_RESULT_PREFIX, Wording

INVALID_TEXT_ACTION_NUDGE = (
    "I could not find an action in your last message. Reply with exactly one JSON action: either a "
    'tool call, {"action": "tool_call", "tool_name": "<one of the available tools>", "arguments": {...}}, '
    'or your final answer, {"action": "final_answer", ...} with every field the output schema requires. '
    "Do not send tool arguments on their own, and do not send an empty message."
)
EMPTY_NATIVE_TURN_NUDGE = (
    "Your last turn had no text and no tool call. If you have finished the analysis, call "
    "`submit_final_answer` now with every field the output schema requires; if not, call the analysis "
    "tool that gets you the evidence you still need."
)
TOOL_BUDGET_NUDGE = (
    "You have used up your tool calls: no further tool will run. Give your final answer now, with every "
    "field the output schema requires."
)
PER_TURN_STUB = "[Tool not executed: at most 3 tool calls run per turn.]"
BUDGET_STUB = "[Tool not executed: the tool-call budget is used up.]"
SUBMIT_DESCRIPTION = (
    "Finish the task: call this once, when your analysis is done, with every required field of the answer."
)


class PlatformWording(Wording):
    name = PLATFORM

    def tool_specs(self, instance) -> list[dict]:
        from tools_app.registry import function_schemas

        allowed = _allowed_tools(instance)
        by_name = {spec["function"]["name"]: spec for spec in function_schemas()}
        return [by_name[name] for name in allowed if name in by_name]

    def opening(self, instance, *, record_id: str, tool_specs: Sequence[Mapping[str, Any]]) -> list[dict]:
        from benchmark.prompts import build_messages

        return build_messages(instance, tool_specs=tool_specs, record_id=record_id)

    def submit_tool(self, output_schema: dict | None) -> dict:
        if isinstance(output_schema, dict) and output_schema.get("properties"):
            parameters = output_schema
        else:  # a single answer string, as the official adapter falls back to
            parameters = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        return {
            "type": "function",
            "function": {"name": SUBMIT_TOOL_NAME, "description": SUBMIT_DESCRIPTION, "parameters": parameters},
        }

    def repair_nudge(self, errors: Sequence[str], *, native: bool) -> str:
        listed = "; ".join(list(errors)[:MAX_ERRORS_SHOWN])
        if native:
            return (
                f"Your final answer does not match the output schema: {listed}. Call `submit_final_answer` "
                "again with every required field, each of the right type."
            )
        return (
            f"Your final answer does not match the output schema: {listed}. Reply with one corrected JSON "
            'object, {"action": "final_answer", ...}, that has every required field.'
        )

    def invalid_action_nudge(self, *, native: bool) -> str:
        return EMPTY_NATIVE_TURN_NUDGE if native else INVALID_TEXT_ACTION_NUDGE

    def empty_answer_nudge(self) -> str:
        return EMPTY_NATIVE_TURN_NUDGE

    def tool_budget_nudge(self) -> str:
        return TOOL_BUDGET_NUDGE

    def per_turn_stub(self) -> str:
        return PER_TURN_STUB

    def budget_stub(self) -> str:
        return BUDGET_STUB

    def tool_result(self, tool_name: str, content: Any, error: str, *, native: bool) -> str:
        from tools_app.budget import with_true_lengths
        from tools_app.views import result_text

        # The official windowed refusal calls the requested range's length the record's: this set gives both.
        text = result_text(tool_name, with_true_lengths(content), error)
        return text if native else TOOL_RESULT_PREFIX + text

    def memory_acknowledgement(self, memory: Any) -> str:
        return TOOL_RESULT_PREFIX + str({"message": "Memory stored.", "content": memory})


def _allowed_tools(instance) -> tuple[str, ...]:
    """The tools ``instance`` allows: none for T1, else its scenario's list (all ten when it names none)."""
    from tools_app.registry import TOOL_NAMES

    if instance.task.code == "T1":
        return ()
    return tuple(instance.allowed_tools or TOOL_NAMES)
