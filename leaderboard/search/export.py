"""The search's exports: the episodes it finds, as CSV or JSON Lines, one line an episode, streamed.

A line holds what the search's row shows (``selectors.search_row``, as this visitor may see it) and
the episode's address on the site. An export stops after ``MAX_EXPORTED`` episodes, in the search's
order; the page says so when the search finds more.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from datetime import datetime

from django.db.models import QuerySet

from leaderboard.search.selectors import search_row

#: The most episodes one export holds.
MAX_EXPORTED = 100_000

#: Episodes read from the database at a time.
CHUNK = 2_000

#: The columns of a line, in order (a CSV's header).
COLUMNS = (
    "id", "url", "run", "model", "suite", "task", "record_id", "outcome", "ended_by", "failure_modes",
    "n_turns", "n_tool_calls", "tokens", "evidence_coverage", "finished_at",
)

#: The formats, by the extension of their file name: their media type.
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def exported(episodes: QuerySet, *, references: bool, address: Callable[[int], str]) -> Iterator[dict]:
    """The first ``MAX_EXPORTED`` of ``episodes`` as lines of ``COLUMNS``; ``address`` gives an episode's URL."""
    for episode in episodes[:MAX_EXPORTED].iterator(chunk_size=CHUNK):
        row = search_row(episode, references=references) | {"url": address(episode.pk)}
        row["finished_at"] = _iso(row["finished_at"])
        yield {column: row[column] for column in COLUMNS}


def _iso(moment: datetime | None) -> str | None:
    """``moment`` in ISO 8601 as the API writes it (microseconds kept, UTC as "Z")."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    """The header, then one CSV line a row: failure modes space-separated, a missing value blank."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")

    def line(values) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(COLUMNS)
    for row in rows:
        modes = " ".join(row["failure_modes"])
        yield line([modes if column == "failure_modes" else row[column] for column in COLUMNS])


def jsonl_lines(rows: Iterator[dict]) -> Iterator[str]:
    """One JSON object a row and a line: failure modes a list, a missing value null."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


LINES = {"csv": csv_lines, "jsonl": jsonl_lines}
