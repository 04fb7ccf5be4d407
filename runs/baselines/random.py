"""``baseline/random``: one valid answer drawn uniformly, without looking at the recording."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchmark.scoring.classification import REFERENCE_CLASSES
from benchmark.scoring.hypnogram import STAGES
from runs.baselines.common import BaselineAgent, duration_of, epoch_count, hypnogram_answer, stable_int


class RandomAgent(BaselineAgent):
    """``baseline/random``: one valid answer drawn uniformly, without looking at the recording.

    The draw is seeded by the run's ``seed`` plus the episode's epoch (its play of the instance
    within the run), and the record id, so a rerun repeats it and each epoch of a run draws
    afresh. T1 and T2–T4 draw a label; T5 draws 0–2 events of 10–120 s placed uniformly in the
    record; T6 draws every sleep epoch's stage.
    """

    def __init__(self, instance: dict, *, seed: int = 0):
        super().__init__(instance)
        self.rng = np.random.default_rng([seed, stable_int(self.record_id)])

    def next_action(self, results: list[Any]) -> dict:
        if self.task == "T1":
            return {"action": "final_answer", "answer": str(self.rng.choice(REFERENCE_CLASSES["T1"]))}
        if self.task in ("T2", "T3", "T4"):
            label = str(self.rng.choice(REFERENCE_CLASSES[self.task]))
            return {"action": "final_answer", "classification": label, "findings": ["random baseline"]}
        if self.task == "T5":
            duration = duration_of(self.instance)
            events = []
            for _ in range(int(self.rng.integers(0, 3))):
                length = float(self.rng.uniform(10, 120))
                onset = float(self.rng.uniform(0, max(duration - length, 0)))
                offset = min(onset + length, duration)
                events.append({"onset_sec": round(onset, 1), "offset_sec": round(offset, 1)})
            return {"action": "final_answer", "seizure_events": sorted(events, key=lambda e: e["onset_sec"])}
        stages = [str(stage) for stage in self.rng.choice(STAGES, size=epoch_count(self.instance))]
        return hypnogram_answer(stages)
