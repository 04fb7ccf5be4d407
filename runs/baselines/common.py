"""What both baselines share: a local agent that writes text actions and reads tool results back."""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from runs.baselines.results import read_tool_result
from runs.cost import Pricing, TokenUsage
from runs.model.reply import Reply
from runs.protocol import TOOL_RESULT_PREFIX


def stable_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def duration_of(instance: dict) -> float:
    return float(instance.get("duration_sec") or (instance.get("metadata") or {}).get("duration_sec") or 0)


def epoch_count(instance: dict) -> int:
    metadata = instance.get("metadata") or {}
    count = instance.get("n_epochs") or metadata.get("n_epochs_total")
    if count:
        return int(count)
    return max(1, int(duration_of(instance) // 30))


def hypnogram_answer(stages: list[str]) -> dict:
    """A T6 final answer for per-epoch ``stages``: the run-length encoding and the night's architecture."""
    segments = []
    for epoch, stage in enumerate(stages):
        if segments and segments[-1]["stage"] == stage:
            segments[-1]["end_epoch"] = epoch
        else:
            segments.append({"start_epoch": epoch, "end_epoch": epoch, "stage": stage})
    n = len(stages)
    return {
        "action": "final_answer",
        "hypnogram_rle": segments,
        "architecture": {
            "REM_pct": round(stages.count("REM") / n, 4),
            "N3_pct": round(stages.count("N3") / n, 4),
            "sleep_efficiency": round(sum(stage != "W" for stage in stages) / n, 4),
        },
    }


class BaselineAgent:
    """A local agent that writes text-protocol actions; it costs nothing and uses no tokens."""

    protocol = "text"
    pricing = Pricing.free()

    def __init__(self, instance: dict):
        self.instance = instance
        self.task = instance["task"]
        self.record_id = instance["record_id"]
        self._read: dict[str, Any] = {}  # each result is read once, not again at every later turn

    def next_action(self, results: list[Any]) -> dict:
        raise NotImplementedError

    def respond(self, messages: list[dict], *, tools: list[dict] | None = None) -> Reply:
        started = time.monotonic()
        results = [
            self._result(message["content"].removeprefix(TOOL_RESULT_PREFIX))
            for message in messages[2:]
            if message.get("role") == "user" and str(message.get("content")).startswith(TOOL_RESULT_PREFIX)
        ]
        action = self.next_action(results)
        return Reply(
            content=json.dumps(action, ensure_ascii=False),
            cost_usd=self.pricing.call_cost(TokenUsage()),
            latency_ms=(time.monotonic() - started) * 1000,
            finish_reason="stop",
        )

    def _result(self, text: str) -> Any:
        if text not in self._read:
            self._read[text] = read_tool_result(text)
        return self._read[text]
