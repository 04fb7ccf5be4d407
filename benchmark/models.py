"""Benchmark content: the six tasks, imported releases, suites built from them, and their instances.

A release is a directory in the official layout; importing it creates a suite whose instances
carry the prompt an agent sees, the recording it may analyse, and the hidden reference answer.
Model specifications (what can be run and what it costs) live here too, because leaderboard
rows from the paper refer to them as well as runs do.
"""
import hashlib
import json

from django.db import models

OFFICIAL_TASKS = (
    {
        "code": "T1",
        "key": "knowledge_qa",
        "name": "EEG knowledge QA",
        "primary_metric": "accuracy",
        "secondary_metrics": [],
        "expected_count": 38,
        "max_tool_calls": 0,
    },
    {
        "code": "T2",
        "key": "artifact_identification",
        "name": "Artifact identification",
        "primary_metric": "macro_f1",
        "secondary_metrics": ["accuracy"],
        "expected_count": 300,
    },
    {
        "code": "T3",
        "key": "epilepsy_screening",
        "name": "Normal vs epileptic",
        "primary_metric": "macro_f1",
        "secondary_metrics": ["accuracy"],
        "expected_count": 188,
    },
    {
        "code": "T4",
        "key": "dementia_cohort_classification",
        "name": "Dementia cohort classification",
        "primary_metric": "macro_f1",
        "secondary_metrics": ["accuracy"],
        "expected_count": 69,
    },
    {
        "code": "T5",
        "key": "seizure_detection",
        "name": "Seizure event detection",
        "primary_metric": "event_f1",
        "secondary_metrics": ["dice_s"],
        "expected_count": 280,
    },
    {
        "code": "T6",
        "key": "sleep_staging",
        "name": "Sleep staging",
        "primary_metric": "macro_f1",
        "secondary_metrics": ["cohen_kappa"],
        "expected_count": 197,
    },
)


class TaskManager(models.Manager):
    # Available to migrations, so the data migration that installs the official tasks
    # runs this very method on the historical model.
    use_in_migrations = True

    def ensure_official(self) -> None:
        """Create the six official tasks, or restore their official values; safe to call repeatedly."""
        for spec in OFFICIAL_TASKS:
            defaults = {"max_tool_calls": 999, "max_turns": 1000, **spec}
            self.update_or_create(code=defaults.pop("code"), defaults=defaults)


