"""Stand-in tool environment: the memory acknowledgement."""
from eeg_agent_bench.types import Observation


class ToolEnvironment:
    def __init__(self, tool_registry):
        self._registry = tool_registry

    def update_memory(self, action):
        return Observation(status="ok", content={"note": "Stand-in memory kept.", "content": action.memory_content})
