"""Runs of a model on a suite, their episodes (one per instance), and each episode's step record.

A step record is append-only: steps are added through ``runs.services.append_step`` with
contiguous indexes and never changed afterwards, so a replay shows exactly what happened.
"""
import hashlib
from collections.abc import Mapping

from django.conf import settings as django_settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Count, Q

from benchmark.models import Instance, ModelSpec, Suite
from runs.model.agent import PAPER_MAX_TOKENS, PAPER_PROTOCOL, PAPER_TEMPERATURE


class Status(models.TextChoices):
    """Life cycle shared by runs and episodes."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The statuses a run or an episode ends in.
FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


def status_counts(counts: Mapping[str, int]) -> dict[str, int]:
    """A run's progress: the number of episodes in each status, every status present (0 where none)."""
    return {status: counts.get(status, 0) for status in Status.values}


TOKEN_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


# How many times a run may play each instance (``Run.epochs``).
MAX_EPOCHS = 10


def default_decoding_settings() -> dict:
    """The settings of the official runner's shipped agent configs: text protocol, 8192 tokens, temperature 0."""
    return {"tool_protocol": PAPER_PROTOCOL, "temperature": PAPER_TEMPERATURE, "max_tokens": PAPER_MAX_TOKENS}


class Usage(models.Model):
    """Tokens and cost summed over what a row accounts for (a run's episodes, an episode's steps)."""

    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    reasoning_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(
        max_digits=16, decimal_places=8, null=True, blank=True, help_text="Blank means unpriced (never $0)."
    )

    class Meta:
        abstract = True


class Run(Usage):
    """One model run on selected tasks of one suite (or a run imported from elsewhere)."""

    Status = Status  # so callers can write Run.Status.RUNNING, as with Episode.Status

    class Source(models.TextChoices):
        RUN = "run", "run on this platform"
        IMPORTED = "imported", "imported from the official runner"
        EXTERNAL = "external", "driven by an external agent"
        SUBMISSION = "submission", "submitted from outside"

    name = models.CharField(max_length=200, blank=True)
    suite = models.ForeignKey(Suite, on_delete=models.PROTECT, related_name="runs")
    model = models.ForeignKey(ModelSpec, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    tasks = models.JSONField(default=list, help_text='Task codes, e.g. ["T2", "T5"].')
    api_base = models.CharField(max_length=500, blank=True)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z_][A-Za-z0-9_]*$",
                "Give the name of the environment variable that holds the key, not the key.",
            )
        ],
        help_text="Name of the environment variable holding the API key (never the key).",
    )
    settings = models.JSONField(
        default=default_decoding_settings, blank=True,
        help_text="Decoding settings (temperature, max_tokens) and how the model is called (tool_protocol, transport).",
    )  # fmt: skip
    prompt_set = models.CharField(
        max_length=16,
        choices=[("official", "official wording"), ("platform", "platform wording")],
        default="platform",
        help_text="Whose wording the model reads: the official package's, or the platform's (benchmark.wording).",
    )
    limits = models.JSONField(default=dict, blank=True, help_text="Caps, e.g. cost or turns.")
    epochs = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_EPOCHS)],
        help_text=f"How many times each instance is played (1 to {MAX_EPOCHS}); each play is an episode of its own.",
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.RUN)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="created_runs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name or f"run {self.pk}"

    def can_cancel(self) -> bool:
        """Whether the run may be cancelled: it has not ended. The one rule of the cancel button and ``cancel_run``."""
        return self.status in (Status.PENDING, Status.RUNNING)

    def can_resume(self) -> bool:
        """Whether the run may be resumed: one played here that has not completed.

        A failed or cancelled run plays its unfinished episodes again; a running one (perhaps stuck) its stale
        ones; a pending one sends its episodes to the queue again, when their tasks were lost with a worker.
        The one rule of the resume button and ``runs.queue.lifecycle.resume_run``.
        """
        return self.source == self.Source.RUN and self.status != Status.COMPLETED

    def progress(self) -> dict[str, int]:
        """Return the number of this run's episodes in each status, every status present."""
        return status_counts(dict(self.episodes.values_list("status").annotate(n=Count("id")).order_by()))


