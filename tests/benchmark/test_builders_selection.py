"""Difficulty screening from panel runs and deterministic class balancing (paper §6.1)."""

import json

import pytest

from benchmark.builders import bonn
from benchmark.builders.base import BuildError, Candidate
from benchmark.builders.selection import (
    balance,
    class_counts,
    is_correct,
    read_panel_runs,
    screen,
    solve_rates,
)


def seizure_record(index: int, events) -> Candidate:
    label = "seizure" if events else "no_seizure"
    return Candidate(task_id="T5", scenario_id=f"c1_seizure_chb{index % 24 + 1:02d}_{index:03d}", label=label,
                     gold={"label": label, "has_seizure": bool(events), "n_seizures": len(events),
                           "seizure_events": events},
                     metadata={}, input={}, data_name=f"chbmit/{index}.edf", write=lambda path: None)


def labelled(task_id: str, prefix: str, label: str, index: int) -> Candidate:
    return Candidate(task_id=task_id, scenario_id=f"{prefix}{index:03d}", label=label,
                     gold={"label": label, "finding_tags": []}, metadata={}, input={})


def write_runs(path, answers: dict[str, dict], status: str = "completed"):
    path.write_text("".join(json.dumps({"scenario_id": scenario_id, "status": status, "invalid": False,
                                        "prediction": prediction}) + "\n"
                            for scenario_id, prediction in answers.items()))
    return path


def test_t5_pool_shaped_like_the_papers_balances_to_140_each():
    positives = [seizure_record(i, [[100.0, 140.0]]) for i in range(140)]
    negatives = [seizure_record(1000 + i, []) for i in range(529)]
    kept = balance(positives + negatives)
    assert class_counts(kept) == {"seizure": 140, "no_seizure": 140}
    assert kept == balance(list(reversed(positives + negatives)))[::-1]


def test_screening_removes_exactly_the_instances_solved_at_rate_0_9_or_more(tmp_path):
    pool = [labelled("T4", "c3_cohort_ds004504_sub-", "AD", i) for i in range(10)]
    right = {c.scenario_id: {"classification": "AD"} for c in pool}
    wrong = {c.scenario_id: {"classification": "HC"} for c in pool}
    # Five panel models; instance i is solved by the first (i % 6) of them, so 5/5 only for i = 5.
    panel_files = []
    for model in range(5):
        answers = {c.scenario_id: (right if model < i % 6 else wrong)[c.scenario_id] for i, c in enumerate(pool)}
        panel_files.append(write_runs(tmp_path / f"model{model}.jsonl", answers))
    rates = solve_rates(pool, read_panel_runs(panel_files))
    assert rates[pool[5].scenario_id] == 1.0 and rates[pool[4].scenario_id] == 0.8
    kept = screen(pool, rates)
    assert [c.scenario_id for c in pool if c not in kept] == [pool[5].scenario_id]


def test_missing_and_failed_rows_count_as_unsolved(tmp_path):
    pool = [labelled("T3", "c3_routine_bonn_S", "epileptic", i) for i in range(2)]
    solved = write_runs(tmp_path / "a.jsonl", {c.scenario_id: {"classification": "epileptic"} for c in pool})
    failed = write_runs(tmp_path / "b.jsonl", {pool[0].scenario_id: {"classification": "epileptic"}},
                        status="failed")
    rates = solve_rates(pool, read_panel_runs([solved, failed]))
    assert rates == {pool[0].scenario_id: 0.5, pool[1].scenario_id: 0.5}


def test_a_panel_file_covering_none_of_the_candidates_is_an_error(tmp_path):
    pool = [labelled("T3", "c3_routine_bonn_S", "epileptic", 1)]
    other = write_runs(tmp_path / "other.jsonl", {"c3_routine_bonn_Z999": {"classification": "normal"}})
    with pytest.raises(BuildError, match="other.jsonl holds no result"):
        solve_rates(pool, read_panel_runs([other]), names=[str(other)])


def test_malformed_runs_file_names_the_line(tmp_path):
    bad = tmp_path / "runs.jsonl"
    bad.write_text('{"scenario_id": "a", "status": "completed"}\nnot json\n')
    with pytest.raises(BuildError, match=r"runs.jsonl, line 2"):
        read_panel_runs([bad])


