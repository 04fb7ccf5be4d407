"""Input serializers (query parameters) and output serializers of the REST API.

Costs are given as JSON numbers in USD; a null cost means unpriced, never free.
"""
from rest_framework import serializers

from benchmark.scoring import TASK_IDS
from leaderboard.access import ENDED, shown_failure_modes
from leaderboard.board.comparability import comparability
from leaderboard.board.published import PAPER_BOARD
from leaderboard.board.ranking import SOURCES, WEIGHTS
from leaderboard.board.serializers import CostField, MetricsField
from leaderboard.items.selectors import FLAG_FILTERS, RUN_CHOICES, SORTS
from leaderboard.search.forms import EpisodeSearchForm
from leaderboard.search.selectors import search_row
from runs.models import TOKEN_FIELDS, Status
from runs.redaction import public_episode_error, public_error

# ── input ───────────────────────────────────────────────────────────────────────────────────


class LeaderboardQuerySerializer(serializers.Serializer):
    suite = serializers.SlugField(max_length=100, default=PAPER_BOARD)
    source = serializers.ChoiceField(choices=SOURCES, required=False)
    family = serializers.CharField(max_length=100, required=False, allow_blank=True)
    weights = serializers.ChoiceField(choices=WEIGHTS, required=False)


class RunQuerySerializer(serializers.Serializer):
    suite = serializers.SlugField(max_length=100, required=False)
    status = serializers.ChoiceField(choices=Status.values, required=False)
    model = serializers.CharField(max_length=100, required=False)


class InstanceQuerySerializer(serializers.Serializer):
    suite = serializers.SlugField(max_length=100)
    task = serializers.ChoiceField(choices=TASK_IDS, required=False)


class ItemQuerySerializer(serializers.Serializer):
    suite = serializers.SlugField(max_length=100)
    task = serializers.ChoiceField(choices=TASK_IDS)
    runs = serializers.ChoiceField(choices=RUN_CHOICES, required=False)
    sort = serializers.ChoiceField(choices=SORTS, default="discrimination")
    flag = serializers.ChoiceField(choices=FLAG_FILTERS, required=False)


class EpisodeQuerySerializer(serializers.Serializer):
    """``/api/episodes/``'s query: the ``/episodes/`` page's filters, validated by its form (one definition for both).

    The context gives ``staff`` and ``references`` (the suites and outcomes offered, as on the page).
    """

    def to_internal_value(self, data):
        form = EpisodeSearchForm(data, staff=self.context["staff"], references=self.context["references"])
        if not form.is_valid():
            raise serializers.ValidationError({
                "non_field_errors" if field == "__all__" else field: list(errors)
                for field, errors in form.errors.items()
            })
        return form.selection()


# ── output ──────────────────────────────────────────────────────────────────────────────────



class RunSerializer(serializers.Serializer):
    """A run in the list: what ran, on what, where it stands (annotated by ``selectors.run_list``)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    suite = serializers.CharField(source="suite.name")
    model = serializers.CharField(source="model.name")
    provider_model = serializers.CharField(source="model.provider_model")
    status = serializers.CharField()
    source = serializers.CharField()
    tasks = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost_usd = CostField()
    progress = serializers.SerializerMethodField()
    prompt_set = serializers.CharField()
    comparability = serializers.SerializerMethodField()

    def get_progress(self, run) -> dict[str, int]:
        return {"episodes": run.n_episodes, **{value: getattr(run, f"n_{value}") for value in Status.values}}

    def get_comparability(self, run) -> dict:
        """``{"comparable", "reasons"}``: whether the run is comparable with the paper's rows, and why not."""
        return comparability(run).as_dict()


class ScoreField(serializers.FloatField):
    """An episode's score, or null unless the ``scores_visible`` context says it may be shown."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value):
        return super().to_representation(value) if self.context.get("scores_visible") else None


class FailureModesField(serializers.Field):
    """An episode's failure modes, ``[{"code", "steps": [...]}]`` (null: not classified); those that tell the
    reference only where scores are visible (``access.shown_failure_modes``)."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, value):
        if value is None:
            return None
        return [{"code": mode["code"], "steps": list(mode["steps"])}
                for mode in shown_failure_modes(value, references=bool(self.context.get("scores_visible")))]


class EpisodeRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    instance = serializers.SerializerMethodField()
    task = serializers.CharField()
    status = serializers.CharField()
    outcome = serializers.CharField()
    attempt = serializers.IntegerField()
    n_turns = serializers.IntegerField()
    n_tool_calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost_usd = CostField()
    score = ScoreField()
    epoch = serializers.SerializerMethodField()
    failure_modes = FailureModesField()

    def get_instance(self, row) -> str | None:
        """The record id its agent saw; null for a visitor while the episode has not ended."""
        return row.record_id if self.context.get("staff") or row.status in ENDED else None

    def get_epoch(self, row) -> int | None:
        """The play of its instance it is (0-based); null for a visitor while the episode has not ended."""
        return row.epoch if self.context.get("staff") or row.status in ENDED else None


class EpisodeSearchRowSerializer(serializers.BaseSerializer):
    """An episode found by the search, ``search.selectors.search_row`` as this visitor may see it (``references``)."""

    def to_representation(self, episode):
        return search_row(episode, references=self.context["references"])


