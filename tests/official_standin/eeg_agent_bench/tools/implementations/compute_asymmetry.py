"""Stand-in asymmetry tool, whose not-applicable answer has a reason of its own."""
from eeg_agent_bench.types import ToolSpec


class ComputeAsymmetryTool:
    @property
    def spec(self):
        return ToolSpec(name="compute_asymmetry", description="Stand-in description of compute_asymmetry.",
                        input_schema={"type": "object", "properties": {"record_id": {"type": "string"}},
                                      "required": ["record_id"]})

    def execute(self, arguments, context):
        return {"record_id": arguments["record_id"], "applicable": False, "pairs": [],
                "reason": "Stand-in reason: no left/right pairs."}
