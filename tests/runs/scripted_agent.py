"""A text-protocol agent that replies with scripted actions, and the actions the tests script."""
import json

from runs.cost import Pricing, TokenUsage
from runs.model.reply import Reply


class ScriptedAgent:
    """A text-protocol agent that replies with the given actions in turn and calls ``hook`` before each."""

    protocol = "text"
    pricing = Pricing.free()

    def __init__(self, actions, hook=lambda turn: None):
        self.actions = list(actions)
        self.hook = hook
        self.turn = 0

    def respond(self, messages, *, tools=None):
        self.hook(self.turn)
        action = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        return Reply(content=json.dumps(action), usage=TokenUsage(10, 5), cost_usd=None, finish_reason="stop")


TOOL_CALL = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": "rec-t2-7f3a"}}
T2_ANSWER = {"action": "final_answer", "classification": "clean", "findings": []}
