"""Instance selection (paper §6.1): difficulty screening from a panel's runs, then class balancing.

Screening: each panel model's official ``runs.jsonl`` says, per scenario, what
it answered; an instance's solve rate is the share of panel models that got it
right, and an instance with a solve rate of at least 0.9 is too easy and leaves
the pool. "Right" follows each task's primary scoring: the correct option (T1),
the correct label (T3, T4), and for T5 a Dice@seizure of at least 0.30 on a
record with seizures or no predicted event at all on a record without. T2 (a
constructed balanced set) and T6 (whole nights) are not screened.

Balancing: every class (or balancing group, such as the Bonn sets) is cut to
its target, by default the size of the smallest class. A class above its
target loses its easiest instances first (highest solve rate), ties broken by
the SHA-256 of the scenario id, so the same pool and runs always give the same
set. T1 is not balanced (its subjects are too skewed), nor are T2 and T6.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.builders.base import BuildError, Candidate
from benchmark.scoring.classification import normalise_class_label, normalise_option_letter
from benchmark.scoring.files import ScoringInputError, read_predictions
from benchmark.scoring.seizure import parse_raw_events, temporal_dice

SOLVE_RATE_THRESHOLD = 0.9
SEIZURE_DICE_THRESHOLD = 0.30
SCREENED_TASKS = frozenset({"T1", "T3", "T4", "T5"})
BALANCED_TASKS = frozenset({"T3", "T4", "T5"})

PanelRuns = Sequence[Mapping[str, Mapping[str, Any]]]
Targets = Mapping[str, int] | Callable[[Mapping[str, int]], Mapping[str, int]]


def is_correct(candidate: Candidate, prediction: Any) -> bool:
    """Whether one panel answer solves a candidate, by its task's primary scoring.

    Parameters
    ----------
    candidate : Candidate
        A T1, T3, T4 or T5 candidate, with its gold in the official shape.
    prediction : object
        The ``prediction`` object of a ``runs.jsonl`` row; anything but a dict is wrong.
    """
    if not isinstance(prediction, Mapping):
        return False
    gold = candidate.gold
    if candidate.task_id == "T1":
        return normalise_option_letter(prediction.get("answer"), candidate.input.get("options")) == gold["answer"]
    if candidate.task_id in ("T3", "T4"):
        return normalise_class_label(candidate.task_id, prediction.get("classification")) == gold["label"]
    if candidate.task_id == "T5":
        predicted = parse_raw_events(prediction.get("seizure_events"))
        reference = parse_raw_events(gold.get("seizure_events"))
        if reference:
            return temporal_dice(reference, predicted) >= SEIZURE_DICE_THRESHOLD
        return not predicted
    raise ValueError(f"{candidate.task_id} is not screened (paper §6.1), so it has no screening correctness")


def read_panel_runs(paths: Sequence[Path]) -> list[dict[str, Mapping[str, Any]]]:
    """One ``{scenario_id: row}`` map per panel model, from official ``runs.jsonl`` files.

    A scenario the runner retried keeps its latest completed row.
    """
    panel = []
    for path in paths:
        try:
            panel.append(read_predictions(path))
        except ScoringInputError as exc:
            raise BuildError(str(exc)) from None
    return panel


def _solved(candidate: Candidate, row: Mapping[str, Any] | None) -> bool:
    if row is None or row.get("status") != "completed" or row.get("invalid"):
        return False
    return is_correct(candidate, row.get("prediction"))


def solve_rates(candidates: Sequence[Candidate], panel: PanelRuns, *,
                names: Sequence[str] | None = None) -> dict[str, float]:
    """Share of panel models that solve each candidate, by scenario id.

    A scenario missing from a model's runs, or not completed there, counts as
    unsolved by that model, so incomplete runs can only keep instances in.
    ``names`` (one per panel entry, e.g. file names) make the error for a panel
    entry that covers none of the candidates say which one it is.
    """
    if not panel:
        raise BuildError("screening needs at least one panel model's runs")
    scenario_ids = {candidate.scenario_id for candidate in candidates}
    for index, runs in enumerate(panel):
        if candidates and not scenario_ids.intersection(runs):
            which = names[index] if names else f"panel model {index + 1}"
            raise BuildError(f"{which} holds no result for any of the {len(candidates)} candidates")
    return {
        candidate.scenario_id: sum(_solved(candidate, runs.get(candidate.scenario_id)) for runs in panel)
        / len(panel)
        for candidate in candidates
    }


def screen(candidates: Sequence[Candidate], rates: Mapping[str, float], *,
           threshold: float = SOLVE_RATE_THRESHOLD) -> list[Candidate]:
    """The candidates whose solve rate is below ``threshold`` (the too-easy ones leave), in pool order."""
    return [candidate for candidate in candidates if rates.get(candidate.scenario_id, 0.0) < threshold]


def tie_break(scenario_id: str) -> str:
    """Deterministic order among equally hard instances: the SHA-256 of the scenario id."""
    return hashlib.sha256(scenario_id.encode("utf-8")).hexdigest()


def smallest_class(counts: Mapping[str, int]) -> dict[str, int]:
    """Default targets: every class cut to the size of the smallest one."""
    smallest = min(counts.values())
    return {group: smallest for group in counts}


def balance(candidates: Sequence[Candidate], *, group_of: Callable[[Candidate], str] | None = None,
            targets: Targets | None = None, rates: Mapping[str, float] | None = None) -> list[Candidate]:
    """Cut every balancing group to its target, easiest first; the rest keep pool order.

    Parameters
    ----------
    candidates : sequence of Candidate
        The (screened) pool of one task.
    group_of : callable, optional
        Balancing group of a candidate; by default its ``label``.
    targets : mapping or callable, optional
        Target count per group, or a function of the group counts giving them;
        by default every group is cut to the smallest one.
    rates : mapping, optional
        Solve rates by scenario id; without them every instance is equally hard.

    Raises
    ------
    BuildError
        When a target names an unknown group, misses a group, or exceeds what
        the pool holds.
    """
    group_of = group_of or (lambda candidate: candidate.label)
    rates = rates or {}
    groups: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(group_of(candidate), []).append(candidate)
    if not groups:
        raise BuildError("nothing to balance: the pool is empty")
    counts = {group: len(members) for group, members in groups.items()}
    wanted = dict(smallest_class(counts) if targets is None
                  else targets(counts) if callable(targets) else targets)
    unknown = sorted(set(wanted) - set(groups))
    missing = sorted(set(groups) - set(wanted))
    if unknown or missing:
        raise BuildError(
            f"balancing targets {wanted} do not match the pool's classes {counts}"
            + (f": no candidates of {', '.join(unknown)}" if unknown else "")
            + (f": no target for {', '.join(missing)}" if missing else "")
        )
    kept: set[str] = set()
    for group, members in groups.items():
        if wanted[group] > len(members):
            raise BuildError(f"balancing target {wanted[group]} for class {group} exceeds the "
                             f"{len(members)} candidates left after screening")
        hardest_first = sorted(members, key=lambda c: (rates.get(c.scenario_id, 0.0), tie_break(c.scenario_id)))
        kept.update(candidate.scenario_id for candidate in hardest_first[: wanted[group]])
    return [candidate for candidate in candidates if candidate.scenario_id in kept]


def class_counts(candidates: Sequence[Candidate], group_of: Callable[[Candidate], str] | None = None) -> dict[str, int]:
    """Instances per balancing group, in first-seen order."""
    group_of = group_of or (lambda candidate: candidate.label)
    return dict(Counter(group_of(candidate) for candidate in candidates))
