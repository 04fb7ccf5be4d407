"""One test per rule of the official scorer (REFERENCE §3), named after the rule."""

import math

import pytest

from benchmark.scoring import ScoringItem, benchmark_summary, overall, score_task
from benchmark.scoring.classification import (
    classification_metrics,
    normalise_artifact_label,
    normalise_class_label,
    normalise_option_letter,
)
from benchmark.scoring.hypnogram import (
    architecture,
    architecture_error,
    cohen_kappa,
    expand_rle,
    macro_f1,
    transition_accuracy,
)
from benchmark.scoring.seizure import (
    aggregate_by_subject,
    merge_close_events,
    parse_events,
    parse_raw_events,
    score_record_events,
    split_long_events,
    subject_of,
    temporal_dice,
)

OPTIONS = {"A": "Hypsarrythmia", "B": "1-2 Hz spike & wave", "C": "3 Hz spike & wave", "D": "Generalized polyspikes"}


# --- T1 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, letter", [
    ("B", "B"), ("(b)", "B"), ("B.", "B"), (" c ", "C"), ("( d )", "D"),
])
def test_t1_bare_or_parenthesised_letter(raw, letter):
    assert normalise_option_letter(raw, OPTIONS) == letter


@pytest.mark.parametrize("raw, letter", [
    ("B) 1-2 Hz", "B"), ("C. 3 Hz spike", "C"), ("D: polyspikes", "D"), ("Option C", "C"), ("option a ", "A"),
])
def test_t1_leading_letter_token(raw, letter):
    assert normalise_option_letter(raw, OPTIONS) == letter


def test_t1_exact_option_text_match_is_casefolded_and_whitespace_collapsed():
    assert normalise_option_letter("  3 HZ   spike & WAVE ", OPTIONS) == "C"


def test_t1_contained_option_text_match():
    assert normalise_option_letter("The answer is generalized polyspikes here", OPTIONS) == "D"


def test_t1_first_standalone_letter_of_uppercased_text_reads_article_a_as_A():
    assert normalise_option_letter("it is a typical finding", {"A": "x1", "B": "x2"}) == "A"
    assert normalise_option_letter("I would say b", None) == "B"
    assert normalise_option_letter("I'd say b", None) == "D"  # the apostrophe leaves D standalone


@pytest.mark.parametrize("raw", [None, "", "   ", "no idea", "Delta waves", 17])
def test_t1_unrecoverable_answer_is_invalid(raw):
    assert normalise_option_letter(raw, OPTIONS) == ""


def test_t1_reads_only_the_answer_field_and_counts_invalid_as_wrong():
    items = [
        ScoringItem("q1", {"answer": "A"}, {"answer": "A"}, options=OPTIONS),
        ScoringItem("q2", {"answer": "B"}, {"classification": "B"}, options=OPTIONS),
        ScoringItem("q3", {"answer": "c"}, {"answer": "C"}, options=OPTIONS),
        ScoringItem("q4", {"answer": "D"}, None, submitted=False, options=OPTIONS),
    ]
    summary = score_task("T1", items)
    assert summary["metrics"]["accuracy"] == 0.5
    assert summary["metrics"]["invalid_predictions"] == 2
    assert summary["metrics"]["confusion"]["B"]["__invalid__"] == 1


# --- T2-T4 --------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, label", [
    ("clean", "clean"), ("Normal", "clean"), ("none", "clean"), ("no artifact", "clean"), ("no-artifact", "clean"),
    ("ocular", "ocular_contaminated"), ("EOG", "ocular_contaminated"), ("eye movement", "ocular_contaminated"),
    ("eyeblink", "ocular_contaminated"), ("blink", "ocular_contaminated"),
    ("muscle", "muscle_contaminated"), ("EMG", "muscle_contaminated"), ("myogenic", "muscle_contaminated"),
    ("Ocular_Contaminated (EOG)", "ocular_contaminated"), ("emg artifact", "muscle_contaminated"),
    ("muscle-contaminated", "muscle_contaminated"), ("electrode pop", ""), ("", ""), (None, ""),
])
def test_t2_label_aliases(raw, label):
    assert normalise_artifact_label(raw) == label


@pytest.mark.parametrize("task, raw, label", [
    ("T3", " Epileptic ", "epileptic"), ("T3", "NORMAL", "normal"), ("T3", "seizure", ""),
    ("T3", "epileptic seizure", ""), ("T4", "ad", "AD"), ("T4", "ftd", "FTD"), ("T4", "Hc", "HC"),
    ("T4", "Alzheimer", ""), ("T4", None, ""),
])
def test_t3_t4_labels_match_case_insensitively_and_exactly(task, raw, label):
    assert normalise_class_label(task, raw) == label


