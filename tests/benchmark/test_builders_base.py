"""The release writer: official layout and formats, whitelisted metadata, all-or-nothing, adding tasks."""

import json
from pathlib import Path

import pytest

from benchmark.builders.base import (
    METADATA_WHITELIST,
    OFFICIAL_TOOLS,
    TASK_FORMATS,
    BuildError,
    Candidate,
    write_release,
)
from benchmark.scoring import score_task
from benchmark.scoring.files import load_items
from tests.datafiles import OFFICIAL

SCENARIO_KEYS = ["scenario_id", "task_id", "task_name", "dataset", "dataset_version", "records", "subjects",
                 "input", "access", "expected_output_schema", "evaluator", "release"]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def bonn_like(index: int, label: str = "normal", **extra) -> Candidate:
    return Candidate(
        task_id="T3", scenario_id=f"c3_routine_bonn_Z{index:03d}", label=label,
        gold={"label": label, "label_binary": label, "finding_tags": []},
        metadata={"channels": 1, "sampling_rate": 173.61, "recording_type": "surface", **extra},
        input={"clinical_context": "c", "question": "q", "metadata": {"channels": 1, "recording_type": "surface"}},
        data_name=f"bonn/Z/Z{index:03d}.txt",
        write=lambda path, index=index: path.write_text(f"{index}\n"),
    )


def question(index: int) -> Candidate:
    return Candidate(
        task_id="T1", scenario_id=f"k0_medmcqa_q{index}", label="A",
        gold={"answer": "A", "answer_text": "Alpha"}, metadata={},
        input={"question": "Which rhythm?", "options": {"A": "Alpha", "B": "Beta", "C": "Delta", "D": "Theta"},
               "subject_name": "Physiology", "eeg_strict_categories": ["core_eeg"]},
    )


def strip_descriptions(schema):
    if isinstance(schema, dict):
        return {key: strip_descriptions(value) for key, value in schema.items() if key != "description"}
    if isinstance(schema, list):
        return [strip_descriptions(value) for value in schema]
    return schema


@pytest.mark.parametrize("task_id,official", [
    ("T1", "scenarios/T1.jsonl"), ("T2", "scenarios/T2.jsonl"), ("T3", "scenarios/T3.jsonl"),
    ("T4", "scenarios/T4.jsonl"), ("T5", "smoke/scenarios/T5.jsonl"), ("T6", "smoke/scenarios/T6.jsonl"),
])
def test_task_constants_match_the_official_scenarios(task_id, official):
    scenario = read_jsonl(OFFICIAL / official)[0]
    fmt = TASK_FORMATS[task_id]
    assert (fmt.task_name, fmt.dataset, fmt.dataset_version) == (
        scenario["task_name"], scenario["dataset"], scenario["dataset_version"])
    assert fmt.access() == scenario["access"]
    assert fmt.evaluator() == scenario["evaluator"]
    assert strip_descriptions(fmt.expected_output_schema) == strip_descriptions(scenario["expected_output_schema"])


def test_benchmark_json_task_entries_match_the_official_one(tmp_path):
    official = json.loads((OFFICIAL / "benchmark.json").read_text())
    assert list(OFFICIAL_TOOLS) == official["official_tools"]
    for task_id, entry in official["tasks"].items():
        fmt = TASK_FORMATS[task_id]
        assert (fmt.task_key, fmt.max_tool_calls, fmt.primary_metric) == (
            entry["task_key"], entry["max_tool_calls"], entry["primary_metric"])
        assert list(fmt.secondary_metrics) == entry.get("secondary_metrics", [])


def test_writes_the_official_layout_with_sequential_ids_and_whitelisted_metadata(tmp_path):
    out = write_release([bonn_like(2), bonn_like(7, "epileptic")], tmp_path / "release",
                        name="Test", version="0.1", synthetic=True)
    scenarios = read_jsonl(out / "benchmark/scenarios/T3.jsonl")
    assert [list(row) for row in scenarios] == [SCENARIO_KEYS, SCENARIO_KEYS]
    assert [row["records"][0]["record_id"] for row in scenarios] == ["EEG_0001", "EEG_0002"]
    assert scenarios[0]["records"][0]["metadata"] == {"channels": 1, "sampling_rate": 173.61}
    assert scenarios[0]["input"]["metadata"] == {"channels": 1}
    assert scenarios[0]["release"] == {"split": "evaluation", "include_gold_in_release": False}
    assert read_jsonl(out / "benchmark/runtime/T3.jsonl")[1] == {
        "scenario_id": "c3_routine_bonn_Z007",
        "records": [{"record_id": "EEG_0002", "data_path": "data/bonn/Z/Z007.txt"}]}
    assert read_jsonl(out / "benchmark/answer_keys/T3.jsonl")[1]["gold"]["label"] == "epileptic"
    manifest = read_jsonl(out / "benchmark/manifests/files.jsonl")
    assert manifest[0]["display_id"] == "EEG_0001" and manifest[0]["size_bytes"] == 2
    assert len(manifest[0]["sha256"]) == 64
    assert (out / "data/bonn/Z/Z007.txt").read_text() == "7\n"
    description = json.loads((out / "benchmark/benchmark.json").read_text())
    assert description["total_instances"] == 2 and description["synthetic"] is True
    assert description["tasks"]["T3"]["count"] == 2
    assert description["overall"]["components"] == ["T3.macro_f1"]


