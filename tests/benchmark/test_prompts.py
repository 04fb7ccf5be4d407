"""Prompts: the official structure, the opaque record id, and no label leaking into any official instance."""

import json
import re
from pathlib import PurePosixPath

import pytest

from benchmark.models import Instance
from benchmark.prompts import OFFICIAL_TOOLS, build_messages, build_system_prompt, build_user_prompt, tool_overview
from benchmark.releases import import_release
from tests.benchmark.release_dirs import official_release, placeholder_data, smoke_release

pytestmark = pytest.mark.django_db

CATEGORIES = ("Data Overview", "Noise Metrics", "Spectral Analysis", "Transient Detection",
              "Temporal & Spatial Features", "Windowed / Time-Series Analysis")


@pytest.fixture(scope="module")
def tool_specs():
    """The registry's ten tools as OpenAI function specs, as the agent loop passes them."""
    from tools_app.registry import function_schemas

    return function_schemas()


@pytest.fixture
def official_instances(tmp_path):
    """Every official T1–T4 instance and every T5/T6 smoke instance, imported."""
    release = official_release(tmp_path / "release")
    placeholder_data(release, ["T2", "T3", "T4"])
    smoke = smoke_release(tmp_path / "smoke", ("T5", "T6"))
    placeholder_data(smoke, ["T5", "T6"])
    import_release(path=release)
    import_release(path=smoke)
    instances = list(Instance.objects.select_related("task").order_by("task__code", "position"))
    assert len(instances) == 38 + 300 + 188 + 69 + 2 + 1
    return instances


def _prompts(instance) -> str:
    return build_system_prompt(instance) + "\n" + build_user_prompt(instance)


def _scalars(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif value is not None and not isinstance(value, bool):
        yield value


def _as_word(text: str) -> re.Pattern:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(text)}(?![A-Za-z0-9_])")


# Path parts that name no instance: the data root and BIDS's modality folder.
GENERIC_PATH_PARTS = {"data", "eeg"}


def test_no_hidden_value_reaches_any_official_prompt(official_instances):
    by_task = {}
    for instance in official_instances:
        text = _prompts(instance)
        assert (instance.record_id in text) == (instance.task.code != "T1")  # T1 questions have no record
        assert instance.scenario_id not in text
        if instance.release_record_id:
            assert not _as_word(instance.release_record_id).search(text), instance.scenario_id
        if instance.recording_path:
            path = PurePosixPath(instance.recording_path)
            assert instance.recording_path not in text
            for part in {*path.parts, path.stem} - GENERIC_PATH_PARTS:
                assert not _as_word(part).search(text), (instance.scenario_id, part)
        reference = instance.reference
        for event in reference.get("seizure_events", []):
            for bound in event:
                assert not _as_word(f"{bound:g}").search(text) and f"{bound}" not in text
        if instance.task.code == "T1":
            assert f'"answer": "{reference["answer"]}"' not in text
        by_task.setdefault(instance.task.code, []).append((instance, text.replace(instance.record_id, "<id>")))
    # Labels and other gold strings occur only where every prompt of the task has them (the label space).
    for code, rows in by_task.items():
        golds = {str(v) for instance, _ in rows for v in _scalars(instance.reference) if not isinstance(v, float)}
        for gold in golds - {""}:
            if code == "T1":  # the options necessarily contain every answer text and letter
                continue
            counts = {len(_as_word(gold).findall(text)) for _, text in rows}
            assert len(counts) == 1, (code, gold, counts)


def test_prompts_do_not_change_when_the_hidden_fields_do(official_instances, tool_specs):
    for instance in official_instances:
        scenario = json.loads(instance.release_lines["scenario"]["text"])
        scenario["scenario_id"] = "hidden"
        for record in scenario["records"]:
            record["record_id"] = "hidden"
        blind = Instance(
            suite=instance.suite, task=instance.task, record_id=instance.record_id, metadata=instance.metadata,
            prompt_input=instance.prompt_input, expected_output_schema=instance.expected_output_schema,
            allowed_tools=instance.allowed_tools, release_lines={"scenario": {"line": 1, "text": json.dumps(scenario)}},
        )
        assert build_messages(blind, tool_specs=tool_specs) == build_messages(instance, tool_specs=tool_specs)


