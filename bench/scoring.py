"""Benchmark: T5 scoring speed, ours (interval arithmetic) against timescoring (masks).

Scores 280 synthetic CHB-MIT-like records of 12 min to 4 h, half with seizures,
with our scorer and with the SzCORE reference scorer ``timescoring`` in the same
run, checks that both give the same event counts, and prints the speed ratios.
timescoring takes annotations as masks at a sampling rate; it is timed at the
records' own rate (256 Hz, as SzCORE scores CHB-MIT) and at its internal 10 Hz.
Target: ours at least 10x faster.

    python bench/scoring.py [--records 280] [--repeat 3]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from benchmark.scoring import ScoringItem, score_task  # noqa: E402

FS = 10  # timescoring's event-scoring resolution
SIGNAL_FS = 256  # CHB-MIT's sampling rate


def synthetic_records(n_records, seed=20260622):
    """Records on the 0.1-s grid: (scenario_id, duration, reference events, predicted events)."""
    rng = np.random.default_rng(seed)
    records = []
    for index in range(n_records):
        duration = int(rng.integers(12 * 60, 4 * 3600 + 1))
        positive = index % 2 == 0
        reference = []
        if positive:
            for _ in range(int(rng.integers(1, 4))):
                length = float(rng.uniform(6, min(752, duration / 2)))
                onset = round(float(rng.uniform(0, duration - length)), 1)
                reference.append((onset, round(onset + length, 1)))
        predicted = []
        for _ in range(int(rng.integers(0, 5))):
            length = float(rng.uniform(5, 200))
            onset = round(float(rng.uniform(0, duration - length)), 1)
            predicted.append((onset, round(onset + length, 1)))
        subject = f"chb{index % 24 + 1:02d}"
        records.append((f"c1_seizure_{subject}_{index:03d}", duration, reference, predicted))
    return records


def disjoint(events, duration):
    """Events as timescoring sees them: through a 10 Hz mask, so overlaps are merged."""
    from timescoring.annotations import Annotation

    mask = Annotation(events, FS, duration * FS).mask
    return Annotation(mask, FS).events if mask.any() else []


def score_ours(records):
    items = [
        ScoringItem(scenario_id, {"seizure_events": [list(e) for e in reference]},
                    {"seizure_events": [list(e) for e in predicted]}, duration_sec=float(duration))
        for scenario_id, duration, reference, predicted in records
    ]
    summary = score_task("T5", items)
    return [(r["tp"], r["fp"], r["fn"]) for r in summary["per_item"]], summary["metrics"]["event_f1"]


def score_timescoring(records, fs):
    from timescoring.annotations import Annotation
    from timescoring.scoring import EventScoring

    counts, by_subject = [], {}
    for scenario_id, duration, reference, predicted in records:
        scores = EventScoring(Annotation(reference, fs, duration * fs), Annotation(predicted, fs, duration * fs))
        row = (int(scores.tp), int(scores.fp), int(scores.refTrue - scores.tp))
        counts.append(row)
        totals = by_subject.setdefault(scenario_id.split("_")[2], [0, 0, 0])
        for i in range(3):
            totals[i] += row[i]
    f1s = [2 * tp / (2 * tp + fp + fn) for tp, fp, fn in by_subject.values() if 2 * tp + fp + fn]
    return counts, sum(f1s) / len(f1s) if f1s else 0.0


def best_of(function, records, repeat, **options):
    timings, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(records, **options)
        timings.append(time.perf_counter() - start)
    return min(timings), statistics.median(timings), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=280)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    records = [
        (scenario_id, duration, disjoint(reference, duration), disjoint(predicted, duration))
        for scenario_id, duration, reference, predicted in synthetic_records(args.records)
    ]
    ours_best, ours_median, (ours_counts, ours_f1) = best_of(score_ours, records, args.repeat)
    hours = sum(duration for _, duration, _, _ in records) / 3600
    print(f"records: {len(records)} ({hours:.0f} h of recording, "
          f"{sum(len(r[2]) for r in records)} reference and {sum(len(r[3]) for r in records)} predicted events)")
    print(f"ours:                  best {ours_best * 1000:8.1f} ms, median {ours_median * 1000:8.1f} ms")
    failed, ratios = False, {}
    for fs in (SIGNAL_FS, FS):
        ref_best, ref_median, (ref_counts, ref_f1) = best_of(score_timescoring, records, args.repeat, fs=fs)
        disagreements = sum(a != b for a, b in zip(ours_counts, ref_counts))
        ratio = ratios[fs] = ref_best / ours_best
        print(f"timescoring at {fs:3d} Hz: best {ref_best * 1000:8.1f} ms, median {ref_median * 1000:8.1f} ms; "
              f"ratio {ratio:6.1f}x; {len(records) - disagreements}/{len(records)} records with identical "
              f"TP/FP/FN; subject-mean Event-F1 {ref_f1:.6f} vs ours {ours_f1:.6f}")
        failed |= bool(disagreements) or abs(ours_f1 - ref_f1) > 1e-12
    ratio = ratios[SIGNAL_FS]
    print(f"speed ratio at the records' rate: {ratio:.1f}x  (target >= 10x: {'met' if ratio >= 10 else 'NOT met'})")
    if failed:
        print("DISAGREEMENT between the two scorers", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
