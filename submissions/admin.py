from django.contrib import admin

from submissions.models import Submission, Submitter


@admin.register(Submitter)
class SubmitterAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "created_at")
    search_fields = ("name", "user__username", "user__email")
    readonly_fields = ("key_hash", "created_at")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "display_name", "suite", "submitter", "status", "verified", "created_at")
    list_filter = ("status", "verified", "suite")
    search_fields = ("display_name", "provider_model", "organisation", "submitter__name")
    readonly_fields = ("report", "progress", "run", "archive_name", "archive_bytes", "created_at", "checked_at",
                       "reviewed_at", "reviewed_by", "superseded_by", "verified", "status")
