"""The registry: schemas and text reference generated from signatures and docstrings."""
import json
import typing

import pytest

from tools_app import CATEGORIES, TOOL_NAMES, function_schemas, text_reference, tool_specs
from tools_app.errors import ErrorCode, ToolError
from tools_app.registry import REGISTRY, Choices, tool


def test_the_ten_tools_are_registered_in_the_official_order():
    assert [spec.name for spec in tool_specs()] == list(TOOL_NAMES)
    assert len(TOOL_NAMES) == 10
    assert {spec.name: spec.version for spec in tool_specs() if spec.version != "0.1.0"} == {"detect_transients": "0.2.0"}


def test_tools_fall_into_the_official_six_categories():
    by_category = {category: [spec.name for spec in tool_specs() if spec.category == category] for category in CATEGORIES}
    assert by_category == {
        "Data Overview": ["get_recording_info", "get_channel_list"],
        "Noise Metrics": ["compute_noise_metrics"],
        "Spectral Analysis": ["compute_psd", "compute_band_power"],
        "Transient Detection": ["detect_transients"],
        "Temporal & Spatial Features": ["compute_temporal_features", "compute_asymmetry", "compute_channel_correlation"],
        "Windowed / Time-Series Analysis": ["compute_windowed_features"],
    }


OFFICIAL_ARGUMENTS = {
    "get_recording_info": {},
    "get_channel_list": {},
    "compute_noise_metrics": {"channels": None, "line_freq": 50},
    "compute_psd": {"channels": None, "tmin": None, "tmax": None, "method": "welch", "fmin": 0.5, "fmax": 45},
    "compute_band_power": {"channels": None, "tmin": None, "tmax": None},
    "detect_transients": {"channels": None, "tmin": None, "tmax": None, "min_amplitude_uv": 70,
                          "max_candidates_per_channel": 20},
    "compute_temporal_features": {"channels": None, "tmin": None, "tmax": None},
    "compute_asymmetry": {"feature": "all", "tmin": None, "tmax": None},
    "compute_channel_correlation": {"channels": None, "tmin": None, "tmax": None},
    # window_sec defaults to 5 s, which the official schema does not advertise (its description says it)
    "compute_windowed_features": {"channels": None, "features": None, "window_sec": None, "step_sec": None,
                                  "tmin": None, "tmax": None},
}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_each_schema_has_the_official_arguments_and_defaults(name):
    schema = REGISTRY[name].json_schema()
    assert schema["required"] == ["record_id"]
    properties = schema["properties"]
    assert list(properties) == ["record_id", *OFFICIAL_ARGUMENTS[name]]
    for argument, default in OFFICIAL_ARGUMENTS[name].items():
        assert properties[argument].get("default") == default
        assert properties[argument]["description"]
    assert properties["record_id"] == {"type": "string", "description": "Identifier of the EEG record."}


def test_schema_types_follow_the_annotations():
    psd = REGISTRY["compute_psd"].json_schema()["properties"]
    assert psd["channels"]["type"] == "array" and psd["channels"]["items"] == {"type": "string"}
    assert psd["tmin"]["type"] == "number" and psd["method"]["enum"] == ["welch", "multitaper"]
    assert REGISTRY["detect_transients"].json_schema()["properties"]["max_candidates_per_channel"]["type"] == "integer"
    assert REGISTRY["compute_asymmetry"].json_schema()["properties"]["feature"]["enum"] == ["band_power", "amplitude", "all"]


def test_function_schemas_are_the_openai_format_and_json():
    schemas = function_schemas()
    assert [schema["function"]["name"] for schema in schemas] == list(TOOL_NAMES)
    assert all(schema["type"] == "function" and schema["function"]["description"] for schema in schemas)
    assert json.loads(json.dumps(schemas)) == schemas
    assert "Parameters" not in schemas[3]["function"]["description"]


def test_the_text_reference_lists_every_tool_under_its_category_with_a_calling_example():
    text = text_reference()
    assert text.startswith("## Available Tools\nYou have access to **10** EEG analysis tools.")
    positions = [text.index(f"### {category}\n") for category in CATEGORIES]
    assert positions == sorted(positions)
    for name in TOOL_NAMES:
        assert f"**`{name}`** — " in text
    assert ("    - `method` (string, one of ['welch', 'multitaper'], optional, default=\"welch\") — "
            "How the PSD is estimated.") in text
    assert "    - `record_id` (string, required) — Identifier of the EEG record." in text
    example = text[text.index("```json\n") + 8 : text.rindex("\n```")]
    assert json.loads(example) == {"action": "tool_call", "tool_name": "get_recording_info",
                                   "arguments": {"record_id": "<record_id>"}}


