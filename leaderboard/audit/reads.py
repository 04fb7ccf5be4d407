"""The stored one-feature shortcut audits of a suite, and their JSON (the rules for staff only)."""
from __future__ import annotations

from typing import Any

from leaderboard.models import ShortcutAudit


def shortcut_audits(*, suite: str) -> dict[str, ShortcutAudit]:
    """The stored one-feature shortcut audit of each task of ``suite`` (``manage.py shortcut_audit``), by task code."""
    return {audit.task: audit for audit in ShortcutAudit.objects.filter(suite__name=suite).order_by("task")}


def audit_json(audits: dict[str, ShortcutAudit], *, rules: bool) -> dict[str, dict[str, Any]]:
    """The audits as JSON, per task: the stored result with its folds, seed and date.

    Without ``rules`` (anyone but staff) each candidate keeps its feature, score and interval but
    not its rule: the thresholds were fitted on the answer key, and with them anyone who can call
    the tools could label the instances as well as the audit does.
    """

    def shown(candidate: dict) -> dict:
        return candidate if rules else {key: value for key, value in candidate.items() if key != "rule"}

    return {
        task: {**audit.result, "best": shown(audit.best),
               "candidates": [shown(candidate) for candidate in audit.result.get("candidates", [])],
               "folds": audit.folds, "seed": audit.seed, "created_at": audit.created_at.isoformat()}
        for task, audit in audits.items()
    }
