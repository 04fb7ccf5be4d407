"""Reading turns as actions and checking final answers, as the official runner does."""
import json

import pytest

from benchmark.wording.platform import PlatformWording
from runs.protocol import (
    SUBMIT_TOOL_NAME,
    final_answer_errors,
    is_empty_answer,
    parse_native_action,
    parse_text_action,
    schema_errors,
)
from tools_app.views import result_text

submit_tool_spec = PlatformWording().submit_tool
repair_nudge = PlatformWording().repair_nudge

# The official output schemas (benchmark/scenarios/*.jsonl, expected_output_schema), descriptions left out.
OUTPUT_SCHEMAS = {
    "T1": {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["A", "B", "C", "D"]}},
        "required": ["answer"],
    },
    "T2": {
        "type": "object",
        "properties": {
            "classification": {"type": "string", "enum": ["clean", "ocular_contaminated", "muscle_contaminated"]},
            "findings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["classification"],
    },
    "T3": {
        "type": "object",
        "properties": {
            "classification": {"type": "string", "enum": ["normal", "epileptic"]},
            "findings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["classification"],
    },
    "T4": {
        "type": "object",
        "properties": {
            "classification": {"type": "string", "enum": ["AD", "FTD", "HC"]},
            "findings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["classification"],
    },
    "T5": {
        "type": "object",
        "properties": {
            "seizure_events": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "onset_sec": {"type": "number", "minimum": 0},
                        "offset_sec": {"type": "number", "minimum": 0},
                    },
                    "required": ["onset_sec", "offset_sec"],
                },
            }
        },
        "required": ["seizure_events"],
    },
    "T6": {
        "type": "object",
        "properties": {
            "hypnogram_rle": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "start_epoch": {"type": "integer", "minimum": 0},
                        "end_epoch": {"type": "integer", "minimum": 0},
                        "stage": {"type": "string", "enum": ["W", "N1", "N2", "N3", "REM"]},
                    },
                    "required": ["start_epoch", "end_epoch", "stage"],
                },
            },
            "architecture": {
                "type": "object",
                "properties": {
                    "REM_pct": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                    "N3_pct": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                    "sleep_efficiency": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                },
                "required": ["REM_pct", "N3_pct", "sleep_efficiency"],
            },
        },
        "required": ["hypnogram_rle", "architecture"],
    },
}

PSD_CALL = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"record_id": "r1"}}


def calls_of(action):
    return [(call.name, call.arguments) for call in action.tool_calls]


# ── text protocol ────────────────────────────────────────────────────────────────────────────


def test_whole_reply_as_json_is_a_tool_call():
    action = parse_text_action(json.dumps(PSD_CALL))
    assert action.kind == "tool_call"
    assert calls_of(action) == [("compute_psd", {"record_id": "r1"})]
    assert action.tool_calls[0].id == "call_0"


def test_thought_key_is_removed_from_the_object_and_kept_apart():
    action = parse_text_action(json.dumps({**PSD_CALL, "thought": "check alpha"}))
    assert action.thought == "check alpha"
    assert calls_of(action) == [("compute_psd", {"record_id": "r1"})]


def test_first_fence_is_read_and_the_text_around_it_is_the_thought():
    later = json.dumps({"action": "final_answer", "answer": "A"})
    reply = f"Let me look.\n```json\n{json.dumps(PSD_CALL)}\n```\nThen decide.\n```json\n{later}\n```"
    action = parse_text_action(reply)
    assert calls_of(action) == [("compute_psd", {"record_id": "r1"})]
    assert action.thought.startswith("Let me look.")


def test_a_fence_without_language_tag_is_read_too():
    action = parse_text_action(f"```\n{json.dumps(PSD_CALL)}\n```")
    assert action.kind == "tool_call"


def test_text_outside_the_fence_wins_over_the_inner_thought():
    reply = f"outside\n```json\n{json.dumps({**PSD_CALL, 'thought': 'inside'})}\n```"
    assert parse_text_action(reply).thought == "outside"


def test_first_balanced_object_in_prose_is_read():
    reply = f"I will compute the spectrum {json.dumps(PSD_CALL)} and then answer."
    action = parse_text_action(reply)
    assert calls_of(action) == [("compute_psd", {"record_id": "r1"})]
    assert action.thought == "I will compute the spectrum  and then answer."


def test_only_the_first_balanced_object_is_tried():
    reply = "first {not json} then " + json.dumps(PSD_CALL)
    assert parse_text_action(reply).kind == "invalid"