def test_t2_t4_macro_f1_is_pooled_with_invalid_answers_as_misses():
    pairs = [("AD", "AD"), ("AD", ""), ("FTD", "AD"), ("FTD", "FTD"), ("HC", "HC"), ("HC", "")]
    result = classification_metrics(pairs, ("AD", "FTD", "HC"))
    # AD: tp1 fp1 fn1 -> 0.5; FTD: tp1 fp0 fn1 -> 2/3; HC: tp1 fp0 fn1 -> 2/3
    assert result["macro_f1"] == pytest.approx((0.5 + 2 / 3 + 2 / 3) / 3)
    assert result["accuracy"] == pytest.approx(3 / 6)
    assert result["invalid_predictions"] == 2
    assert set(result["per_class"]) == {"AD", "FTD", "HC"}


def test_always_one_class_on_balanced_t4_gives_macro_f1_one_sixth():
    pairs = [(label, "AD") for label in ("AD", "FTD", "HC") for _ in range(23)]
    assert classification_metrics(pairs, ("AD", "FTD", "HC"))["macro_f1"] == pytest.approx(1 / 6)


def test_label_key_instead_of_classification_is_a_missing_answer():
    items = [ScoringItem("s1", {"label": "normal"}, {"label": "normal"}),
             ScoringItem("s2", {"label": "epileptic"}, {"classification": "epileptic"})]
    summary = score_task("T3", items)
    assert summary["metrics"]["accuracy"] == 0.5
    assert summary["per_item"][0]["predicted"] == ""


# --- T5 -----------------------------------------------------------------------------------------

def test_t5_paper_worked_example_event_f1_and_dice():
    reference = [[834, 894], [2378, 2497], [3362, 3425]]
    predicted = [[2354, 2500], [3358, 3426]]
    record = score_record_events(reference, predicted, 3600.0)
    assert (record["tp"], record["fp"], record["fn"]) == (2, 0, 1)
    assert record["event_f1"] == pytest.approx(0.80)
    assert round(temporal_dice(parse_raw_events(reference), parse_raw_events(predicted)), 3) == 0.798


def test_t5_events_as_objects_or_pairs_with_all_key_spellings():
    raw = [{"onset_sec": 1, "offset_sec": 2}, {"onset": 3, "offset": 4}, {"start_sec": 5, "end_sec": 6},
           {"start": 7, "end": 8}, [9, 10], (11, 12, "extra")]
    intervals, warnings = parse_events(raw, 100.0)
    assert intervals == [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0), (9.0, 10.0), (11.0, 12.0)]
    assert warnings == []


def test_t5_non_finite_events_are_dropped_and_reversed_pairs_swapped_with_warnings():
    intervals, warnings = parse_events([[20, 10], [float("nan"), 3], ["x", 4], {"onset_sec": None}], 100.0)
    assert intervals == [(10.0, 20.0)]
    assert warnings[0] == "event[0] boundaries swapped"
    assert len(warnings) == 4


def test_t5_clip_then_quantise_to_tenth_of_second_half_even():
    intervals, _ = parse_events([[-5, 0.25], [0.45, 1.04], [12.25, 13], [99.94, 150]], 100.0)
    # 0.25 / 0.1 == 2.5 and 0.45 / 0.1 == 4.5 round half to even; 12.25 / 0.1 == 122.5 -> 122
    assert intervals == [(0.0, 0.2), (0.4, 1.0), (122 * 0.1, 13.0), (99.9, 100.0)]


def test_t5_interval_empty_after_clipping_is_dropped():
    intervals, warnings = parse_events([[200, 300], [5.01, 5.04]], 100.0)
    assert intervals == []
    assert len(warnings) == 2


def test_t5_merge_gaps_strictly_below_90_seconds():
    assert merge_close_events([(0, 10), (99.9, 110)], 90.0) == [(0, 110)]
    assert merge_close_events([(0, 10), (100, 110)], 90.0) == [(0, 10), (100, 110)]


def test_t5_split_events_longer_than_300_seconds():
    assert split_long_events([(0, 752)], 300.0) == [(0, 300), (300, 600), (600, 752)]
    assert split_long_events([(0, 300)], 300.0) == [(0, 300)]