class RunDetailSerializer(serializers.Serializer):
    """``selectors.RunDetail``: the run, its scores as on the leaderboard, its tasks and episodes."""

    id = serializers.IntegerField(source="run.id")
    name = serializers.CharField(source="run.name")
    suite = serializers.CharField(source="run.suite.name")
    is_synthetic = serializers.BooleanField(source="run.suite.release.is_synthetic")
    model = serializers.CharField(source="run.model.name")
    provider_model = serializers.CharField(source="run.model.provider_model")
    status = serializers.CharField(source="run.status")
    source = serializers.CharField(source="run.source")
    tasks_selected = serializers.ListField(source="run.tasks", child=serializers.CharField())
    settings = serializers.JSONField(source="run.settings")
    prompt_set = serializers.CharField(source="run.prompt_set")
    comparability = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(source="run.created_at")
    started_at = serializers.DateTimeField(source="run.started_at", allow_null=True)
    finished_at = serializers.DateTimeField(source="run.finished_at", allow_null=True)
    overall = serializers.FloatField(source="row.overall", allow_null=True)
    overall_ci = serializers.ListField(source="row.overall_ci", child=serializers.FloatField(), allow_null=True)
    overall_official = serializers.BooleanField(source="row.overall_official")
    metrics = MetricsField(source="row.metrics")
    official = serializers.DictField(source="row.official", child=serializers.BooleanField(allow_null=True))
    cost_usd = CostField(source="row.cost_usd")
    cost_paper_usd = CostField(source="row.cost_paper_usd")
    prompt_tokens = serializers.IntegerField(source="row.prompt_tokens")
    completion_tokens = serializers.IntegerField(source="row.completion_tokens")
    epochs = serializers.IntegerField(source="run.epochs")
    overall_sd = serializers.FloatField(source="row.overall_sd", allow_null=True)
    overall_epochs = serializers.JSONField(source="row.overall_epochs", allow_null=True)
    epoch_stats = serializers.JSONField(source="row.epoch_stats")
    tasks = serializers.JSONField()
    progress = serializers.DictField(child=serializers.IntegerField())
    episodes = EpisodeRowSerializer(many=True)

    def get_comparability(self, detail) -> dict:
        """``{"comparable", "reasons"}``: whether the run is comparable with the paper's rows, and why not."""
        return detail.row.comparability.as_dict()


class StepSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    kind = serializers.CharField()
    text = serializers.CharField()
    reasoning = serializers.CharField()
    tool_name = serializers.CharField()
    arguments = serializers.JSONField()
    result = serializers.JSONField()
    error = serializers.SerializerMethodField()
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    cache_read_tokens = serializers.IntegerField(allow_null=True)
    cache_write_tokens = serializers.IntegerField(allow_null=True)
    reasoning_tokens = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.FloatField(allow_null=True)
    cost_usd = CostField()
    created_at = serializers.DateTimeField()

    def get_error(self, step) -> str:
        """The error; a traceback (with server paths) for staff only, anyone else its last line without paths."""
        return step.error if self.context.get("staff") else public_error(step.error)


class EpisodeDetailSerializer(serializers.Serializer):
    """``selectors.EpisodeDetail``: the episode, its outcome and every step.

    ``score`` and ``scores`` (the scorer's per-item result, which names the gold answer) are
    given only when the ``scores_visible`` context says so.
    """

    id = serializers.IntegerField(source="episode.id")
    run = serializers.IntegerField(source="episode.run_id")
    suite = serializers.CharField(source="episode.run.suite.name")
    model = serializers.CharField(source="episode.run.model.name")
    instance = serializers.CharField(source="episode.record_id")
    task = serializers.CharField(source="episode.instance.task.code")
    status = serializers.CharField(source="episode.status")
    ended_by = serializers.CharField(source="episode.ended_by")
    attempt = serializers.IntegerField(source="episode.attempt")
    final_answer = serializers.JSONField(source="episode.final_answer")
    prediction = serializers.JSONField(source="episode.prediction")
    error_kind = serializers.CharField(source="episode.error_kind")
    error_message = serializers.SerializerMethodField()
    n_turns = serializers.IntegerField(source="episode.n_turns")
    n_tool_calls = serializers.IntegerField(source="episode.n_tool_calls")
    usage = serializers.SerializerMethodField()
    started_at = serializers.DateTimeField(source="episode.started_at", allow_null=True)
    finished_at = serializers.DateTimeField(source="episode.finished_at", allow_null=True)
    score = ScoreField()
    failure_modes = FailureModesField(source="episode.failure_modes")
    evidence_coverage = serializers.FloatField(source="episode.evidence_coverage", allow_null=True)
    steps = StepSerializer(many=True)

    def get_usage(self, detail) -> dict:
        episode = detail.episode
        return {
            **{name: getattr(episode, name) for name in TOKEN_FIELDS},
            "cost_usd": None if episode.cost_usd is None else float(episode.cost_usd),
            "wall_time_sec": episode.wall_time_sec,
        }

    def get_error_message(self, detail) -> str:
        episode = detail.episode
        return episode.error_message if self.context.get("staff") else public_episode_error(episode)

    def to_representation(self, detail):
        data = super().to_representation(detail)
        if self.context.get("scores_visible"):
            data["scores"] = detail.episode.scores
        return data


class TaskSerializer(serializers.Serializer):
    code = serializers.CharField()
    key = serializers.CharField()
    name = serializers.CharField()
    primary_metric = serializers.CharField()
    secondary_metrics = serializers.ListField(child=serializers.CharField())
    expected_count = serializers.IntegerField()
    max_tool_calls = serializers.IntegerField()
    max_turns = serializers.IntegerField()


class InstanceSerializer(serializers.BaseSerializer):
    """An instance as ``Instance.to_dict`` gives it; the hidden part only with ``include_hidden``."""

    def to_representation(self, instance):
        return {"id": instance.pk, **instance.to_dict(include_hidden=bool(self.context.get("include_hidden")))}


class ItemSerializer(serializers.BaseSerializer):
    """An instance's row of the item analysis, as ``items.selectors.item_rows`` gives it (JSON-ready)."""

    def to_representation(self, row):
        return dict(row)