def test_tool_name_inside_arguments_is_accepted():
    reply = json.dumps({"action": "tool_call", "arguments": {"tool_name": "compute_psd", "record_id": "r1"}})
    assert calls_of(parse_text_action(reply)) == [("compute_psd", {"record_id": "r1"})]


@pytest.mark.parametrize(
    "reply",
    [
        {"action": "tool_call", "arguments": {"record_id": "r1"}},
        {"action": "tool_call", "tool_name": ""},
    ],
)
def test_tool_call_without_a_name_is_invalid(reply):
    assert parse_text_action(json.dumps(reply)).kind == "invalid"


def test_arguments_that_are_not_an_object_become_empty():
    reply = {"action": "tool_call", "tool_name": "get_recording_info", "arguments": [1]}
    action = parse_text_action(json.dumps(reply))
    assert calls_of(action) == [("get_recording_info", {})]


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "final_answer", "seizure_events": []},
        {"classification": "normal", "findings": []},  # implicit: any object with a classification key
        {"action": "something_else", "classification": "normal"},
    ],
)
def test_final_answers_explicit_and_implicit(answer):
    action = parse_text_action(json.dumps(answer))
    assert action.kind == "final_answer"
    assert action.final_answer == answer


def test_a_label_key_is_not_an_answer():
    assert parse_text_action(json.dumps({"label": "normal"})).kind == "invalid"


@pytest.mark.parametrize(
    ("reply", "memory"),
    [
        ({"action": "memory_update", "memory": {"alpha_peak": 9.5}}, {"alpha_peak": 9.5}),
        ({"action": "memory_update", "content": "note"}, "note"),
        ({"action": "memory_update"}, ""),
    ],
)
def test_memory_update(reply, memory):
    action = parse_text_action(json.dumps(reply))
    assert action.kind == "memory_update"
    assert action.memory == memory


def test_array_of_tool_calls_gives_every_call_in_order():
    reply = json.dumps([
        {"action": "tool_call", "tool_name": "get_recording_info", "arguments": {"record_id": "r1"}},
        {"name": "compute_psd", "arguments": "bad"},
        "not an object",
    ])
    action = parse_text_action(reply, id_prefix="t3_")
    assert calls_of(action) == [("get_recording_info", {"record_id": "r1"}), ("compute_psd", {})]
    assert [call.id for call in action.tool_calls] == ["t3_0", "t3_1"]


def test_array_without_tool_calls_stands_for_its_first_object():
    action = parse_text_action(json.dumps([1, {"action": "final_answer", "answer": "B"}, {"answer": "C"}]))
    assert action.kind == "final_answer"
    assert action.final_answer == {"action": "final_answer", "answer": "B"}


@pytest.mark.parametrize("reply", ["[1, 2]", "42", '"final_answer"', "true", "", "   ", "just prose, no action"])
def test_anything_without_an_action_object_is_invalid(reply):
    assert parse_text_action(reply).kind == "invalid"


def test_an_object_without_action_is_invalid_even_if_it_looks_like_arguments():
    assert parse_text_action(json.dumps({"record_id": "r1", "tmin": 0})).kind == "invalid"


def test_tagged_tool_calls_with_parameters_decoded_as_json_when_possible():
    reply = (
        "<tool_call><function=compute_psd><parameter=record_id>r1</parameter>"
        "<parameter=fmax>30</parameter><parameter=channels>[\"Cz\"]</parameter></tool_call>"
        "<tool_call><function=get_channel_list><parameter=record_id>r1</parameter></tool_call>"
    )
    action = parse_text_action(reply)
    assert calls_of(action) == [
        ("compute_psd", {"record_id": "r1", "fmax": 30, "channels": ["Cz"]}),
        ("get_channel_list", {"record_id": "r1"}),
    ]


def test_tags_win_over_json_in_the_same_reply():
    reply = json.dumps({"action": "final_answer", "answer": "A"}) + (
        "<tool_call><function=get_recording_info><parameter=record_id>r1</parameter></tool_call>"
    )
    assert parse_text_action(reply).kind == "tool_call"


def test_marker_wrapped_object_naming_a_tool_is_a_tool_call():
    reply = '[TOOL_CALLS] {"name": "compute_psd", "arguments": {"record_id": "r1"}}'
    assert calls_of(parse_text_action(reply)) == [("compute_psd", {"record_id": "r1"})]


def test_marker_wrapped_arguments_with_the_name_inside_them():
    reply = '<tool_call> {"arguments": {"name": "compute_psd", "record_id": "r1"}}'
    assert calls_of(parse_text_action(reply)) == [("compute_psd", {"record_id": "r1"})]