def test_t5_reference_extended_30_before_60_after_and_touching_does_not_count():
    # reference [100, 110] extends to [70, 170]
    assert score_record_events([[100, 110]], [[169, 175]], 1000.0)["tp"] == 1
    touching = score_record_events([[100, 110]], [[170, 175]], 1000.0)
    assert (touching["tp"], touching["fp"], touching["fn"]) == (0, 1, 1)
    assert score_record_events([[100, 110]], [[60, 70.5]], 1000.0)["tp"] == 1


def test_t5_matching_is_many_to_many():
    record = score_record_events([[1000, 1010], [1200, 1210]], [[990, 1220]], 5000.0)
    assert (record["tp"], record["fp"], record["fn"]) == (2, 0, 0)
    several = score_record_events([[1000, 1100]], [[1000, 1001], [1050, 1051], [1150, 1151]], 5000.0)
    assert several["n_pred_processed"] == 2  # the first two merge (gap < 90 s), the third does not
    assert (several["tp"], several["fp"], several["fn"]) == (1, 0, 0)


def test_t5_event_f1_is_none_when_there_is_nothing_to_count():
    assert score_record_events([], [], 3600.0)["event_f1"] is None


def test_t5_invalid_reference_raises():
    with pytest.raises(ValueError, match="invalid reference"):
        score_record_events([[10, 5]], [], 100.0)


@pytest.mark.parametrize("scenario_id, subject", [
    ("c1_seizure_chb17a_03", "chb17"), ("c1_seizure_chb17b_63", "chb17"), ("c1_seizure_chb17c_06", "chb17"),
    ("c1_seizure_CHB01_03", "chb01"), ("chb24/chb24_01", "chb24"),
])
def test_t5_subject_from_scenario_id_merges_chb17_abc(scenario_id, subject):
    assert subject_of(scenario_id) == subject


def test_t5_counts_summed_per_subject_then_f1_averaged_over_subjects():
    records = [
        {"subject": "chb01", "tp": 1, "fp": 0, "fn": 0, "duration_sec": 3600.0},
        {"subject": "chb01", "tp": 0, "fp": 2, "fn": 1, "duration_sec": 3600.0},
        {"subject": "chb02", "tp": 0, "fp": 0, "fn": 0, "duration_sec": 7200.0},
        {"subject": "chb03", "tp": 2, "fp": 0, "fn": 0, "duration_sec": 3600.0},
    ]
    average = aggregate_by_subject(records)["subject_average"]
    # chb01: 2/(2+2+1)=0.4; chb02 undefined (skipped); chb03: 1.0
    assert average["event_f1"] == pytest.approx(0.7)
    assert average["event_f1_n"] == 2
    assert average["fp_per_24h"] == pytest.approx((2 / (7200 / 86400) + 0 + 0) / 3)
    assert average["event_f1_std"] == pytest.approx(0.3)


def test_t5_dice_uses_raw_unions_without_tolerance():
    assert temporal_dice([(0, 10)], [(0, 5), (3, 10)]) == 1.0
    assert temporal_dice([(0, 10)], [(10, 20)]) == 0.0
    assert temporal_dice([], []) == 1.0
    assert temporal_dice([(0, 10)], []) == 0.0
    assert temporal_dice([(0, 10)], [(0, 3600)]) == pytest.approx(20 / 3610)


def test_t5_dice_stays_finite_with_non_finite_prediction():
    raw = parse_raw_events([[10, 20], [float("nan"), 30], [float("inf"), 5]])
    assert raw == [(10.0, 20.0)]
    assert math.isfinite(temporal_dice([(10, 20)], raw))


def _t5_items(predictions):
    gold = {"c1_seizure_chb01_03": [[100, 160]], "c1_seizure_chb01_04": [],
            "c1_seizure_chb02_16": [[500, 520]], "c1_seizure_chb02_17": []}
    return [ScoringItem(sid, {"seizure_events": events}, {"seizure_events": predictions.get(sid, [])},
                        duration_sec=3600.0) for sid, events in gold.items()]


def test_t5_miss_rate_counts_positives_with_no_touching_prediction():
    summary = score_task("T5", _t5_items({"c1_seizure_chb01_03": [[160, 170]], "c1_seizure_chb02_16": [[0, 10]]}))
    assert summary["metrics"]["miss_rate"] == 0.5


def test_t5_over_alarm_rate_counts_negatives_with_any_prediction():
    summary = score_task("T5", _t5_items({"c1_seizure_chb01_04": [[5, 6]]}))
    assert summary["metrics"]["over_alarm_rate"] == 0.5
    assert summary["metrics"]["dice_s"] == 0.0


