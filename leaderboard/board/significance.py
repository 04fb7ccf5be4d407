"""Which rows of a board score a significantly lower Overall than the row ranked above them.

Each pair of neighbouring ranked rows that are both this site's runs is tested with the paired
permutation test of Overall over the instances both runs played (``summaries.pairs.overall_p_value``),
and the board's p-values are adjusted together by Holm's method: a row is marked when its adjusted
p-value is below ``ALPHA``. The paper's rows have no per-instance results, so a pair with one is not
tested. A pair's p-value is kept per process until either summary changes, so that a board reads the
runs' per-instance rows (one query) only when a pair is new.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderboard import paired
from leaderboard.models import RunSummary
from leaderboard.summaries.kept import Kept, stored_key
from leaderboard.summaries.pairs import overall_p_value

ALPHA = 0.05
N_PERMUTATIONS = 1000
_kept = Kept(512)


def _with_items(summaries: Sequence[RunSummary]) -> dict[int, RunSummary]:
    """The summaries with their per-instance rows, read in one query for the stored ones that deferred them."""
    deferred = [summary.pk for summary in summaries if "items" in summary.get_deferred_fields()]
    items = dict(RunSummary.objects.filter(pk__in=deferred).values_list("pk", "items")) if deferred else {}
    for summary in summaries:
        if summary.pk in items:
            summary.items = items[summary.pk]
    return {summary.run_id: summary for summary in summaries}


def mark_rows(rows: Sequence, summaries: Mapping[int, RunSummary]) -> None:
    """Set ``below_p`` (the Holm-adjusted p-value against the row above, None when not tested) and
    ``significantly_below`` on the ranked rows, in rank order; ``summaries`` by run id."""
    ranked = sorted((row for row in rows if row.rank is not None), key=lambda row: row.rank)
    pairs = [(upper, lower) for upper, lower in zip(ranked, ranked[1:]) if upper.run_id and lower.run_id]
    keys = {lower.run_id: stored_key(summaries[upper.run_id], summaries[lower.run_id]) for upper, lower in pairs}
    new = [(upper, lower) for upper, lower in pairs if keys[lower.run_id] is None or keys[lower.run_id] not in _kept]
    loaded = _with_items([summaries[row.run_id] for pair in new for row in pair]) if new else {}

    def p_value(upper, lower) -> float | None:
        if upper.run_id not in loaded or lower.run_id not in loaded:  # dropped from _kept since
            loaded.update(_with_items([summaries[upper.run_id], summaries[lower.run_id]]))
        return overall_p_value(loaded[upper.run_id], loaded[lower.run_id], n_permutations=N_PERMUTATIONS)

    p_values = {
        lower.run_id: _kept.remember(keys[lower.run_id], lambda upper=upper, lower=lower: p_value(upper, lower))
        for upper, lower in pairs
    }
    tested = [lower for _, lower in pairs]
    adjusted = paired.holm([p_values[row.run_id] for row in tested])
    for row, p_value in zip(tested, adjusted):
        row.below_p = p_value
        row.significantly_below = p_value is not None and p_value < ALPHA
