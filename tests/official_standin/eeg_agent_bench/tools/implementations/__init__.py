"""Stand-in tool classes: the ten official names, each with a made-up description."""
from eeg_agent_bench.tools.implementations.compute_asymmetry import ComputeAsymmetryTool
from eeg_agent_bench.types import ToolSpec

NAMES = ["get_recording_info", "get_channel_list", "compute_noise_metrics", "compute_psd", "compute_band_power",
         "detect_transients", "compute_temporal_features", "compute_windowed_features", "compute_channel_correlation"]


def _tool(name):
    class Tool:
        @property
        def spec(self):
            return ToolSpec(name=name, description=f"Stand-in description of {name}.",
                            input_schema={"type": "object", "properties": {"record_id": {"type": "string"}},
                                          "required": ["record_id"]})
    return Tool


ALL_TOOLS = [*(_tool(name) for name in NAMES[:7]), ComputeAsymmetryTool, *(_tool(name) for name in NAMES[7:])]