class Episode(Usage):
    """One play of an instance within one run (one per epoch): outcome, score and usage of the latest attempt."""

    Status = Status

    class EndedBy(models.TextChoices):
        FINAL_ANSWER = "final_answer"
        FORMAT_FAILURE = "format_failure"
        TURN_LIMIT = "turn_limit"
        TOOL_CALL_LIMIT = "tool_call_limit"
        CONTEXT_EXCEEDED = "context_exceeded"
        COST_CAP = "cost_cap"
        PROVIDER_ERROR = "provider_error"
        CANCELLED = "cancelled"
        ABANDONED = "abandoned", "abandoned (an external agent stopped acting)"
        PROCESS_LOST = "process_lost", "process lost (the process playing its run stopped)"

    class ErrorKind(models.TextChoices):
        INFRASTRUCTURE = "infrastructure", "infrastructure (not scored, re-runnable)"
        TOOL_BUG = "tool_bug", "tool bug"

    # Everything an attempt produces; a retry puts these back to their defaults.
    OUTCOME_FIELDS = (
        "final_answer",
        "prediction",
        "scores",
        "ended_by",
        "error_kind",
        "error_message",
        "failure_modes",
        "failure_codes",
        "evidence_coverage",
        "n_turns",
        "n_tool_calls",
        *TOKEN_FIELDS,
        "cost_usd",
        "wall_time_sec",
        "started_at",
        "finished_at",
        "queued_at",
        "heartbeat_at",
    )

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="episodes")
    instance = models.ForeignKey(Instance, on_delete=models.PROTECT, related_name="episodes")
    record_id = models.CharField(
        max_length=64,
        help_text="The opaque record id this episode's agent sees, its own: no other episode of the instance "
        "nor of its run has it (shaped like the release's id, see runs.services.episode_record_ids); an "
        "imported episode keeps the release's id its trajectory names.",
    )
    epoch = models.PositiveSmallIntegerField(
        default=0, help_text="Which play of the instance this is within its run, 0-based (below Run.epochs)."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt = models.PositiveIntegerField(default=1, help_text="1 for the first attempt, +1 per retry.")
    final_answer = models.JSONField(null=True, blank=True, help_text="The final answer as the agent gave it.")
    prediction = models.JSONField(null=True, blank=True, help_text="What the scorer is given.")
    scores = models.JSONField(default=dict, blank=True, help_text="Metric → value.")
    ended_by = models.CharField(max_length=32, choices=EndedBy.choices, blank=True)
    error_kind = models.CharField(max_length=32, choices=ErrorKind.choices, blank=True)
    error_message = models.TextField(blank=True)
    failure_modes = models.JSONField(
        null=True, blank=True,
        help_text='How the episode went wrong (runs.failures): [{"code", "steps": [step index, ...]}, ...]; '
        "blank until classified when it ended (manage.py classify_episodes classifies the others).",
    )
    failure_codes = models.CharField(
        max_length=400, blank=True, default="",
        help_text="The failure modes' codes, each between spaces (' no_tool_call repeated_call '), for filters.",
    )
    evidence_coverage = models.FloatField(
        null=True, blank=True,
        help_text="Share of the record's duration the signal-reading calls covered before the answer (signal tasks).",
    )
    n_turns = models.PositiveIntegerField(default=0)
    n_tool_calls = models.PositiveIntegerField(default=0)
    wall_time_sec = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(
        null=True, blank=True, help_text="When a queue task was sent for this attempt (blank: not yet sent)."
    )
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of the worker playing this attempt; a running episode whose worker "
        "has been silent for longer than the lease is presumed dead (runs.queue.leases).",
    )

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "instance", "epoch"], name="episode_one_per_instance_per_epoch"),
        ]
        indexes = [
            models.Index(fields=["run", "status"], name="episode_run_status"),
            # The search's default order, newest first: SQLite reads it backwards (PostgreSQL sorts the top rows).
            models.Index(fields=["finished_at", "id"], name="episode_finished"),
        ]

    def __str__(self) -> str:
        return f"{self.run} · {self.instance}"

    def clear_outcome(self) -> None:
        """Put every outcome field back to its default, in memory; the caller saves."""
        for name in self.OUTCOME_FIELDS:
            setattr(self, name, self._meta.get_field(name).get_default())

    def to_dict(self) -> dict:
        """Return the episode's outcome and usage as JSON-ready data."""
        return {
            "id": self.pk,
            "run": self.run_id,
            "record_id": self.record_id,
            "task": self.instance.task.code,
            "status": self.status,
            "attempt": self.attempt,
            "final_answer": self.final_answer,
            "prediction": self.prediction,
            "scores": self.scores,
            "ended_by": self.ended_by,
            "error_kind": self.error_kind,
            "error_message": self.error_message,
            "usage": {
                "turns": self.n_turns,
                "tool_calls": self.n_tool_calls,
                **{name: getattr(self, name) for name in TOKEN_FIELDS},
                "cost_usd": None if self.cost_usd is None else float(self.cost_usd),
                "wall_time_sec": self.wall_time_sec,
            },
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


class AppendOnlyError(Exception):
    """Raised on an attempt to change a step that is already stored."""


class StepQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Steps are append-only; they cannot be updated.")


class Step(models.Model):
    """One event of an episode: the prompt, a model turn, a tool call with its result, a nudge, …"""

    class Kind(models.TextChoices):
        PROMPT = "prompt"
        AGENT_MESSAGE = "agent_message"
        TOOL_CALL = "tool_call"
        FINAL_ANSWER = "final_answer"
        NUDGE = "nudge"
        ERROR = "error"

    # No index of its own: the unique (episode, index) and the (episode, kind, tool_name) index both lead with it.
    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="steps", db_index=False)
    index = models.PositiveIntegerField(help_text="0-based position in the episode.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField(blank=True)
    reasoning = models.TextField(blank=True)
    tool_name = models.CharField(max_length=64, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_read_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_write_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = StepQuerySet.as_manager()

    class Meta:
        ordering = ["index"]
        constraints = [
            models.UniqueConstraint(fields=["episode", "index"], name="step_index_unique_per_episode"),
            models.CheckConstraint(condition=Q(index__gte=0), name="step_index_non_negative"),
        ]
        # An episode's steps of a kind (its replies, its calls of a tool) without reading the steps themselves.
        indexes = [models.Index(fields=["episode", "kind", "tool_name"], name="step_episode_kind_tool")]

    def __str__(self) -> str:
        return f"{self.index} {self.kind}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Steps are append-only; a stored step cannot be changed.")
        # An unsaved instance given the id of a stored row must not overwrite it.
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)


class EnvironmentToken(models.Model):
    """The key that lets an external agent drive one run's episodes through the environment API.

    Only the key's SHA-256 is stored; the key itself is shown once, when it is issued
    (``runs.environment.service.issue_token``).
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="environment_token")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, in hex.")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"token of {self.run}"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()
