"""T3 builder: Bonn sets Z, O, S in the publisher's layout, with its case variants and CRLF lines."""

import json
from pathlib import Path

import pytest

from benchmark.builders import bonn, build
from benchmark.builders.base import BuildError
from tests.datafiles import BONN, OFFICIAL



def jsonl(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["scenario_id"]: row for row in rows}


def segment(folder: Path, name: str, values=None, *, newline="\r\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    values = [str(i % 50 - 25) for i in range(4097)] if values is None else values
    path = folder / name
    path.write_bytes(newline.join(values).encode() + newline.encode())
    return path


def small_layout(root: Path) -> Path:
    for letter in "ZOS":
        for index in (1, 2):
            segment(root / letter, f"{letter}{index:03d}.txt")
    return root


def test_real_segments_get_the_official_labels_metadata_and_paths():
    candidates = bonn.collect(BONN)
    assert [c.scenario_id for c in candidates][:2] == ["c3_routine_bonn_Z001", "c3_routine_bonn_Z002"]
    assert {(c.scenario_id[16], c.label) for c in candidates} == {("Z", "normal"), ("O", "normal"),
                                                                  ("S", "epileptic")}
    scenarios = jsonl(OFFICIAL / "scenarios" / "T3.jsonl")
    keys = jsonl(OFFICIAL / "answer_keys" / "T3.jsonl")
    runtime = jsonl(OFFICIAL / "runtime" / "T3.jsonl")
    overlap = [c for c in candidates if c.scenario_id in scenarios]
    assert len(overlap) == 37
    for candidate in overlap:
        official = scenarios[candidate.scenario_id]
        assert candidate.metadata == official["records"][0]["metadata"]
        assert candidate.input["metadata"] == official["input"]["metadata"]
        assert candidate.gold == keys[candidate.scenario_id]["gold"]
        assert f"data/{candidate.data_name}" == runtime[candidate.scenario_id]["records"][0]["data_path"]


def test_real_files_are_copied_unchanged_with_their_4097_lines(tmp_path):
    report = build("bonn", BONN, tmp_path / "release")
    assert report.pool == {"Z": 20, "O": 20, "S": 20}
    assert report.selected == {"Z": 10, "O": 10, "S": 20}
    copied = tmp_path / "release" / "data" / "bonn" / "S" / "S001.txt"
    original = (BONN / "S" / "S001.txt").read_bytes()
    assert copied.read_bytes() == original and original.count(b"\r\n") == 4097


def test_case_variants_and_crlf_are_accepted_and_named_canonically(tmp_path):
    segment(tmp_path / "z", "z001.txt")
    segment(tmp_path / "O", "O001.TXT", newline="\n")
    segment(tmp_path / "S", "S001.txt")
    segment(tmp_path / "N", "N001.TXT")
    names = [c.data_name for c in bonn.collect(tmp_path)]
    assert names == ["bonn/Z/Z001.txt", "bonn/O/O001.txt", "bonn/S/S001.txt"]


def test_a_non_numeric_line_names_file_and_line_and_nothing_is_written(tmp_path):
    raw = small_layout(tmp_path / "raw")
    values = [str(i) for i in range(4097)]
    values[16] = "12,5x"
    segment(raw / "O", "O002.txt", values)
    with pytest.raises(BuildError, match=r"O/O002.txt, line 17: '12,5x' is not a number"):
        build("bonn", raw, tmp_path / "release")
    assert not (tmp_path / "release").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["raw"]


def test_a_short_segment_is_rejected(tmp_path):
    raw = small_layout(tmp_path)
    segment(raw / "S", "S002.txt", ["1"] * 100)
    with pytest.raises(BuildError, match=r"S/S002.txt: 100 samples"):
        bonn.collect(raw)


def test_a_missing_set_folder_is_named(tmp_path):
    segment(tmp_path / "Z", "Z001.txt")
    with pytest.raises(BuildError, match="no folder for Bonn set.*O, S"):
        bonn.collect(tmp_path)


def test_the_same_segment_twice_is_rejected(tmp_path):
    raw = small_layout(tmp_path)
    segment(raw / "Z", "z001.TXT")
    with pytest.raises(BuildError, match="same segment"):
        bonn.collect(raw)


def test_a_file_of_another_set_in_a_set_folder_is_rejected(tmp_path):
    raw = small_layout(tmp_path)
    segment(raw / "Z", "S050.txt")
    with pytest.raises(BuildError, match="a set S file in the set Z folder"):
        bonn.collect(raw)
