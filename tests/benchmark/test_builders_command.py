"""``manage.py build_release``: the registry, screening from run files, targets, and errors."""

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from benchmark import builders
from tests.datafiles import BONN



def run(*args) -> str:
    out = StringIO()
    call_command("build_release", *[str(arg) for arg in args], stdout=out)
    return out.getvalue()


def scenario_ids(release: Path, task_id: str) -> list[str]:
    lines = (release / "benchmark" / "scenarios" / f"{task_id}.jsonl").read_text().splitlines()
    return [json.loads(line)["scenario_id"] for line in lines]


def panel_file(path: Path, solved: set[str], scenario_ids_: list[str]) -> Path:
    rows = []
    for scenario_id in scenario_ids_:
        truth = "epileptic" if "_S" in scenario_id else "normal"
        answer = truth if scenario_id in solved else ("normal" if truth == "epileptic" else "epileptic")
        rows.append({"scenario_id": scenario_id, "status": "completed", "invalid": False,
                     "prediction": {"classification": answer}, "score": {}, "usage": {}, "error": None})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_every_dataset_of_the_issue_is_a_choice():
    assert set(builders.DATASETS) == {"medmcqa", "eegdenoisenet", "bonn", "ds004504", "chbmit", "sleepedfx"}


def test_screening_runs_remove_the_easy_instances_before_balancing(tmp_path):
    all_ids = [f"c3_routine_bonn_{s}{i:03d}" for s in "ZOS" for i in range(1, 21)]
    easy = {f"c3_routine_bonn_S{i:03d}" for i in range(1, 6)} | {"c3_routine_bonn_Z001"}
    files = [panel_file(tmp_path / f"model{m}.jsonl", easy, all_ids) for m in range(5)]
    output = run("bonn", BONN, "--out", tmp_path / "release", "--screen-runs", ",".join(map(str, files)))
    kept = scenario_ids(tmp_path / "release", "T3")
    assert not easy & set(kept)
    assert sum("_S" in s for s in kept) == 14 and sum("_Z" in s for s in kept) == 7
    assert "after screening {'Z': 19, 'O': 20, 'S': 15}" in output


def test_explicit_targets(tmp_path):
    run("bonn", BONN, "--out", tmp_path / "r", "--balance-targets", "Z=3,O=4,S=5",
        "--name", "Mine", "--version", "2.0")
    description = json.loads((tmp_path / "r" / "benchmark" / "benchmark.json").read_text())
    assert description["tasks"]["T3"]["count"] == 12
    assert (description["name"], description["version"], description["synthetic"]) == ("Mine", "2.0", False)


def test_a_build_error_is_a_command_error_and_writes_nothing(tmp_path):
    (tmp_path / "raw" / "Z").mkdir(parents=True)
    with pytest.raises(CommandError, match="no folder for Bonn set"):
        run("bonn", tmp_path / "raw", "--out", tmp_path / "release")
    assert not (tmp_path / "release").exists()


def test_unscreened_tasks_refuse_screening_runs(tmp_path):
    raw = tmp_path / "edn"
    raw.mkdir()
    rng = np.random.default_rng(0)
    for name, rows in (("EEG_all_epochs.npy", 300), ("EOG_all_epochs.npy", 100), ("EMG_all_epochs.npy", 100)):
        np.save(raw / name, rng.normal(size=(rows, 512)))
    runs = tmp_path / "runs.jsonl"
    runs.write_text("")
    with pytest.raises(CommandError, match="T2 is not screened"):
        run("eegdenoisenet", raw, "--out", tmp_path / "release", "--screen-runs", runs)
    assert not (tmp_path / "release").exists()


def test_a_missing_builder_module_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.setitem(builders.DATASETS, "ghost", "benchmark.builders.ghost_dataset")
    with pytest.raises(CommandError, match=r"the ghost builder \(benchmark.builders.ghost_dataset\) is not installed"):
        run("ghost", tmp_path, "--out", tmp_path / "release")


def test_malformed_targets_are_refused(tmp_path):
    with pytest.raises(CommandError, match="CLASS=COUNT"):
        run("bonn", tmp_path, "--out", tmp_path / "r", "--balance-targets", "Z47")
