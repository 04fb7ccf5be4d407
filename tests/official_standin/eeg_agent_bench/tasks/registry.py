"""Stand-in ``tasks.registry``: every task builds two messages of made-up text."""
from dataclasses import dataclass


class _Task:
    def __init__(self, code):
        self.code = code

    def build_messages(self, scenario, tool_specs):
        names = ",".join(spec["function"]["name"] for spec in tool_specs)
        record = scenario.records[0].record_id if scenario.records else "none"
        question = scenario.input.get("question", "no question")
        return [
            {"role": "system", "content": f"Stand-in system prompt of {self.code}; tools: {names or 'none'}."},
            {"role": "user", "content": f"Stand-in user prompt. Record ID**: `{record}`. {question}"},
        ]


@dataclass
class TaskBundle:
    task: _Task


def get_task_bundle(task_id):
    return TaskBundle(_Task(task_id))