def test_t5_empty_event_list_is_a_valid_no_seizure_answer():
    summary = score_task("T5", _t5_items({}))
    assert summary["metrics"]["event_f1"] == 0.0
    assert summary["metrics"]["over_alarm_rate"] == 0.0
    assert summary["metrics"]["miss_rate"] == 1.0


# --- T6 -----------------------------------------------------------------------------------------

def _rows(*triples):
    return [{"start_epoch": a, "end_epoch": b, "stage": s} for a, b, s in triples]


def test_t6_paper_worked_example_architecture():
    rle = [(0, 200, "W"), (201, 216, "N1"), (217, 228, "N2"), (229, 235, "N1"), (236, 245, "N2"),
           (246, 251, "N1"), (252, 285, "N2"), (286, 346, "N3"), (347, 351, "N2"), (352, 359, "REM"),
           (360, 364, "N1"), (365, 383, "N2"), (384, 388, "W"), (389, 399, "N1"), (400, 443, "N2"),
           (444, 499, "REM"), (500, 503, "N1"), (504, 539, "N2"), (540, 567, "N3"), (568, 677, "N2"),
           (678, 692, "REM"), (693, 703, "N2"), (704, 725, "REM"), (726, 727, "N1"), (728, 777, "N2"),
           (778, 810, "REM"), (811, 821, "N1"), (822, 843, "N2"), (844, 895, "N3"), (896, 995, "N2"),
           (996, 1049, "REM"), (1050, 1157, "N2"), (1158, 1187, "REM"), (1188, 1507, "W")]
    expanded = expand_rle(_rows(*rle), 1508)
    assert expanded.coverage == 1.0
    figures = {key: round(value, 6) for key, value in architecture(expanded.labels).items()}
    assert figures == {"REM_pct": 0.144562, "N3_pct": 0.093501, "sleep_efficiency": 0.651194}


def test_t6_rle_skips_malformed_rows():
    rle = ["W", {"start_epoch": "x", "end_epoch": 3, "stage": "N2"}, {"start_epoch": 0, "end_epoch": 1, "stage": "N5"},
           {"start_epoch": -1, "end_epoch": 1, "stage": "N2"}, {"start_epoch": 3, "end_epoch": 2, "stage": "N2"},
           {"end_epoch": 2, "stage": "N2"}, {"start_epoch": None, "end_epoch": 2, "stage": "N2"},
           {"start_epoch": float("inf"), "end_epoch": 2, "stage": "N2"}]
    expanded = expand_rle(rle, 4)
    assert expanded.labels == ["W"] * 4
    assert expanded.n_valid_segments == 0
    assert expanded.coverage == 0.0


def test_t6_rle_accepts_int_coercible_bounds():
    expanded = expand_rle(_rows((0.0, 1.9, "N2"), ("2", "3", "REM")), 4)
    assert expanded.labels == ["N2", "N2", "REM", "REM"]


@pytest.mark.parametrize("raw, stage", [
    ("w", "W"), ("Wake", "W"), ("0", "W"), (0, "W"), ("1", "N1"), ("S1", "N1"), ("stage 1", "N1"), ("n2", "N2"),
    ("S2", "N2"), ("Stage 2", "N2"), (3, "N3"), ("4", "N3"), ("S3", "N3"), ("S4", "N3"), ("STAGE 3", "N3"),
    ("Stage 4", "N3"), ("r", "REM"), ("rem", "REM"), ("Stage R", "REM"),
])
def test_t6_stage_aliases(raw, stage):
    assert expand_rle([{"start_epoch": 0, "end_epoch": 0, "stage": raw}], 1).labels == [stage]


def test_t6_end_truncated_and_start_past_end_clamped_onto_last_epoch():
    assert expand_rle(_rows((2, 100, "N2")), 4).labels == ["W", "W", "N2", "N2"]
    assert expand_rle(_rows((10, 20, "REM")), 4).labels == ["W", "W", "W", "REM"]


def test_t6_later_rows_overwrite_and_gaps_are_wake():
    assert expand_rle(_rows((0, 3, "N2"), (1, 1, "REM"), (5, 5, "N3")), 6).labels == \
        ["N2", "REM", "N2", "N2", "W", "N3"]


def test_t6_empty_or_missing_rle_is_all_wake():
    assert expand_rle([], 3).labels == ["W"] * 3
    assert expand_rle(None, 3).labels == ["W"] * 3
    assert expand_rle({"start_epoch": 0}, 3).labels == ["W"] * 3


def test_t6_macro_f1_counts_stages_absent_from_both_as_zero():
    labels = ["W", "N1", "N2", "REM"] * 5
    assert macro_f1(labels, labels) == pytest.approx(0.8)


