"""Stand-in ``tools.registry``."""


class ToolRegistry:
    def __init__(self):
        self._specs = {}

    def register(self, tool):
        self._specs[tool.spec.name] = tool.spec

    def list_for_scenario(self, scenario):
        return [self._specs[name].to_openai_tool() for name in scenario.access.allowed_tools if name in self._specs]
