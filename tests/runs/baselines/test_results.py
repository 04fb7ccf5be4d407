"""A baseline reads each tool's result back from the very text a model reads, under both prompt sets."""
import json

import pytest

from benchmark.wording import OFFICIAL, PLATFORM, TOOL_RESULT_PREFIX, prompt_set
from runs.baselines.results import UnreadableResult, read_tool_result
from tests.datafiles import SLEEP_EDFX
from tools_app import TOOL_NAMES, call_tool
from tools_app.budget import with_true_lengths
from tools_app.views import model_view

RECORD = SLEEP_EDFX / "short_psg.edf"  # a real Sleep-EDF crop: seven channels, rates and units of their own
RECORD_ID = "EEG_0042"

CALLS = [
    *((name, {}) for name in TOOL_NAMES),
    ("compute_windowed_features", {"channels": ["EEG Fpz-Cz", "EMG submental"], "window_sec": 30,
                                   "features": ["rms_uv", "delta_relative", "slow_fast_ratio"]}),
    ("compute_windowed_features", {"window_sec": 1, "features": ["rms_uv", "kurtosis"]}),  # over the budget
    ("compute_psd", {"channels": ["Cz"]}),  # no such channel
]


def shown(tool_name, content, prompt_set_name):
    """The text the model reads of ``content`` under the prompt set, without the text protocol's prefix."""
    text = prompt_set(prompt_set_name).tool_result(tool_name, content, "", native=False)
    assert text.startswith(TOOL_RESULT_PREFIX)
    return text.removeprefix(TOOL_RESULT_PREFIX)


def as_data(tool_name, content, prompt_set_name):
    """What the model was shown, as plain data: the official object, its named constant as the number
    (under the platform set, a windowed refusal's text gives the record's length beside the range's)."""
    if prompt_set_name == PLATFORM:
        content = with_true_lengths(content)
    return json.loads(json.dumps(model_view(tool_name, content)))


@pytest.mark.parametrize(("tool_name", "arguments"), CALLS)
def test_every_tool_result_reads_back_as_the_platform_shows_it(tool_name, arguments):
    content = call_tool(RECORD, tool_name, {"record_id": RECORD_ID, **arguments}, record_id=RECORD_ID)
    assert read_tool_result(shown(tool_name, content, PLATFORM)) == as_data(tool_name, content, PLATFORM)


@pytest.mark.parametrize(("tool_name", "arguments"), CALLS)
def test_every_tool_result_reads_back_as_the_official_runner_shows_it(official_standin, tool_name, arguments):
    content = call_tool(RECORD, tool_name, {"record_id": RECORD_ID, **arguments}, record_id=RECORD_ID)
    read = read_tool_result(shown(tool_name, content, OFFICIAL))
    expected = as_data(tool_name, content, OFFICIAL)
    if content.get("applicable") is False:  # the official set words the reason itself, and sizes it again
        read, expected = ({key: value for key, value in data.items() if key not in ("reason", "_meta")}
                          for data in (read, expected))  # fmt: skip
    assert read == expected


def test_the_recording_info_the_heuristic_lost_reads_with_its_reference_flag():
    content = call_tool(RECORD, "get_recording_info", {"record_id": RECORD_ID}, record_id=RECORD_ID)
    text = shown("get_recording_info", content, PLATFORM)
    assert "'reference': 0 (FIFFV_MNE_CUSTOM_REF_OFF)" in text  # no Python literal: literal_eval refuses it
    info = read_tool_result(text)
    assert info["reference"] == 0 and info["duration_sec"] == content["duration_sec"] > 0
    assert info["channel_names"][0] == "EEG Fpz-Cz"


def test_the_budget_refusal_keeps_the_numbers_to_rescope_by():
    arguments = {"record_id": RECORD_ID, "window_sec": 1, "features": ["rms_uv", "kurtosis"]}
    content = call_tool(RECORD, "compute_windowed_features", arguments, record_id=RECORD_ID)
    refusal = read_tool_result(shown("compute_windowed_features", content, PLATFORM))
    assert refusal["error"].startswith("Output too large")
    assert refusal["estimated_tokens"] > refusal["budget_tokens"] == 8000 and refusal["n_windows"] == 300
    assert "error_code" not in refusal  # as the official object: our code is kept in the stored result only


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ("{'reference': 1 (FIFFV_MNE_CUSTOM_REF_ON), 'x': -0.5, 'y': +2, 'z': None, 't': (1, 2)}",
         {"reference": 1, "x": -0.5, "y": 2, "z": None, "t": [1, 2]}),
        ("{'big': 1e+16, 'flag': True, 'name': 'T8-P8-1', 'rows': [{'a': 'it\\'s'}]}",
         {"big": 1e16, "flag": True, "name": "T8-P8-1", "rows": [{"a": "it's"}]}),
        ("Tool 'compute_psd' is not allowed for this scenario.",
         {"error": "Tool 'compute_psd' is not allowed for this scenario."}),
    ],
)
def test_reads_the_official_forms(text, data):
    assert read_tool_result(text) == data


@pytest.mark.parametrize(
    "text",
    [
        "{'a': 1",  # cut short
        "{'a': np.float64(1.5)}",  # a numpy scalar's repr
        "{'a': nan}",
        "{'a': 1 (NOT_AN_MNE_CONSTANT)}",
        "{'a': 1 (FIFFV_X, 2)}",
        "{'a': len('x')}",
        "{**{'a': 1}}",
        "{'a': {1, 2}}",
        "{('a', 'b'): 1}",
        "{'a': b'raw'}",
        "{'a': -'x'}",
    ],
)
def test_refuses_any_other_form_loudly(text):
    with pytest.raises(UnreadableResult):
        read_tool_result(text)
