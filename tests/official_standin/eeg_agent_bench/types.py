"""Stand-in ``types``: the scenario, observation and action the official prompt set uses."""
import enum
from dataclasses import dataclass, field
from typing import Any


class ActionType(str, enum.Enum):
    TOOL_CALL = "tool_call"
    FINAL_ANSWER = "final_answer"
    MEMORY_UPDATE = "memory_update"


@dataclass
class RecordRef:
    record_id: str
    role: str = "target"
    metadata: dict = field(default_factory=dict)


@dataclass
class AccessConfig:
    allowed_tools: list = field(default_factory=list)


@dataclass
class Scenario:
    scenario_id: str
    task_id: str
    records: list
    input: dict
    access: AccessConfig
    expected_output_schema: dict

    @classmethod
    def from_dict(cls, data: dict) -> "Scenario":
        return cls(
            scenario_id=data["scenario_id"],
            task_id=data["task_id"],
            records=[RecordRef(r["record_id"], r.get("role", "target"), r.get("metadata") or {})
                     for r in data.get("records", [])],
            input=data.get("input", {}),
            access=AccessConfig(list((data.get("access") or {}).get("allowed_tools", []))),
            expected_output_schema=data.get("expected_output_schema", {}),
        )


@dataclass
class AgentAction:
    action_type: ActionType
    memory_content: Any = None


@dataclass
class Observation:
    status: str
    content: Any = None
    tool_call_id: str | None = None
    error: str | None = None

    def to_message(self) -> dict:
        text = str(self.content) if self.content else self.error or ""
        return {"role": "user", "content": f"[Tool Result]\n{text}"}


@dataclass
class ToolSpec:
    name: str
    description: str
    input_schema: dict

    def to_openai_tool(self) -> dict:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.input_schema}}
