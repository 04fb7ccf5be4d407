"""``manage.py score`` on the official answer keys and on malformed input."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.datafiles import OFFICIAL as UPSTREAM



def _score(scenarios, key, predictions):
    out = StringIO()
    call_command("score", scenarios=str(scenarios), answer_key=str(key), predictions=str(predictions), stdout=out)
    return json.loads(out.getvalue())


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _gold_lines(task):
    return [json.loads(line) for line in (UPSTREAM / "answer_keys" / f"{task}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task, answer_field, gold_field, count", [
    ("T1", "answer", "answer", 38), ("T2", "classification", "label", 300),
    ("T3", "classification", "label", 188), ("T4", "classification", "label", 69),
])
def test_gold_answers_score_perfectly_and_officially(tmp_path, task, answer_field, gold_field, count):
    predictions = _write_jsonl(tmp_path / "runs.jsonl", [
        {"scenario_id": row["scenario_id"], "status": "completed",
         "prediction": {"action": "final_answer", answer_field: row["gold"][gold_field]}, "usage": {}}
        for row in _gold_lines(task)
    ])
    result = _score(UPSTREAM / "scenarios" / f"{task}.jsonl", UPSTREAM / "answer_keys" / f"{task}.jsonl", predictions)
    assert result["official"] is True
    assert result["n_items"] == count
    assert result["metrics"]["accuracy"] == 1.0
    assert result["metrics"].get("macro_f1", 1.0) == 1.0


def test_always_answering_a_on_t1_scores_0_395(tmp_path):
    predictions = _write_jsonl(tmp_path / "runs.jsonl", [
        {"scenario_id": row["scenario_id"], "prediction": {"answer": "A"}} for row in _gold_lines("T1")
    ])
    result = _score(UPSTREAM / "scenarios" / "T1.jsonl", UPSTREAM / "answer_keys" / "T1.jsonl", predictions)
    assert round(result["metrics"]["accuracy"], 3) == 0.395


def test_missing_prediction_lines_score_empty_and_are_not_official(tmp_path):
    rows = _gold_lines("T3")
    predictions = _write_jsonl(tmp_path / "runs.jsonl", [
        {"scenario_id": row["scenario_id"], "prediction": {"classification": row["gold"]["label"]}} for row in rows[:-10]
    ])
    result = _score(UPSTREAM / "scenarios" / "T3.jsonl", UPSTREAM / "answer_keys" / "T3.jsonl", predictions)
    assert result["official"] is False
    assert result["completeness"]["missing"] == 10
    assert result["metrics"]["accuracy"] == pytest.approx(178 / 188)
    assert result["metrics"]["invalid_predictions"] == 10


def _t5_scenarios(tmp_path, rows):
    """The official T5 scenario file is not copied beside us: rebuild the lines scoring reads."""
    scenarios = []
    for row in rows:
        last_offset = max((event[1] for event in row["gold"]["seizure_events"]), default=0.0)
        duration = max(3600.0, float(last_offset) + 10.0)
        scenarios.append({"scenario_id": row["scenario_id"], "task_id": "T5",
                          "records": [{"record_id": "EEG_X", "role": "target", "metadata": {"duration_sec": duration}}]})
    return _write_jsonl(tmp_path / "T5_scenarios.jsonl", scenarios)


def test_t5_official_answer_key_scored_against_itself(tmp_path):
    rows = _gold_lines("T5")
    predictions = _write_jsonl(tmp_path / "runs.jsonl", [
        {"scenario_id": row["scenario_id"], "status": "completed",
         "prediction": {"seizure_events": [{"onset_sec": a, "offset_sec": b} for a, b in row["gold"]["seizure_events"]]}}
        for row in rows
    ])
    result = _score(_t5_scenarios(tmp_path, rows), UPSTREAM / "answer_keys" / "T5.jsonl", predictions)
    metrics = result["metrics"]
    assert result["official"] is True
    assert (metrics["event_f1"], metrics["dice_s"], metrics["miss_rate"], metrics["over_alarm_rate"]) == (1.0, 1.0, 0.0, 0.0)
    assert metrics["n_subjects"] == 24
    assert (metrics["n_positive"], metrics["n_negative"]) == (140, 140)
    assert sum(len(row["gold"]["seizure_events"]) for row in rows) == 197
    assert sum(item["n_gold_processed"] for item in result["per_item"]) == 199
    chb11_99 = next(item for item in result["per_item"] if item["scenario_id"].endswith("chb11_99"))
    assert chb11_99["n_gold_processed"] == 3


def test_t5_silence_everywhere_scores_zero_event_f1(tmp_path):
    rows = _gold_lines("T5")
    predictions = _write_jsonl(tmp_path / "runs.jsonl", [
        {"scenario_id": row["scenario_id"], "prediction": {"seizure_events": []}} for row in rows
    ])
    metrics = _score(_t5_scenarios(tmp_path, rows), UPSTREAM / "answer_keys" / "T5.jsonl", predictions)["metrics"]
    assert (metrics["event_f1"], metrics["dice_s"], metrics["miss_rate"], metrics["over_alarm_rate"]) == (0.0, 0.0, 1.0, 0.0)


def test_paper_worked_examples_through_the_command(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [
        {"scenario_id": "c1_seizure_chb15_40", "task_id": "T5", "records": [{"metadata": {"duration_sec": 3600.0}}]},
    ])
    key = _write_jsonl(tmp_path / "k.jsonl", [
        {"scenario_id": "c1_seizure_chb15_40", "gold": {"seizure_events": [[834, 894], [2378, 2497], [3362, 3425]]}},
    ])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [
        {"scenario_id": "c1_seizure_chb15_40", "prediction": {"seizure_events": [[2354, 2500], [3358, 3426]]}},
    ])
    result = _score(scenarios, key, predictions)
    assert result["task_id"] == "T5"
    assert result["official"] is False
    assert result["metrics"]["event_f1"] == pytest.approx(0.8)
    assert round(result["metrics"]["dice_s"], 3) == 0.798
    assert result["metrics"]["fp_per_24h"] == 0.0


def test_t6_epoch_count_from_answer_key(tmp_path):
    labels = ["W"] * 3 + ["N2"] * 5 + ["REM"] * 2
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [{"scenario_id": "c3_sleep_sc_SC4001E0", "task_id": "T6"}])
    key = _write_jsonl(tmp_path / "k.jsonl", [
        {"scenario_id": "c3_sleep_sc_SC4001E0", "gold": {"epoch_labels_aasm": labels, "n_epochs_total": 10}},
    ])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [{"scenario_id": "c3_sleep_sc_SC4001E0", "prediction": {
        "hypnogram_rle": [{"start_epoch": 0, "end_epoch": 2, "stage": "W"}, {"start_epoch": 3, "end_epoch": 7, "stage": "N2"},
                          {"start_epoch": 8, "end_epoch": 9, "stage": "R"}]}}])
    result = _score(scenarios, key, predictions)
    assert result["metrics"]["macro_f1"] == pytest.approx(0.6)  # N1 and N3 absent: 3 of 5 stages
    assert result["metrics"]["cohen_kappa"] == 1.0


def test_a_retried_scenario_keeps_its_completed_row(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [{"scenario_id": "c3_routine_bonn_S001", "task_id": "T3"}])
    key = _write_jsonl(tmp_path / "k.jsonl", [{"scenario_id": "c3_routine_bonn_S001", "gold": {"label": "epileptic"}}])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [
        {"scenario_id": "c3_routine_bonn_S001", "status": "failed", "prediction": None},
        {"scenario_id": "c3_routine_bonn_S001", "status": "completed", "prediction": {"classification": "epileptic"}},
        {"scenario_id": "c3_routine_bonn_S001", "status": "failed", "prediction": None},
    ])
    result = _score(scenarios, key, predictions)
    assert result["metrics"]["accuracy"] == 1.0
    assert result["completeness"]["noncompleted"] == 0


def test_a_row_without_a_status_is_not_completed(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [{"scenario_id": "c3_routine_bonn_S001", "task_id": "T3"}])
    key = _write_jsonl(tmp_path / "k.jsonl", [{"scenario_id": "c3_routine_bonn_S001", "gold": {"label": "epileptic"}}])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [
        {"scenario_id": "c3_routine_bonn_S001", "prediction": {"classification": "epileptic"}},
    ])
    result = _score(scenarios, key, predictions)
    assert result["metrics"]["accuracy"] == 1.0  # scored, as upstream scores every row ...
    assert result["completeness"]["noncompleted"] == 1  # ... but, as upstream, not a completed one


@pytest.mark.parametrize("which, content, message", [
    ("predictions", '{"scenario_id": "x", "prediction": {}}\n{not json\n', "p.jsonl, line 2: invalid JSON"),
    ("predictions", '[1, 2]\n', "p.jsonl, line 1: expected a JSON object"),
    ("predictions", '{"prediction": {}}\n', "p.jsonl, line 1: missing or empty \"scenario_id\""),
    ("answer_key", '{"scenario_id": "c3_routine_bonn_S001", "gold": "epileptic"}\n', "k.jsonl, line 1: \"gold\" must be"),
    ("scenarios", '{"scenario_id": "a", "task_id": "T9"}\n', "s.jsonl, line 1: \"task_id\" must be one of"),
    ("scenarios", '{"scenario_id": "c3_routine_bonn_S001", "task_id": "T3"}\n' * 2, "s.jsonl, line 2: scenario"),
])
def test_malformed_line_is_reported_with_file_and_line_and_nothing_is_printed(tmp_path, which, content, message):
    files = {
        "scenarios": tmp_path / "s.jsonl", "answer_key": tmp_path / "k.jsonl", "predictions": tmp_path / "p.jsonl",
    }
    _write_jsonl(files["scenarios"], [{"scenario_id": "c3_routine_bonn_S001", "task_id": "T3"}])
    _write_jsonl(files["answer_key"], [{"scenario_id": "c3_routine_bonn_S001", "gold": {"label": "epileptic"}}])
    _write_jsonl(files["predictions"], [])
    files[which].write_text(content, encoding="utf-8")
    out = StringIO()
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("score", scenarios=str(files["scenarios"]), answer_key=str(files["answer_key"]),
                     predictions=str(files["predictions"]), stdout=out)
    assert out.getvalue() == ""


def test_t5_scenario_without_duration_is_an_error(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [{"scenario_id": "c1_seizure_chb01_03", "task_id": "T5"}])
    key = _write_jsonl(tmp_path / "k.jsonl", [{"scenario_id": "c1_seizure_chb01_03", "gold": {"seizure_events": []}}])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(CommandError, match="s.jsonl, line 1: T5 scenario c1_seizure_chb01_03 has no positive duration_sec"):
        _score(scenarios, key, predictions)


def test_scenario_without_answer_key_line_is_an_error(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [{"scenario_id": "c3_routine_bonn_S001", "task_id": "T3"}])
    key = _write_jsonl(tmp_path / "k.jsonl", [])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(CommandError, match="has no line in the answer key"):
        _score(scenarios, key, predictions)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        _score(tmp_path / "absent.jsonl", tmp_path / "k.jsonl", tmp_path / "p.jsonl")


def test_t5_duration_too_large_for_a_float_is_an_error_not_a_crash(tmp_path):
    scenarios = _write_jsonl(tmp_path / "s.jsonl", [])
    scenarios.write_text('{"scenario_id": "c1_seizure_chb01_03", "task_id": "T5", "records": '
                         '[{"metadata": {"duration_sec": 1' + "0" * 400 + '}}]}\n', encoding="utf-8")
    key = _write_jsonl(tmp_path / "k.jsonl", [{"scenario_id": "c1_seizure_chb01_03", "gold": {"seizure_events": []}}])
    predictions = _write_jsonl(tmp_path / "p.jsonl", [])
    with pytest.raises(CommandError, match="has no positive duration_sec"):
        _score(scenarios, key, predictions)
