"""Our scorer against the field's reference implementations on randomized cases.

Event-F1 counts against ``timescoring`` (the SzCORE reference scorer), macro-F1,
accuracy and Cohen's kappa against scikit-learn.
"""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score
from timescoring.annotations import Annotation
from timescoring.scoring import EventScoring

from benchmark.scoring import ScoringItem, score_task
from benchmark.scoring.classification import REFERENCE_CLASSES, classification_metrics
from benchmark.scoring.hypnogram import STAGES, cohen_kappa, macro_f1
from benchmark.scoring.seizure import aggregate_by_subject, score_record_events

FS = 10  # the SzCORE time resolution: 0.1 s


def _random_mask(rng, n_samples, n_events, max_len_samples):
    """A 10 Hz seizure mask of up to ``n_events`` random events, and its duration-safe events."""
    mask = np.zeros(n_samples, dtype=bool)
    for _ in range(n_events):
        length = int(rng.integers(10, max_len_samples))
        start = int(rng.integers(0, max(1, n_samples - length)))
        mask[start : start + length] = True
    return mask


def _events_on_exact_boundaries(events):
    """Gaps of exactly 90 s or lengths of exactly k x 300 s: both scorers then hinge on float
    rounding of the 0.1-s grid (SzCORE says nothing there), so such draws are redrawn."""
    for (_, end), (start, _) in zip(events, events[1:]):
        if abs((start - end) - 90.0) < 0.05:
            return True
    return any(abs(((b - a) / 300.0) - round((b - a) / 300.0)) * 300.0 < 0.05 and b - a >= 300 for a, b in events)


def _random_record(rng):
    duration_sec = int(rng.integers(12 * 60, 4 * 3600 + 1))
    n_samples = duration_sec * FS
    while True:
        reference = Annotation(_random_mask(rng, n_samples, int(rng.integers(0, 4)), 900 * FS), FS)
        hypothesis = Annotation(_random_mask(rng, n_samples, int(rng.integers(0, 6)), 400 * FS), FS)
        ref_events = [] if not reference.mask.any() else reference.events
        hyp_events = [] if not hypothesis.mask.any() else hypothesis.events
        if not (_events_on_exact_boundaries(ref_events) or _events_on_exact_boundaries(hyp_events)):
            return duration_sec, reference, hypothesis, ref_events, hyp_events


def test_event_counts_agree_with_timescoring_on_400_random_records():
    rng = np.random.default_rng(20260622)
    ours_by_subject, theirs_by_subject = [], []
    for index in range(400):
        duration_sec, reference, hypothesis, ref_events, hyp_events = _random_record(rng)
        theirs = EventScoring(reference, hypothesis)
        ours = score_record_events([list(e) for e in ref_events], [list(e) for e in hyp_events],
                                   float(duration_sec))
        their_counts = (int(theirs.tp), int(theirs.fp), int(theirs.refTrue - theirs.tp))
        assert (ours["tp"], ours["fp"], ours["fn"]) == their_counts, f"record {index}"
        subject = f"chb{index % 24 + 1:02d}"
        ours_by_subject.append({"subject": subject, **ours})
        theirs_by_subject.append((subject, *their_counts, duration_sec))

    aggregate = aggregate_by_subject(ours_by_subject)
    for subject, entry in aggregate["subjects"].items():
        rows = [row for row in theirs_by_subject if row[0] == subject]
        tp, fp, fn = (sum(row[i] for row in rows) for i in (1, 2, 3))
        expected_f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None
        assert entry["event_f1"] == pytest.approx(expected_f1)
        hours = sum(row[4] for row in rows) / 3600
        assert entry["fp_per_24h"] == pytest.approx(fp / (hours / 24))


@pytest.mark.parametrize("task", ["T2", "T3", "T4"])
def test_macro_f1_and_accuracy_agree_with_scikit_learn(task):
    rng = np.random.default_rng(7)
    classes = REFERENCE_CLASSES[task]
    for _ in range(200):
        n = int(rng.integers(1, 60))
        gold = [classes[i] for i in rng.integers(0, len(classes), n)]
        answers = [*classes, ""]  # "" is an invalid answer
        predicted = [answers[i] for i in rng.integers(0, len(answers), n)]
        ours = classification_metrics(list(zip(gold, predicted)), classes)
        expected_f1 = f1_score(gold, predicted, labels=list(classes), average="macro", zero_division=0)
        assert ours["macro_f1"] == pytest.approx(expected_f1)
        assert ours["accuracy"] == pytest.approx(accuracy_score(gold, predicted))


def test_t6_macro_f1_and_kappa_agree_with_scikit_learn():
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 1500))
        weights = rng.dirichlet(np.ones(len(STAGES)))
        reference = list(rng.choice(STAGES, n, p=weights))
        predicted = list(rng.choice(STAGES, n, p=rng.dirichlet(np.ones(len(STAGES)))))
        expected_f1 = f1_score(reference, predicted, labels=list(STAGES), average="macro", zero_division=0)
        assert macro_f1(predicted, reference) == pytest.approx(expected_f1)
        if len(set(reference)) > 1 or len(set(predicted)) > 1:
            assert cohen_kappa(predicted, reference) == pytest.approx(
                cohen_kappa_score(reference, predicted, labels=list(STAGES))
            )


def test_t5_task_dice_and_event_f1_through_score_task_on_random_records():
    rng = np.random.default_rng(3)
    items = []
    for index in range(60):
        duration_sec, _, _, ref_events, hyp_events = _random_record(rng)
        items.append(ScoringItem(f"c1_seizure_chb{index % 5 + 1:02d}_{index:02d}",
                                 {"seizure_events": [list(e) for e in ref_events]},
                                 {"seizure_events": [{"onset_sec": a, "offset_sec": b} for a, b in hyp_events]},
                                 duration_sec=float(duration_sec)))
    summary = score_task("T5", items)
    positives = [entry for entry in summary["per_item"] if "dice" in entry]
    assert summary["metrics"]["n_positive"] == len(positives)
    assert summary["metrics"]["dice_s"] == pytest.approx(np.mean([entry["dice"] for entry in positives]))
    assert 0.0 <= summary["metrics"]["event_f1"] <= 1.0