def test_t6_cohen_kappa():
    reference = ["W", "W", "N2", "N2", "REM", "N3"]
    predicted = ["W", "N2", "N2", "N2", "REM", "W"]
    po = 4 / 6
    pe = (2 / 6) * (2 / 6) + (3 / 6) * (2 / 6) + (1 / 6) * (1 / 6)
    assert cohen_kappa(predicted, reference) == pytest.approx((po - pe) / (1 - pe))


def test_t6_cohen_kappa_degenerate_single_class():
    assert cohen_kappa(["W"] * 5, ["W"] * 5) == 1.0
    assert cohen_kappa(["N2"] * 5, ["N2"] * 5) == 1.0
    assert cohen_kappa([], []) == 0.0


def test_t6_metrics_are_averaged_per_record_not_pooled():
    night_a = {"epoch_labels_aasm": ["W", "N2"], "n_epochs_total": 2}
    night_b = {"epoch_labels_aasm": ["N2"] * 8, "n_epochs_total": 8}
    items = [
        ScoringItem("a", night_a, {"hypnogram_rle": _rows((0, 1, "W"))}, n_epochs=2),
        ScoringItem("b", night_b, {"hypnogram_rle": _rows((0, 7, "N2"))}, n_epochs=8),
    ]
    metrics = score_task("T6", items)["metrics"]
    assert metrics["macro_f1"] == pytest.approx(((2 / 3) / 5 + 1 / 5) / 2)
    assert metrics["cohen_kappa"] == pytest.approx((0.0 + 1.0) / 2)


def test_t6_prediction_aligned_to_reference_length():
    item = ScoringItem("a", {"epoch_labels_aasm": ["N2"] * 4, "n_epochs_total": 6},
                       {"hypnogram_rle": _rows((0, 5, "N2"))}, n_epochs=6)
    assert score_task("T6", [item])["per_item"][0]["n_epochs"] == 4


def test_t6_architecture_error_reads_percentages_and_falls_back_to_the_hypnogram():
    labels = ["W", "N2", "N3", "REM"]
    gold = {"REM_pct": 0.25, "N3_pct": 0.25, "sleep_efficiency": 0.75}
    assert architecture_error({"REM_pct": 25, "N3_pct": "25%", "sleep_efficiency": 0.75}, labels, gold, labels) == 0.0
    assert architecture_error(None, labels, gold, labels) == 0.0
    assert architecture_error({"REM_pct": 0.5}, labels, gold, labels) == pytest.approx(-0.25 / 3)


def test_t6_transition_accuracy():
    assert transition_accuracy(["W", "N1", "N2"], ["W", "N1", "N3"]) == 0.5


# --- completeness and Overall ------------------------------------------------------------------

def test_summary_is_official_only_with_every_instance_once_completed():
    items = [ScoringItem(f"q{i}", {"answer": "A"}, {"answer": "A"}, options=OPTIONS) for i in range(38)]
    assert score_task("T1", items)["official"] is True
    assert score_task("T1", items[:37])["official"] is False
    assert score_task("T1", items, extra=1)["official"] is False
    failed = [*items[:37], ScoringItem("q37", {"answer": "A"}, None, completed=False, options=OPTIONS)]
    summary = score_task("T1", failed)
    assert summary["official"] is False
    assert summary["completeness"]["noncompleted"] == 1
    assert "noncompleted=1" in summary["reasons"][0]


def test_t5_summary_requires_140_positive_and_140_negative_records():
    items = [ScoringItem(f"c1_seizure_chb{1 + i % 24:02d}_{i:03d}",
                         {"seizure_events": [[100, 150]] if i < 141 else []}, {"seizure_events": []},
                         duration_sec=3600.0) for i in range(280)]
    summary = score_task("T5", items)
    assert summary["official"] is False
    assert "141/139" in summary["reasons"][0]


def _official(task, score):
    return {"task_id": task, "official": True, "primary_score": score}


def test_overall_is_the_mean_of_six_official_primary_scores():
    summaries = {f"T{i}": _official(f"T{i}", i / 10) for i in range(1, 7)}
    assert overall(summaries) == pytest.approx(0.35)
    assert benchmark_summary(summaries)["official"] is True


def test_overall_is_undefined_unless_all_six_are_official():
    summaries = {f"T{i}": _official(f"T{i}", 0.5) for i in range(1, 6)}
    assert overall(summaries) is None
    summaries["T6"] = {"task_id": "T6", "official": False, "primary_score": 0.5}
    assert overall(summaries) is None
    assert benchmark_summary(summaries)["official"] is False
