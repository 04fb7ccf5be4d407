"""A board as the CSV file the leaderboard page offers for download (the JSON download is the API's serializer)."""
from __future__ import annotations

import csv
import io
from decimal import Decimal

from benchmark.scoring import PRIMARY_METRIC
from leaderboard.board.ranking import AUDIT_LABEL, AUDIT_SOURCE, METRIC_COLUMNS, Leaderboard

CSV_COLUMNS = (
    "rank", "tie_group", "model", "source", "run_id", "shown_by_default", "default_run_id", "comparable",
    "not_comparable_because", "family", "parameters", "open_weight",
    "overall", "overall_ci_low", "overall_ci_high", "overall_official",
    *(f"{task}_{metric}" for task, metric, _ in METRIC_COLUMNS),
    "cost_usd", "cost_paper_usd", "prompt_tokens", "completion_tokens", "total_tokens", "on_pareto_frontier",
    "below_p", "significantly_below",
)  # fmt: skip


def _plain_usd(cost: Decimal | None) -> str:
    """A cost as a plain decimal without trailing zeros (``Decimal("0E-8")`` → ``0``); blank when unpriced."""
    if cost is None:
        return ""
    text = f"{cost:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def leaderboard_csv(board: Leaderboard) -> str:
    """The board as CSV text, one line per row in rank order, with ``CSV_COLUMNS`` as header.

    Every run is a line: ``shown_by_default`` marks the one run of each model and settings the page
    shows and ranks (``DEFAULT_ROWS``), ``default_run_id`` names it on each of its model's lines.

    Costs are plain decimals in USD, blank for an unpriced row (a blank cost is unknown, not free).
    A suite with a one-feature shortcut audit ends with its reference row: ``source``
    ``one_feature_audit``, the audited primary scores, and no rank, tie group or frontier.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in board.rows:
        low, high = row.overall_ci or (None, None)
        writer.writerow([
            row.rank, row.tie_group, row.model, row.source, row.run_id, row.shown_by_default, row.default_run_id,
            row.comparable,
            "; ".join(row.comparability.reasons) if row.comparability else "", row.family, row.parameters,
            row.is_open_weight, row.overall, low, high, row.overall_official,
            *(row.metrics[task][metric] for task, metric, _ in METRIC_COLUMNS),
            _plain_usd(row.cost_usd), _plain_usd(row.cost_paper_usd), row.prompt_tokens, row.completion_tokens, row.total_tokens,
            row.on_pareto_frontier, row.below_p, row.significantly_below,
        ])
    if board.audits:
        # A reference, not an agent: no rank, no tie group, no frontier; only the audited primary scores.
        reference = {"model": AUDIT_LABEL, "source": AUDIT_SOURCE} | {
            f"{task}_{PRIMARY_METRIC[task]}": audit.best.get("score") for task, audit in board.audits.items()
        }
        writer.writerow([reference.get(column) for column in CSV_COLUMNS])
    return buffer.getvalue()