def test_marker_wrapped_flat_object_keeps_its_keys_as_arguments():
    # The official parser passes the whole object on, the tool name included.
    reply = '<tool_call> {"tool_name": "compute_psd", "record_id": "r1"}'
    assert calls_of(parse_text_action(reply)) == [("compute_psd", {"tool_name": "compute_psd", "record_id": "r1"})]


# ── native protocol ──────────────────────────────────────────────────────────────────────────


def test_native_tool_calls_keep_the_provider_ids():
    action = parse_native_action(
        "thinking aloud",
        [("abc", "compute_psd", '{"record_id": "r1"}'), ("def", "get_channel_list", "")],
    )
    assert action.kind == "tool_call"
    assert [(c.id, c.name, c.arguments) for c in action.tool_calls] == [
        ("abc", "compute_psd", {"record_id": "r1"}),
        ("def", "get_channel_list", {}),
    ]
    assert action.thought == "thinking aloud"


@pytest.mark.parametrize("raw_arguments", ["{not json", "[1, 2]", "3", None])
def test_native_arguments_that_are_not_an_object_become_empty(raw_arguments):
    action = parse_native_action(None, [("a", "compute_psd", raw_arguments)])
    assert action.tool_calls[0].arguments == {}


def test_submit_final_answer_is_the_final_answer_and_drops_calls_before_it():
    action = parse_native_action(
        "",
        [("a", "compute_psd", "{}"), ("b", SUBMIT_TOOL_NAME, '{"classification": "clean"}'), ("c", "x", "{}")],
    )
    assert action.kind == "final_answer"
    assert action.final_answer == {"classification": "clean"}


def test_native_turn_without_tool_calls_is_read_as_text():
    action = parse_native_action(json.dumps({"action": "final_answer", "answer": "C"}), [])
    assert action.final_answer == {"action": "final_answer", "answer": "C"}
    assert parse_native_action("", None).kind == "invalid"


def test_submit_tool_takes_the_output_schema_as_parameters():
    spec = submit_tool_spec(OUTPUT_SCHEMAS["T5"])
    assert spec["function"]["name"] == SUBMIT_TOOL_NAME
    assert spec["function"]["parameters"] == OUTPUT_SCHEMAS["T5"]


@pytest.mark.parametrize("schema", [None, {}, {"answer": "A|B|C|D"}])
def test_submit_tool_falls_back_to_an_answer_string(schema):
    parameters = submit_tool_spec(schema)["function"]["parameters"]
    assert parameters["required"] == ["answer"]


# ── final-answer validation ──────────────────────────────────────────────────────────────────


def hypnogram(*segments, architecture=None):
    return {
        "action": "final_answer",
        "hypnogram_rle": [{"start_epoch": s, "end_epoch": e, "stage": stage} for s, e, stage in segments],
        "architecture": architecture or {"REM_pct": 0.0, "N3_pct": 0.0, "sleep_efficiency": 0.5},
    }


@pytest.mark.parametrize(
    ("task", "answer"),
    [
        ("T1", {"action": "final_answer", "answer": "B"}),
        ("T2", {"action": "final_answer", "classification": "clean", "findings": ["low beta"]}),
        ("T3", {"classification": "epileptic"}),
        ("T4", {"classification": "HC", "findings": [], "extra": "ignored"}),
        ("T5", {"seizure_events": []}),
        ("T5", {"seizure_events": [{"onset_sec": 10, "offset_sec": 55.5}]}),
        ("T6", hypnogram((0, 1, "W"), (2, 3, "N2"))),
    ],
)
def test_valid_answers_have_no_errors(task, answer):
    assert final_answer_errors(answer, OUTPUT_SCHEMAS[task], task=task, n_epochs=4) == []


@pytest.mark.parametrize(
    ("task", "answer", "expected"),
    [
        ("T1", {"answer": "E"}, ["$.answer: value is not in enum"]),
        ("T1", {"answer": 1}, ["$.answer: expected string"]),
        ("T2", {"findings": "x"},
         ["$.classification: required field missing", "$.findings: expected array"]),
        ("T2", {"classification": "clean", "findings": [1]}, ["$.findings[0]: expected string"]),
        ("T5", {"seizure_events": [{"onset_sec": -1, "offset_sec": True}]}, [
            "$.seizure_events[0].onset_sec: below minimum",
            "$.seizure_events[0].offset_sec: expected number",
        ]),
        ("T6", {**hypnogram((0, 3, "W")), "architecture": {"REM_pct": 1.5, "N3_pct": 0, "sleep_efficiency": 0}},
         ["$.architecture.REM_pct: above maximum"]),
        ("T6", hypnogram((0, 3.0, "W")), ["$.hypnogram_rle[0].end_epoch: expected integer"]),
    ],
)
def test_schema_errors_name_the_path(task, answer, expected):
    assert final_answer_errors(answer, OUTPUT_SCHEMAS[task], task=task, n_epochs=4) == expected