def test_the_text_reference_can_cover_a_subset_or_none():
    subset = text_reference(["compute_psd"])
    assert "**`compute_psd`**" in subset and "get_recording_info" not in subset.split("### How to Call")[0]
    assert "No analysis tools" in text_reference([])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"tmin": "1"}, "Argument 'tmin' must be a number, got str \"1\"."),
        ({"tmin": False}, "Argument 'tmin' must be a number, got bool false."),
        ({"tmin": float("-inf")}, "Argument 'tmin' must be a finite number, got -inf."),
        ({"channels": "O1"}, "Argument 'channels' must be a list of strings"),
        ({"channels": [["O1"]]}, "Argument 'channels' must be a list of strings"),
        ({"max_candidates_per_channel": 3.0}, "Argument 'max_candidates_per_channel' must be a whole number"),
        ({"max_candidates_per_channel": True}, "must be a whole number"),
        ({}, "Missing required argument 'record_id'."),
    ],
)
def test_argument_types_are_checked(arguments, message):
    spec = REGISTRY["detect_transients"]
    with pytest.raises(ToolError) as caught:
        spec.parse_arguments({"record_id": "r", **arguments} if arguments else {})
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and message in caught.value.message


def test_defaults_nulls_unknown_keys_and_aliases():
    spec = REGISTRY["detect_transients"]
    parsed = spec.parse_arguments({"record_id": "r", "tmin": None, "max_events_per_channel": 5, "colour": "red"})
    assert parsed == {"record_id": "r", "channels": None, "tmin": None, "tmax": None, "min_amplitude_uv": 70,
                      "max_candidates_per_channel": 5}
    both = spec.parse_arguments({"record_id": "r", "max_events_per_channel": 5, "max_candidates_per_channel": 9})
    assert both["max_candidates_per_channel"] == 9
    assert "max_events_per_channel" not in spec.json_schema()["properties"]


def test_integers_stay_integers_so_echoed_values_print_as_given():
    parsed = REGISTRY["compute_psd"].parse_arguments({"record_id": "r", "tmin": 0, "fmax": 40})
    assert type(parsed["tmin"]) is int and type(parsed["fmax"]) is int


def test_registering_requires_documented_parameters_and_a_known_category():
    with pytest.raises(ValueError, match="category"):
        tool(category="Miscellaneous")
    with pytest.raises(ValueError, match="does not document"):
        @tool(category="Data Overview")
        def undocumented(recording, record_id: str, level: float = 1.0):
            """Do something.

            Parameters
            ----------
            record_id : str
                The record.
            """
    assert "undocumented" not in REGISTRY


def test_a_documented_tool_gets_its_schema_from_signature_and_docstring(monkeypatch):
    monkeypatch.setattr("tools_app.registry.REGISTRY", dict(REGISTRY))
    from tools_app import registry

    @tool(category="Noise Metrics", version="9.9.9")
    def probe(recording, record_id: str, level: float | None = None,
              mode: typing.Annotated[str, Choices("a", "b")] = "a", names: list[str] | None = None):
        """Probe the signal.

        Second paragraph, wrapped
        over two lines.

        Parameters
        ----------
        record_id : str
            The record.
        level : float, optional
            How high, in µV.
        mode : str
            Which mode.
        names : list of str, optional
            Which channels.

        Returns
        -------
        dict
            Not part of the description.
        """

    spec = registry.REGISTRY["probe"]
    assert spec.description == "Probe the signal.\n\nSecond paragraph, wrapped over two lines."
    assert spec.json_schema() == {
        "type": "object",
        "properties": {
            "record_id": {"type": "string", "description": "The record."},
            "level": {"type": "number", "description": "How high, in µV."},
            "mode": {"type": "string", "enum": ["a", "b"], "description": "Which mode.", "default": "a"},
            "names": {"type": "array", "items": {"type": "string"}, "description": "Which channels."},
        },
        "required": ["record_id"],
    }


# What the official descriptions do not tell a model, and the platform set must not either: hints at
# labels, dataset names, implementation details. (The details stay in the docstrings' Notes.)
NOT_TOLD = (
    "Fp1-Fp2 r", "eye artefact", "loose electrode", "muscle activity", "CHB-MIT", "Sleep-EDF", "Bonn",
    "Hann", "50 % overlap", "50% overlap", "case-sensitive", "Butterworth", "DPSS", "Nyquist", "2^20", "as upstream",
)
# What they do tell it about output sizes.
SIZE_FIGURES = {
    "compute_psd": ("< 0.5k tokens", "2 KB"),
    "compute_band_power": ("< 1k tokens", "3 KB"),
    "detect_transients": ("~8k tokens", "30 KB"),
    "compute_channel_correlation": ("171 pairs, ~12 KB, ~3k tokens", "2016 pairs, ~140 KB, ~35k tokens"),
    "compute_windowed_features": ("8000 tokens", "6-7 tokens per requested field per row"),
}


def test_what_a_model_reads_of_a_tool_holds_no_hint_and_the_official_size_figures():
    for schema in function_schemas():
        function = schema["function"]
        read = [function["description"], *(p["description"] for p in function["parameters"]["properties"].values())]
        for text in read:
            assert not [phrase for phrase in NOT_TOLD if phrase in text], (function["name"], text)
        for figure in SIZE_FIGURES.get(function["name"], ()):
            assert figure in function["description"], (function["name"], figure)
    # The details are kept for developers, in the docstrings the model does not read.
    assert "Hann" in REGISTRY["compute_psd"].function.__doc__ and "DPSS" in REGISTRY["compute_psd"].function.__doc__
    assert "case-sensitive" in REGISTRY["get_channel_list"].function.__doc__
