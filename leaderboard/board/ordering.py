"""How a board orders and numbers its rows: the ranking rule every board and task page follows, tie groups
of overlapping intervals, and the cost-performance frontier."""
from __future__ import annotations

from collections import defaultdict
from typing import TypeVar

from leaderboard import stats

#: A board's row (``board.ranking.LeaderboardRow``): its ``overall`` and interval, ``model``, ``key``,
#: ``shown_by_default``, ``comparable`` and ``cost_paper_usd``.
Row = TypeVar("Row")


def is_ranked(score: float | None, *, shown_by_default: bool, comparable: bool, among_paper_rows: bool) -> bool:
    """The ranking rule of every board and task page: whether a row gets a number.

    A row is numbered when it has a score, is shown by default (one per model and settings) and, on a
    board with the paper's rows (``among_paper_rows``), is one of them or a comparable run; every other
    row keeps its place by score, without a number.
    """
    return score is not None and shown_by_default and (comparable or not among_paper_rows)


def best_first(score: float | None) -> tuple[bool, float]:
    """The sort key of a board's order by score: best first, rows without a score last."""
    return score is None, -(score or 0.0)


def rank_rows(rows: list[Row], *, among_paper_rows: bool = False) -> list[Row]:
    """Order rows best first, number them (``is_ranked``), group overlapping intervals and mark the frontier.

    Only the rows shown by default (``shown_by_default``) are on the frontier.
    """
    rows = sorted(rows, key=lambda row: (*best_first(row.overall), row.model, row.key))
    shown = [row for row in rows if row.shown_by_default]
    ranked = [
        row for row in shown
        if is_ranked(row.overall, shown_by_default=True, comparable=row.comparable, among_paper_rows=among_paper_rows)
    ]
    groups = stats.tie_groups([row.overall_ci for row in ranked])
    spans: dict[int, list[int]] = defaultdict(list)
    for position, (row, group) in enumerate(zip(ranked, groups), start=1):
        row.rank, row.tie_group = position, group
        spans[group].append(position)
    for row in ranked:
        positions = spans[row.tie_group]
        row.tie_range = (positions[0], positions[-1])
    frontier = stats.pareto_frontier([row.cost_paper_usd for row in shown], [row.overall for row in shown])
    for row, on_frontier in zip(shown, frontier):
        row.on_pareto_frontier = on_frontier
    return rows
