"""``manage.py call_tool`` and ``manage.py list_tools``."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.datafiles import BONN, SLEEP_EDFX
from tools_app import TOOL_NAMES

SLEEP_CROP = SLEEP_EDFX / "short_psg.edf"
BONN_Z001 = BONN / "Z" / "Z001.txt"


def _output(*args, **options):
    out = io.StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


def test_call_tool_prints_the_result():
    printed = _output("call_tool", str(SLEEP_CROP), "compute_band_power", "--args",
                      '{"channels": ["EEG Fpz-Cz"], "tmin": 0, "tmax": 30}', "--record-id", "night-1")
    result = json.loads(printed)
    assert next(iter(result)) == "_meta" and result["record_id"] == "night-1"
    assert result["channels"][0]["channel"] == "EEG Fpz-Cz"


def test_call_tool_prints_error_objects_without_the_path():
    result = json.loads(_output("call_tool", str(SLEEP_CROP), "compute_psd", "--args", '{"record_id": "other"}',
                                "--record-id", "night-1"))
    assert result["error_code"] == "unknown_record" and "short_psg" not in result["error"]


def test_call_tool_passes_metadata_and_defaults_the_record_id():
    result = json.loads(_output("call_tool", str(BONN_Z001), "get_recording_info", "--metadata",
                                '{"sampling_rate": 173.61, "channel_names": ["Cz"]}', "--indent", "0"))
    assert result["record_id"] == "record" and result["channel_names"] == ["Cz"] and result["sampling_rate"] == 173.6


@pytest.mark.parametrize("bad", ["{nope", "[1, 2]"])
def test_call_tool_rejects_malformed_json(bad):
    with pytest.raises(CommandError, match="--args"):
        call_command("call_tool", "x.edf", "compute_psd", "--args", bad)


def test_list_tools_prints_schemas_and_the_text_reference():
    schemas_text, reference = _output("list_tools").split("\n\n## Available Tools", 1)
    assert [schema["function"]["name"] for schema in json.loads(schemas_text)] == list(TOOL_NAMES)
    assert "### Windowed / Time-Series Analysis" in reference
    assert json.loads(_output("list_tools", "--format", "json"))[0]["function"]["name"] == "get_recording_info"
    assert _output("list_tools", "--format", "text").startswith("## Available Tools")