def test_t1_has_no_records_and_t2_uses_epoch_ids(tmp_path):
    epoch = Candidate(task_id="T2", scenario_id="c2_artifact:edn_clean_0000", label="clean",
                      gold={"label": "clean", "artifact_source": None, "snr_db": None},
                      metadata={"sampling_rate": 256.0}, input={"label_space": ["clean"]},
                      data_name="eegdenoisenet/signals/edn_clean_0000.npy", write=lambda path: path.write_bytes(b"x"))
    out = write_release([question(1), epoch], tmp_path / "r", name="n", version="v", synthetic=False)
    assert read_jsonl(out / "benchmark/runtime/T1.jsonl") == [{"scenario_id": "k0_medmcqa_q1", "records": []}]
    assert read_jsonl(out / "benchmark/scenarios/T1.jsonl")[0]["records"] == []
    assert read_jsonl(out / "benchmark/runtime/T2.jsonl")[0]["records"][0]["record_id"] == "EPOCH_00001"
    assert "secondary_metrics" not in json.loads((out / "benchmark/benchmark.json").read_text())["tasks"]["T1"]


def test_a_written_release_scores_with_the_official_rules(tmp_path):
    candidates = [bonn_like(1), bonn_like(2, "epileptic")]
    out = write_release(candidates, tmp_path / "r", name="n", version="v", synthetic=False)
    predictions = tmp_path / "runs.jsonl"
    predictions.write_text("".join(
        json.dumps({"scenario_id": c.scenario_id, "status": "completed",
                    "prediction": {"classification": c.label}}) + "\n" for c in candidates))
    task_id, items, extra = load_items(out / "benchmark/scenarios/T3.jsonl",
                                       out / "benchmark/answer_keys/T3.jsonl", predictions)
    assert score_task(task_id, items, extra=extra)["metrics"]["accuracy"] == 1.0


def test_a_failing_writer_leaves_nothing_behind(tmp_path):
    def broken(path):
        raise OSError("disk full")
    failing = bonn_like(3)
    failing.write = broken
    with pytest.raises(OSError, match="disk full"):
        write_release([bonn_like(1), failing], tmp_path / "release", name="n", version="v", synthetic=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change,message", [
    (lambda c: setattr(c, "data_name", "../escape.txt"), "plain relative path"),
    (lambda c: setattr(c, "source", Path("/nonexistent/file.txt")), "exactly one of source or write"),
    (lambda c: setattr(c, "task_id", "T9"), "unknown task"),
    (lambda c: setattr(c, "data_name", None), "needs a data_name"),
])
def test_rejects_malformed_candidates(tmp_path, change, message):
    candidate = bonn_like(1)
    change(candidate)
    with pytest.raises(BuildError, match=message):
        write_release([candidate], tmp_path / "r", name="n", version="v", synthetic=False)
    assert not (tmp_path / "r").exists()


def test_rejects_duplicate_scenarios(tmp_path):
    with pytest.raises(BuildError, match="proposed twice"):
        write_release([bonn_like(1), bonn_like(1)], tmp_path / "r", name="n", version="v", synthetic=False)


def test_adding_a_task_keeps_the_other_tasks_and_replacing_one_drops_its_old_files(tmp_path):
    out = tmp_path / "release"
    write_release([bonn_like(1), bonn_like(2)], out, name="n", version="v", synthetic=False)
    write_release([question(1)], out, name="n", version="v", synthetic=True)
    description = json.loads((out / "benchmark/benchmark.json").read_text())
    assert sorted(description["tasks"]) == ["T1", "T3"] and description["total_instances"] == 3
    assert description["synthetic"] is True
    assert len(read_jsonl(out / "benchmark/manifests/files.jsonl")) == 2
    assert (out / "data/bonn/Z/Z002.txt").read_text() == "2\n"

    write_release([bonn_like(5)], out, name="n", version="v", synthetic=False)
    assert [row["scenario_id"] for row in read_jsonl(out / "benchmark/scenarios/T3.jsonl")] == [
        "c3_routine_bonn_Z005"]
    assert not (out / "data/bonn/Z/Z002.txt").exists()
    assert len(read_jsonl(out / "benchmark/scenarios/T1.jsonl")) == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["release"]


def test_refuses_a_non_empty_directory_that_is_not_a_release(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="neither empty nor a release"):
        write_release([bonn_like(1)], tmp_path, name="n", version="v", synthetic=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("content", ["[1, 2]", '"a release"', "\xff\xfe", "{broken"])
def test_refuses_a_benchmark_description_that_is_not_a_json_object(tmp_path, content):
    description = tmp_path / "benchmark" / "benchmark.json"
    description.parent.mkdir()
    description.write_bytes(content.encode("latin-1"))
    with pytest.raises(BuildError, match="benchmark description"):
        write_release([bonn_like(1)], tmp_path, name="n", version="v", synthetic=False)
    assert description.read_bytes() == content.encode("latin-1")


def test_whitelist_is_the_official_one():
    assert METADATA_WHITELIST == {
        "channels", "channel_names", "eeg_channels", "n_channels", "sampling_rate", "n_samples", "duration_sec",
        "montage", "reference", "age", "gender", "sex", "night", "source", "epoch_sec", "n_epochs_total"}


def test_an_existing_release_with_a_missing_data_file_is_reported(tmp_path):
    out = tmp_path / "release"
    write_release([bonn_like(1)], out, name="n", version="v", synthetic=False)
    (out / "data/bonn/Z/Z001.txt").unlink()
    with pytest.raises(BuildError, match="cannot keep the release's T3 files"):
        write_release([question(1)], out, name="n", version="v", synthetic=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["release"]
    assert not (out / "benchmark/scenarios/T1.jsonl").exists()
