"""What the leaderboard stores: each run's scored summary, and the paper's published rows.

A board is named by a suite: it shows the runs made on that suite and, for the paper's suite,
the rows the paper published (``PublishedResult.board``). Published rows are keyed by the board's
name rather than by a ``Suite`` row, so they are on show before the official release is imported,
and sit beside its runs as soon as it is imported under its default name (``eegagentbench``).
"""
from django.db import models

from benchmark.models import ModelSpec
from runs.models import Run


class RunSummary(models.Model):
    """A run scored by the official scorer, kept so that pages never re-score on every view.

    ``tasks`` holds, per task code, the official summary without its per-item part
    (``official``, ``reasons``, ``primary_metric``, ``primary_score``, ``metrics``,
    ``completeness``) and the ``signature`` of the episodes it was computed from; a task whose
    episodes no longer match their signature is re-scored: saved by the runs side
    (``summaries.scoring.episodes_ended``), in memory only by a page (``summaries.scoring.current_summary``).
    ``items`` holds, per task code, one compact row per instance (the scorer's per-item result
    with the instance and episode ids), for the bootstrap and the per-instance analyses;
    ``tool_use`` holds, per task code, tool-call counts by tool and per completed episode.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="leaderboard_summary")
    tasks = models.JSONField(default=dict, blank=True)
    items = models.JSONField(default=dict, blank=True)
    tool_use = models.JSONField(default=dict, blank=True)
    overall = models.FloatField(
        null=True, blank=True, help_text="Mean of the six primary scores; blank unless all six tasks are scored."
    )
    overall_official = models.BooleanField(default=False, help_text="All six task summaries are official.")
    overall_ci_low = models.FloatField(null=True, blank=True)
    overall_ci_high = models.FloatField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "run summaries"

    def __str__(self) -> str:
        return f"summary of {self.run}"

    @property
    def overall_ci(self) -> tuple[float, float] | None:
        if self.overall_ci_low is None or self.overall_ci_high is None:
            return None
        return self.overall_ci_low, self.overall_ci_high


class PublishedResult(models.Model):
    """One model's row of the paper's Tables 2, 5 and 6, shown on a board beside the runs.

    Metrics are as printed, ``{"T1": {"accuracy": …}, "T2": {"macro_f1": …, "accuracy": …}, …}``.
    Prices are the paper's (USD per million tokens, blank when the paper prices the model not);
    the row's cost is the paper's formula over its tokens, computed when it is shown.
    """

    board = models.SlugField(max_length=100, help_text="Name of the suite whose board shows this row.")
    model = models.ForeignKey(ModelSpec, on_delete=models.PROTECT, related_name="published_results")
    position = models.PositiveIntegerField(default=0, help_text="Order in the paper's Table 2.")
    group = models.CharField(max_length=100, help_text="Table 2 group, e.g. 'Proprietary models'.")
    overall = models.FloatField()
    metrics = models.JSONField(default=dict)
    prompt_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    total_tokens = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="As published; rounded on its own, so not always the sum."
    )
    input_price_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    output_price_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    citation = models.CharField(max_length=300)
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["board", "position"]
        constraints = [
            models.UniqueConstraint(fields=["board", "model"], name="published_result_one_per_model_per_board"),
        ]

    def __str__(self) -> str:
        return f"{self.model} on {self.board} (published)"


class ShortcutAudit(models.Model):
    """A task's one-feature shortcut audit on a suite (``manage.py shortcut_audit``): a reference, never a ranked agent.

    ``result`` is the task's part of the audit's JSON: ``{"primary_metric", "best": {"feature",
    "rule", "score", "ci"}, "candidates": [...]}``. Re-running the audit replaces the row.
    """

    suite = models.ForeignKey("benchmark.Suite", on_delete=models.CASCADE, related_name="shortcut_audits")
    task = models.CharField(max_length=4)
    result = models.JSONField(default=dict)
    folds = models.PositiveSmallIntegerField()
    seed = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["suite", "task"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "task"], name="shortcut_audit_one_per_suite_task"),
        ]

    def __str__(self) -> str:
        return f"one-feature audit of {self.task} on {self.suite_id}"

    @property
    def best(self) -> dict:
        return self.result.get("best") or {}