def test_prompts_keep_the_metadata_order_without_the_release_line(official_instances):
    """Instances not imported from release lines use their metadata field in its own order."""
    for instance in official_instances[38:40] + official_instances[-3:]:
        # the metadata in the release's order: read back from PostgreSQL's jsonb it would be re-sorted
        ordered = json.loads(instance.release_lines["scenario"]["text"])["records"][0]["metadata"]
        bare = Instance(task=instance.task, record_id=instance.record_id, metadata=ordered,
                        prompt_input=instance.prompt_input, expected_output_schema=instance.expected_output_schema)
        assert build_user_prompt(bare) == build_user_prompt(instance)


# ── structure ───────────────────────────────────────────────────────────────────────────────

def _sections(text: str) -> list[str]:
    return re.findall(r"^#{2,3} .+$", text, flags=re.MULTILINE)


def _one(instances, code):
    return next(instance for instance in instances if instance.task.code == code)


def test_t1_prompts_have_question_options_and_no_tools(official_instances, tool_specs):
    instance = _one(official_instances, "T1")
    system, user = (m["content"] for m in build_messages(instance, tool_specs=tool_specs))
    assert _sections(system) == ["## Rules", "## Answer Format"]
    assert '{"action": "final_answer", "answer": "<A|B|C|D>"}' in system
    assert build_system_prompt(instance, tool_specs=[]) == system
    assert user.startswith(f"## Question\n{instance.prompt_input['question'].strip()}\n\n## Options\nA. ")
    for letter, option in instance.prompt_input["options"].items():
        assert f"\n{letter}. {option}\n" in user
    assert user.endswith('```json\n{"action": "final_answer", "answer": "<A|B|C|D>"}\n```')


@pytest.mark.parametrize("code, before_tools, after_tools", [
    ("T2", ["## Rules"], ["## Data Access", "## Action Format"]),
    ("T3", ["## Rules"], ["## Data Access", "## Action Format"]),
    ("T4", ["## Rules"], ["## Data Access", "## Action Format"]),
    ("T5", ["## What an electrographic seizure looks like", "## Rules"], ["## Data Access", "## Action Format"]),
    ("T6", ["## Rules", "## AASM 5-class scoring criteria (textbook reference, all 5 stages)"],
     ["## Data Access", "## Action Format"]),
])
def test_system_prompt_sections_follow_the_official_order(official_instances, code, before_tools, after_tools):
    system = build_system_prompt(_one(official_instances, code))
    tools = ["## Available Tools", *(f"### {title}" for title in CATEGORIES), "### How to Call a Tool",
             "## Using the Tools (operating protocol)"]
    # Some tool descriptions have headings of their own (## Output size, ## Applicability), as upstream.
    in_descriptions = {"## Output size", "## Applicability"}
    assert [title for title in _sections(system) if title not in in_descriptions] == before_tools + tools + after_tools
    assert '{"action": "tool_call", "tool_name": "<name>", "arguments": {...}}' in system
    assert re.search(r'```json\n\{\s*"action": "final_answer"', system)


def test_tool_overview_is_the_registry_reference_followed_by_the_operating_protocol():
    from tools_app.registry import text_reference

    overview = tool_overview(OFFICIAL_TOOLS)
    reference, protocol = overview.split("\n\n## Using the Tools (operating protocol)\n")
    assert reference == text_reference(OFFICIAL_TOOLS)
    assert "You have access to **10** EEG analysis tools." in reference
    positions = [reference.index(f"**`{name}`** — ") for name in OFFICIAL_TOOLS]
    assert positions == sorted(positions)
    assert re.search(r"^    - `method` \(string, one of \['welch', 'multitaper'\], optional, default=\"welch\"\) — ",
                     reference, flags=re.MULTILINE)
    example = reference.split("### How to Call a Tool\n")[1].split("```json\n")[1].split("\n```")[0]
    assert json.loads(example) == {"action": "tool_call", "tool_name": "get_recording_info",
                                   "arguments": {"record_id": "<record_id>"}}
    assert [line[:2] for line in protocol.splitlines()] == ["- "] * 4
    assert "`_meta`" in protocol and "`approx_response_tokens`" in protocol
    assert protocol.endswith("`tool_call` JSON block in each step.")