@pytest.mark.parametrize("prediction,solved", [
    ({"seizure_events": [{"onset_sec": 100, "offset_sec": 140}]}, True),
    ({"seizure_events": [[110, 150]]}, True),          # Dice 0.75
    ({"seizure_events": [[130, 200]]}, False),         # Dice 2*10/(40+70) = 0.18
    ({"seizure_events": []}, False),
    ({}, False),
])
def test_t5_positive_needs_dice_of_at_least_0_30(prediction, solved):
    assert is_correct(seizure_record(1, [[100.0, 140.0]]), prediction) is solved


@pytest.mark.parametrize("prediction,solved", [
    ({"seizure_events": []}, True),
    ({"seizure_events": [[5, 6]]}, False),
    ({"seizure_events": "none"}, True),
])
def test_t5_negative_is_solved_only_without_any_alarm(prediction, solved):
    assert is_correct(seizure_record(2, []), prediction) is solved


def test_t1_correctness_uses_the_official_letter_normalisation():
    candidate = Candidate(task_id="T1", scenario_id="k0_medmcqa_x", label="C",
                          gold={"answer": "C", "answer_text": "Delta"}, metadata={},
                          input={"options": {"A": "Alpha", "B": "Beta", "C": "Delta", "D": "Theta"}})
    assert is_correct(candidate, {"answer": "(c)"})
    assert is_correct(candidate, {"answer": "delta"})
    assert not is_correct(candidate, {"answer": "B"})


def test_balancing_removes_the_easiest_first_and_breaks_ties_by_hash():
    pool = [labelled("T4", "s", "AD", i) for i in range(4)] + [labelled("T4", "s", "HC", 10 + i) for i in range(2)]
    rates = {"s000": 0.8, "s001": 0.0, "s002": 0.6, "s003": 0.0}
    kept = balance(pool, rates=rates)
    assert [c.scenario_id for c in kept if c.label == "AD"] == ["s001", "s003"]
    assert balance(pool) == balance(pool)


def test_paper_shaped_t4_pool_gives_23_per_class(tmp_path):
    pool = ([labelled("T4", "a", "AD", i) for i in range(36)] + [labelled("T4", "h", "HC", i) for i in range(29)]
            + [labelled("T4", "f", "FTD", i) for i in range(23)])
    easy = [c.scenario_id for c in pool if c.label != "FTD"][::5][:13]
    answers = {c.scenario_id: {"classification": c.label if c.scenario_id in easy else "FTD"} for c in pool
               if c.label != "FTD"}
    panel = read_panel_runs([write_runs(tmp_path / f"m{i}.jsonl", answers) for i in range(5)])
    rates = solve_rates(pool, panel)
    screened = screen(pool, rates)
    assert len(screened) == 75
    assert class_counts(balance(screened, rates=rates)) == {"AD": 23, "HC": 23, "FTD": 23}


def test_paper_shaped_bonn_pool_gives_z47_o47_s94():
    pool = [labelled("T3", f"c3_routine_bonn_{s}", "epileptic" if s == "S" else "normal", i)
            for s, n in (("Z", 78), ("O", 77), ("S", 94)) for i in range(1, n + 1)]
    kept = balance(pool, group_of=bonn.balance_group, targets=bonn.balance_targets)
    assert class_counts(kept, bonn.balance_group) == {"Z": 47, "O": 47, "S": 94}


@pytest.mark.parametrize("targets,message", [
    ({"AD": 1, "XX": 1}, "no candidates of XX"),
    ({"AD": 1}, "no target for HC"),
    ({"AD": 5, "HC": 1}, "exceeds the 4 candidates"),
])
def test_rejects_unusable_targets(targets, message):
    pool = [labelled("T4", "s", "AD", i) for i in range(4)] + [labelled("T4", "s", "HC", 10 + i) for i in range(2)]
    with pytest.raises(BuildError, match=message):
        balance(pool, targets=targets)


def test_the_threshold_is_inclusive_at_0_9():
    pool = [labelled("T3", "c3_routine_bonn_S", "epileptic", i) for i in range(3)]
    rates = {pool[0].scenario_id: 0.9, pool[1].scenario_id: 0.89, pool[2].scenario_id: 1.0}
    assert screen(pool, rates) == [pool[1]]
