"""A board as JSON: its rows with every metric.

The shape of the leaderboard's JSON download and of the API's ``/api/leaderboard/``.
"""
from __future__ import annotations

from rest_framework import serializers


class CostField(serializers.FloatField):
    """A cost in USD (a ``Decimal``) as a JSON number; null means unpriced."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)


class MetricsField(serializers.DictField):
    """``{"T1": {"accuracy": 0.8}, "T2": {"macro_f1": …, "accuracy": …}, …}``; null where not scored."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.DictField(child=serializers.FloatField(allow_null=True)), **kwargs)


class LeaderboardRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    source = serializers.CharField()
    run_id = serializers.IntegerField(allow_null=True)
    run_name = serializers.CharField()
    family = serializers.CharField()
    parameters = serializers.CharField()
    parameters_b = serializers.FloatField(allow_null=True)
    context_window = serializers.IntegerField(allow_null=True)
    is_open_weight = serializers.BooleanField(allow_null=True)
    group = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True)
    tie_group = serializers.IntegerField(allow_null=True)
    tie_range = serializers.ListField(child=serializers.IntegerField(), allow_null=True)
    below_p = serializers.FloatField(allow_null=True)
    significantly_below = serializers.BooleanField()
    overall = serializers.FloatField(allow_null=True)
    overall_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    overall_official = serializers.BooleanField()
    metrics = MetricsField()
    official = serializers.DictField(child=serializers.BooleanField(allow_null=True))
    cost_usd = CostField()
    cost_paper_usd = CostField()
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    total_tokens = serializers.IntegerField(allow_null=True)
    on_pareto_frontier = serializers.BooleanField()
    comparable = serializers.BooleanField()
    not_comparable_because = serializers.SerializerMethodField()
    epochs = serializers.IntegerField(help_text="How many times the run played each instance (1 for a published row).")
    overall_sd = serializers.FloatField(allow_null=True, help_text="Standard deviation of the per-epoch Overall.")
    overall_epochs = serializers.JSONField(allow_null=True, help_text="Per-epoch Overall: {k, scores, sd}.")
    epoch_stats = serializers.JSONField(
        help_text="Per task of a run of several epochs: {k, scores, sd, flip_rate, pass_hat_k, pass_at_k}."
    )
    settings = serializers.JSONField(
        allow_null=True, help_text="A run's prompt set and decoding settings (null for a published row)."
    )
    shown_by_default = serializers.BooleanField(
        help_text="Whether the board shows and ranks this row: one run per model and settings (see default_rows)."
    )
    default_run_id = serializers.IntegerField(
        allow_null=True, help_text="The run the board shows for this run's model and settings (null for a published row)."
    )
    submitted = serializers.BooleanField(
        allow_null=True, help_text="A run submitted from outside: true verified, false unverified; null for any other row."
    )

    def get_not_comparable_because(self, row) -> list[str]:
        """Why a run is not comparable with the paper's rows (empty for a comparable run or a published row)."""
        return list(row.comparability.reasons) if row.comparability else []


class LeaderboardSerializer(serializers.Serializer):
    suite = serializers.CharField()
    references = serializers.CharField(
        source="suite_obj.references", allow_null=True, default=None,
        help_text="public (its answer keys are published) or held-out; null for a board of published rows only.",
    )
    is_synthetic = serializers.BooleanField()
    citation = serializers.CharField()
    families = serializers.ListField(child=serializers.CharField())
    among_paper_rows = serializers.BooleanField()
    default_rows = serializers.CharField(help_text="Which run of a model and settings is shown by default, and ranked.")
    rows = LeaderboardRowSerializer(many=True)
