"""Stand-in runner: its nudges, its tool-message helper and the loop with its two stub texts."""

_EMPTY_ANSWER_NUDGE = "Stand-in empty-turn nudge."
_TEXT_ACTION_NUDGE = "Stand-in invalid-action nudge."
_TOOL_BUDGET_NUDGE = "Stand-in tool-budget nudge."


def _repair_nudge(use_native, errors=None):
    if errors:
        return f"Stand-in repair ({'native' if use_native else 'text'}): {'; '.join(errors[:6])}."
    return _EMPTY_ANSWER_NUDGE if use_native else _TEXT_ACTION_NUDGE


def _native_tool_messages(obs):
    return [{"role": "tool", "tool_call_id": obs.tool_call_id,
             "content": str(obs.content) if obs.content else (obs.error or "")}]


def run_scenario(history, calls, budget_left):
    for call in calls:
        if budget_left <= 0:
            history.append({"role": "tool", "content": "[Tool not executed: stand-in total budget spent.]"})
        else:
            history.append({"role": "tool", "content": "[Tool not executed: stand-in turn limit.]"})
    return history