class Task(models.Model):
    """One of the benchmark's six tasks, with its metrics, official size and episode limits."""

    code = models.CharField(max_length=4, unique=True, help_text="T1 … T6")
    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100)
    primary_metric = models.CharField(max_length=32)
    secondary_metrics = models.JSONField(default=list, blank=True)
    expected_count = models.PositiveIntegerField(help_text="Number of instances in an official run.")
    max_tool_calls = models.PositiveIntegerField(default=999)
    max_turns = models.PositiveIntegerField(default=1000)

    objects = TaskManager()

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class Release(models.Model):
    """An imported release directory: where it came from and the files it held."""

    name = models.CharField(max_length=100)
    version = models.CharField(max_length=50)
    source = models.TextField(blank=True, help_text="Where the release came from: a path or a URL.")
    is_synthetic = models.BooleanField(default=False)
    manifest = models.JSONField(
        default=dict, blank=True, help_text='Relative path → {"sha256": …, "size": …} for every file.'
    )
    checksum = models.CharField(max_length=64, editable=False, help_text="sha256 of the manifest.")
    descriptor = models.TextField(
        blank=True, help_text="The release's benchmark/benchmark.json, verbatim (written back by an export)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="release_name_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    # A row per file of the release, and benchmark.json verbatim: what imports and exports need,
    # and no page or episode. Large for the official release, so left unread where a release is
    # loaded along with something else.
    FILE_LIST_FIELDS = ("manifest", "descriptor")

    @classmethod
    def unread(cls, path: str) -> list[str]:
        """The ``defer()`` lookups that leave the file list of the release at ``path`` unread.

        ``path`` is the lookup that reaches the release, e.g. ``"instance__suite__release"``.
        """
        return [f"{path}__{name}" for name in cls.FILE_LIST_FIELDS]

    @staticmethod
    def checksum_of(manifest: dict) -> str:
        """Return the sha256 of ``manifest`` in canonical JSON, so equal manifests give equal checksums."""
        canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def save(self, *args, **kwargs):
        self.checksum = self.checksum_of(self.manifest)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "manifest" in update_fields:
            kwargs["update_fields"] = {*update_fields, "checksum"}
        super().save(*args, **kwargs)


class Suite(models.Model):
    """A set of instances built from one release; runs are made against a suite.

    ``references`` says who may learn its answers: ``public`` (its answer keys are published, as
    the official release's are) or ``held-out`` (only staff see its episodes and per-item scores;
    everyone else, agents included, sees run-level scores only: ``leaderboard.access``).
    """

    class References(models.TextChoices):
        PUBLIC = "public", "public"
        HELD_OUT = "held-out", "held out"

    name = models.SlugField(max_length=100, unique=True)
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="suites")
    version = models.PositiveIntegerField(default=1)
    is_partial = models.BooleanField(
        default=False, help_text="Some tasks or instances of the release were not imported."
    )
    skipped = models.JSONField(default=list, blank=True, help_text="What the import left out, and why.")
    description = models.TextField(blank=True)
    references = models.CharField(
        max_length=10, choices=References.choices, default=References.PUBLIC,
        help_text="public: its answer keys are published; held-out: only staff see its episodes and per-item scores.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_held_out(self) -> bool:
        return self.references == self.References.HELD_OUT

    @property
    def is_synthetic(self) -> bool:
        return self.release.is_synthetic

    @property
    def public_description(self) -> str:
        """The description without the directory the release was imported from (staff-only knowledge).

        Suites imported before descriptions stopped naming the directory still hold it.
        """
        source = self.release.source
        return self.description.replace(f" from {source}", "") if source else self.description


class Instance(models.Model):
    """One scenario of a suite: what the agent is shown, the recording, and the hidden reference.

    ``scenario_id`` is the release's own id, which encodes the label (``c3_routine_bonn_S001``),
    so it is never shown to an agent; agents see ``record_id``, an opaque id issued per suite.
    """

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="instances")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="instances")
    scenario_id = models.CharField(max_length=200)
    record_id = models.CharField(max_length=64)
    release_record_id = models.CharField(
        max_length=64, blank=True, help_text="The release's own record id; sequential, so never shown to an agent."
    )
    subject = models.CharField(max_length=64, blank=True, help_text="e.g. chb17 for chb17a.")
    duration_sec = models.FloatField(null=True, blank=True)
    sfreq = models.FloatField(null=True, blank=True, help_text="Sampling rate in Hz.")
    n_channels = models.PositiveIntegerField(null=True, blank=True)
    n_epochs = models.PositiveIntegerField(null=True, blank=True, help_text="30-s epochs (T6).")
    metadata = models.JSONField(default=dict, blank=True, help_text="Whitelisted metadata for the prompt.")
    prompt_input = models.JSONField(default=dict, blank=True, help_text="The scenario's input block.")
    expected_output_schema = models.JSONField(default=dict, blank=True)
    allowed_tools = models.JSONField(default=list, blank=True, help_text="Tool names the scenario allows.")
    recording_path = models.TextField(blank=True, help_text="Relative to the release root; blank for T1.")
    reference = models.JSONField(default=dict, blank=True, help_text="The hidden gold answer.")
    position = models.PositiveIntegerField(default=0, help_text="Order within the task.")
    release_lines = models.JSONField(
        default=dict,
        blank=True,
        help_text='The release lines this instance came from, verbatim: {"scenario"|"runtime"|"answer_key"|'
        '"manifest": {"line": n, "text": "…"}}, so an export reproduces the files byte for byte.',
    )

    class Meta:
        ordering = ["suite_id", "task_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "scenario_id"], name="instance_scenario_unique_per_suite"),
            models.UniqueConstraint(fields=["suite", "record_id"], name="instance_record_unique_per_suite"),
        ]
        indexes = [models.Index(fields=["suite", "task", "position"], name="instance_suite_task_position")]

    def __str__(self) -> str:
        return self.record_id

    @property
    def recording_sec(self) -> float | None:
        """The recording's duration in seconds: the field, else the release metadata's; None when neither has it."""
        return (self.metadata or {}).get("duration_sec") if self.duration_sec is None else self.duration_sec

    @property
    def epochs_total(self) -> int | None:
        """A night's 30-s epochs: the field, else the release metadata's ``n_epochs_total``; None when neither has it."""
        count = self.n_epochs or (self.metadata or {}).get("n_epochs_total")
        return int(count) if count is not None else None

    def to_dict(self, *, include_hidden: bool = False) -> dict:
        """Return the instance as JSON-ready data.

        Without ``include_hidden`` only what an agent may see is returned. The hidden part
        (scenario id, subject, recording path, reference) can reveal the label: scenario ids
        and paths name it, and subject numbering follows the cohorts in some datasets.
        """
        data = {
            "record_id": self.record_id,
            "task": self.task.code,
            "duration_sec": self.duration_sec,
            "sfreq": self.sfreq,
            "n_channels": self.n_channels,
            "n_epochs": self.n_epochs,
            "metadata": self.metadata,
            "input": self.prompt_input,
            "expected_output_schema": self.expected_output_schema,
        }
        if include_hidden:
            data |= {
                "scenario_id": self.scenario_id,
                "release_record_id": self.release_record_id,
                "subject": self.subject,
                "recording_path": self.recording_path,
                "reference": self.reference,
            }
        return data


class ModelSpec(models.Model):
    """A model that can be run or shown on the leaderboard, with its size and token prices.

    Prices are in USD per million tokens; a blank price means unpriced, never free.
    """

    name = models.CharField(max_length=100, unique=True, help_text="Display name, e.g. GPT-5.5.")
    provider_model = models.CharField(
        max_length=200, help_text="litellm model string, e.g. openai/gpt-4o or baseline/heuristic."
    )
    family = models.CharField(max_length=100, blank=True)
    parameters = models.CharField(max_length=32, blank=True, help_text='As published, e.g. "21B-A3B".')
    parameters_b = models.FloatField(null=True, blank=True, help_text="Billions of parameters, for plots.")
    context_window = models.PositiveIntegerField(null=True, blank=True, help_text="In tokens.")
    is_open_weight = models.BooleanField(null=True, blank=True)
    input_price_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    output_price_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached_input_price_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    litellm_rates = models.JSONField(
        null=True, blank=True, editable=False,
        help_text="The model's standard rates in litellm's price map, taken when a run of it was made "
                  "(runs.cost.kept_litellm_rates): pages read them instead of loading litellm.",
    )  # fmt: skip
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