def test_system_prompt_lists_the_tools_the_instance_allows_and_the_episode_offers(official_instances, tool_specs):
    instance = _one(official_instances, "T3")
    instance.allowed_tools = ["compute_band_power", "compute_psd"]
    system = build_system_prompt(instance, tool_specs=tool_specs)
    assert "You have access to **2** EEG analysis tools." in system
    assert "### Spectral Analysis" in system and "### Data Overview" not in system
    assert '"tool_name": "compute_psd"' in system
    offered = [spec for spec in tool_specs if spec["function"]["name"] == "compute_band_power"]
    assert "You have access to **1** EEG analysis tools." in build_system_prompt(instance, tool_specs=offered)
    instance.allowed_tools = []  # names none: all ten, as the agent loop allows
    assert "You have access to **10** EEG analysis tools." in build_system_prompt(instance, tool_specs=tool_specs)
    without = build_system_prompt(instance, tool_specs=[])
    assert "No analysis tools are available" in without and "operating protocol" not in without


def test_t3_user_prompt_shows_the_opaque_id_and_metadata_in_file_order(official_instances):
    instance = _one(official_instances, "T3")
    assert build_user_prompt(instance) == (
        f"## Clinical Context\n{instance.prompt_input['clinical_context']}\n\n"
        "## EEG Record\n"
        f"- **Record ID**: `{instance.record_id}`\n"
        "- **Channels**: 1\n- **Sampling Rate**: 173.61\n- **N Samples**: 4096\n- **Duration Sec**: 23.59\n\n"
        f"## Question\n{instance.prompt_input['question']}\n\n"
        '## Expected Output Schema\n```json\n{"classification": "normal|epileptic", "findings": ["string"]}\n```'
    )


def test_t4_user_prompt_has_the_reminder_before_the_schema(official_instances):
    user = build_user_prompt(_one(official_instances, "T4"))
    assert _sections(user) == ["## Clinical Context", "## EEG Record", "## Question", "## Important",
                               "## Expected Output Schema"]
    assert "- **Channel Names**: ['Fp1', 'Fp2', 'F3'" in user
    assert user.index("- **Channels**: 19") < user.index("- **Gender**: F") < user.index("- **Age**: 57")
    assert user.endswith('{"classification": "AD|FTD|HC", "findings": ["string"]}\n```')


def test_t2_user_prompt_does_not_show_the_label_space_list(official_instances):
    instance = _one(official_instances, "T2")
    user = build_user_prompt(instance)
    assert "label_space" not in user and "Label Space" not in user
    assert '{"classification": "clean|ocular_contaminated|muscle_contaminated", "findings": ["string"]}' in user


def test_t5_and_t6_user_prompts_sort_their_whitelisted_metadata(official_instances):
    t5 = build_user_prompt(_one(official_instances, "T5"))
    assert re.findall(r"^- \*\*(.+?)\*\*", t5, flags=re.MULTILINE) == [
        "Record ID", "Duration Sec", "Montage", "N Channels", "Sampling Rate"]
    assert '{"seizure_events": [{"onset_sec": "float", "offset_sec": "float"}]}' in t5
    t6 = build_user_prompt(_one(official_instances, "T6"))
    assert re.findall(r"^- \*\*(.+?)\*\*", t6, flags=re.MULTILINE) == [
        "Record ID", "Age", "Channels", "Duration Sec", "Eeg Channels", "Epoch Sec", "N Channels",
        "N Epochs Total", "N Samples", "Night", "Sampling Rate", "Sex", "Source"]
    schema = json.loads(t6.split("```json\n")[1].split("\n```")[0])
    assert schema["hypnogram_rle"] == [{"start_epoch": "int", "end_epoch": "int", "stage": "W|N1|N2|N3|REM"}]


def test_build_messages_gives_system_then_user(official_instances, tool_specs):
    messages = build_messages(_one(official_instances, "T6"), tool_specs=tool_specs)
    assert [m["role"] for m in messages] == ["system", "user"]
