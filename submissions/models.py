"""Submitters (a login and an API token, invited by staff) and their submissions of runs."""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models

from benchmark.models import Suite
from runs.models import Run


class Submitter(models.Model):
    """Someone staff invited to submit runs: their login, and the SHA-256 of their API token (shown once)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submitter")
    name = models.CharField(max_length=200)
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the API token, in hex.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()


class Submission(models.Model):
    """One uploaded run: its archive, the model's card, what the check found, and the review."""

    class Status(models.TextChoices):
        CHECKING = "checking", "being checked"
        REFUSED = "refused", "refused (nothing of it kept)"
        PENDING = "pending", "checked, waiting for review"
        PUBLISHING = "publishing", "approved, being published"
        APPROVED = "approved", "approved and published"
        REJECTED = "rejected", "rejected"
        SUPERSEDED = "superseded", "superseded by a later submission"

    submitter = models.ForeignKey(Submitter, on_delete=models.PROTECT, related_name="submissions")
    suite = models.ForeignKey(Suite, on_delete=models.PROTECT, related_name="submissions")
    # The model's card, as the submitter gives it.
    display_name = models.CharField(max_length=200)
    provider_model = models.CharField(max_length=200, help_text="The provider's model string, e.g. openai/gpt-4o.")
    organisation = models.CharField(max_length=200)
    family = models.CharField(max_length=100, blank=True)
    parameters = models.CharField(max_length=50, default="not reported", help_text='e.g. "70B", or "not reported".')
    open_weights = models.BooleanField(null=True, help_text="None: not reported.")
    link = models.URLField(max_length=500, blank=True)
    methodology = models.TextField(blank=True, max_length=5000)

    archive_name = models.CharField(max_length=255)
    archive_bytes = models.BigIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKING, db_index=True)
    progress = models.JSONField(default=dict, blank=True, help_text='How far the check is: {"done", "total"}.')
    verified = models.BooleanField(null=True, help_text="None until checked.")
    report = models.JSONField(default=dict, blank=True, help_text="What the check found (submissions.checks.Report).")
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="submission")
    review_reason = models.TextField(blank=True, max_length=5000)
    reviewed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["submitter", "created_at"], name="submission_by_submitter")]

    def __str__(self) -> str:
        return f"submission {self.pk} · {self.display_name} on {self.suite.name}"
