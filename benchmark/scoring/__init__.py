"""The official EEGAgentBench scorer, as pure functions (no Django).

``score_task(task_id, items)`` gives a task's official summary; ``overall`` the
benchmark's Overall. ``files.load_items`` reads the official JSON-lines formats.
"""

from benchmark.scoring.official import (
    EXPECTED_COUNTS,
    PRIMARY_METRIC,
    SECONDARY_METRICS,
    TASK_IDS,
    ScoringItem,
    benchmark_summary,
    completeness,
    overall,
    score_task,
)

__all__ = [
    "EXPECTED_COUNTS",
    "PRIMARY_METRIC",
    "SECONDARY_METRICS",
    "TASK_IDS",
    "ScoringItem",
    "benchmark_summary",
    "completeness",
    "overall",
    "score_task",
]
