"""T1 builder: EEG-strict filter, 1-based answers, and the official option shuffle."""

import json
from pathlib import Path

import pytest

from benchmark.builders.base import BuildError
from benchmark.builders.medmcqa import collect, eeg_strict_categories, shuffle_options
from tests.datafiles import MEDMCQA, OFFICIAL

OFFICIAL_T1 = OFFICIAL / "scenarios" / "T1.jsonl"
OFFICIAL_T1_KEY = OFFICIAL / "answer_keys" / "T1.jsonl"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def row(question: str, *, cop=2, choice_type="single", id="q-1", **fields) -> dict:
    base = {"question": question, "exp": None, "cop": cop, "opa": "Alpha", "opb": "Beta", "opc": "Delta",
            "opd": "Theta", "subject_name": "Physiology", "topic_name": None, "id": id, "choice_type": choice_type}
    return {**base, **fields}


def write_split(directory: Path, rows: list, name: str = "train.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return directory


def test_filter_gives_every_official_question_its_official_categories():
    for scenario in jsonl(OFFICIAL_T1):
        assert eeg_strict_categories(scenario["input"]["question"]) == scenario["input"]["eeg_strict_categories"], (
            scenario["scenario_id"])


def test_shuffle_reproduces_the_official_options_and_gold_for_the_question_in_the_dev_split():
    official = {row["scenario_id"]: row for row in jsonl(OFFICIAL_T1)}
    keys = {row["scenario_id"]: row["gold"] for row in jsonl(OFFICIAL_T1_KEY)}
    built = {c.scenario_id: c for c in collect(MEDMCQA)}
    overlap = sorted(set(official) & set(built))
    assert overlap == ["k0_medmcqa_42924e5a-723d-478f-ab78-a46ec8e8041b"]
    for scenario_id in overlap:
        assert built[scenario_id].input == official[scenario_id]["input"]
        assert built[scenario_id].gold == keys[scenario_id]


def test_dev_split_yields_its_eeg_strict_questions_only():
    built = [c.scenario_id[len("k0_medmcqa_"):len("k0_medmcqa_") + 8] for c in collect(MEDMCQA)]
    # EEG in the question (605c9835), MMN (42924e5a), BERA (8b538660); not EEG only in the
    # explanation (77d35e3d), not the ECG delta wave (e7173db8), not the multi-choice brain death one.
    assert sorted(built) == ["42924e5a", "605c9835", "8b538660"]


@pytest.mark.parametrize("question,categories", [
    ("Alpha rhythm in EEG is seen in", ["core_eeg", "rhythm_bands"]),
    ("Delta wave on ECG is seen in", []),
    ("Delta waves dominate which sleep stage?", ["rhythm_bands"]),
    ("Muscle spindle is a receptor for", []),
    ("Sleep spindles are seen in", ["sleep_eeg"]),
    ("Criteria for brain death a) ECGb) EEGc) reflexes", ["classic_eeg_signs"]),
    ("P300 is a component of", ["evoked_potential"]),
    ("Electroencephalography shows burst suppression in", ["core_eeg", "critical_care_eeg"]),
    ("Treatment of status epilepticus", []),
])
def test_eeg_strict_categories(question, categories):
    assert eeg_strict_categories(question) == categories


def test_gold_follows_its_text_through_the_shuffle():
    options, gold = shuffle_options(["w", "x", "y", "z"], 2, "k0_medmcqa_any")
    assert options[gold] == "y" and sorted(options.values()) == ["w", "x", "y", "z"]
    assert (options, gold) == shuffle_options(["w", "x", "y", "z"], 2, "k0_medmcqa_any")


def test_cop_is_one_based(tmp_path):
    [candidate] = collect(write_split(tmp_path, [row("EEG shows what in absence seizures?", cop=1)]))
    assert candidate.gold["answer_text"] == "Alpha"
    assert candidate.input["options"][candidate.gold["answer"]] == "Alpha"
    assert candidate.input["subject_name"] == "Physiology"


def test_multi_choice_and_unanswered_rows_are_not_eligible(tmp_path):
    rows = [row("EEG in coma", choice_type="multi", id="a"), row("EEG in sleep", cop=-1, id="b"),
            row("EEG in sleep", cop=None, id="c")]
    assert collect(write_split(tmp_path, rows)) == []


def test_zero_based_cop_is_rejected_with_a_hint(tmp_path):
    with pytest.raises(BuildError, match=r"train.json, line 1: \"cop\" must be 1-4.*Hugging Face"):
        collect(write_split(tmp_path, [row("EEG?", cop=0)]))


def test_invalid_json_names_file_and_line(tmp_path):
    with pytest.raises(BuildError, match=r"dev.json, line 2: invalid JSON"):
        collect(write_split(tmp_path, [row("EEG?"), "{not json"], name="dev.json"))


def test_duplicate_question_ids_across_splits_are_rejected(tmp_path):
    write_split(tmp_path, [row("EEG?", id="same")], name="train.json")
    write_split(tmp_path, [row("EEG again?", id="same")], name="dev.json")
    with pytest.raises(BuildError, match="already appears in train.json, line 1"):
        collect(tmp_path)


def test_a_folder_without_split_files_is_an_error(tmp_path):
    with pytest.raises(BuildError, match="no MedMCQA split file"):
        collect(tmp_path)