def test_a_final_answer_must_be_an_object():
    assert final_answer_errors(["B"], OUTPUT_SCHEMAS["T1"]) == ["$: final answer must be a JSON object"]


def test_unknown_keywords_and_missing_schema_accept_anything():
    assert schema_errors({"a": 1}, {"type": "mystery", "pattern": "x"}) == []
    assert final_answer_errors({"answer": "Z"}, None) == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (hypnogram((1, 3, "W")), ["$.hypnogram_rle[0]: expected start_epoch 0, got 1"]),
        (hypnogram((0, 1, "W"), (3, 3, "N2")), ["$.hypnogram_rle[1]: expected start_epoch 2, got 3"]),
        (hypnogram((0, 2, "W"), (2, 3, "N2")), ["$.hypnogram_rle[1]: expected start_epoch 3, got 2"]),
        (hypnogram((0, 1, "W")), ["$.hypnogram_rle: must cover epochs 0..3; ended at 1"]),
        (hypnogram((0, 5, "W")), ["$.hypnogram_rle: must cover epochs 0..3; ended at 5"]),
        (hypnogram(), ["$.hypnogram_rle: must contain at least one segment"]),
        (hypnogram((0, 3, "W"), (4, 2, "N2")),
         ["$.hypnogram_rle[1]: end_epoch precedes start_epoch", "$.hypnogram_rle: must cover epochs 0..3; ended at 2"]),
    ],
)
def test_t6_hypnogram_must_cover_every_epoch_contiguously(answer, expected):
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T6"], task="T6", n_epochs=4) == expected


def test_t6_coverage_is_checked_only_once_the_schema_passes():
    answer = hypnogram((1, 3, "XX"))
    errors = final_answer_errors(answer, OUTPUT_SCHEMAS["T6"], task="T6", n_epochs=4)
    assert errors == ["$.hypnogram_rle[0].stage: value is not in enum"]


def test_t6_end_is_not_checked_without_an_epoch_count():
    assert final_answer_errors(hypnogram((0, 1, "W")), OUTPUT_SCHEMAS["T6"], task="T6") == []


def test_other_tasks_skip_the_hypnogram_check():
    assert final_answer_errors({"hypnogram_rle": []}, {}, task="T5") == []


def test_repair_nudge_lists_at_most_six_errors():
    errors = [f"$.e{i}: wrong" for i in range(9)]
    for native in (True, False):
        nudge = repair_nudge(errors, native=native)
        assert "$.e5: wrong" in nudge and "$.e6" not in nudge
    assert SUBMIT_TOOL_NAME in repair_nudge(errors, native=True)


@pytest.mark.parametrize(
    ("answer", "empty"),
    [
        ({}, True),
        (None, True),
        ({"raw_response": " "}, True),
        ({"raw_response": "x"}, False),
        ({"answer": ""}, False),
    ],
)
def test_is_empty_answer(answer, empty):
    assert is_empty_answer(answer) is empty


def test_a_tool_result_reads_as_the_python_repr_or_the_error():
    assert result_text("compute_psd", {"ok": True, "x": None}) == "{'ok': True, 'x': None}"
    assert result_text("compute_psd", None, "Tool 'x' is not allowed for this scenario.") == (
        "Tool 'x' is not allowed for this scenario."
    )


def test_a_tool_result_reads_as_the_official_tool_prints_it():
    info = {"record_id": "EEG_1234", "reference": 0, "age": None}
    assert result_text("get_recording_info", info) == (
        "{'record_id': 'EEG_1234', 'reference': 0 (FIFFV_MNE_CUSTOM_REF_OFF), 'age': None}"
    )
    assert info["reference"] == 0 and type(info["reference"]) is int  # the stored result is left as it is
    assert "(FIFFV" not in result_text("compute_psd", info)  # only the recording info carries MNE's flag
    error = {"record_id": "EEG_1234", "error": "tmax (1) must be greater than tmin (2).", "error_code": "invalid_argument"}
    assert result_text("compute_psd", error) == (
        "{'record_id': 'EEG_1234', 'error': 'tmax (1) must be greater than tmin (2).'}"
    )
