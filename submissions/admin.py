from django.contrib import admin, messages

from submissions.models import Submission, Submitter
from submissions.services import issue_key


@admin.register(Submitter)
class SubmitterAdmin(admin.ModelAdmin):
    """Staff invite a submitter here too: choose their login (made in Users) and a name; the API token is
    made on saving and shown once, in the message at the top of the page."""

    list_display = ("name", "user", "created_at")
    search_fields = ("name", "user__username", "user__email")
    fields = ("user", "name", "created_at")
    readonly_fields = ("created_at",)
    actions = ["new_token"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.key_hash = Submitter.hash_key(f"unset-{obj.user_id}")  # replaced at once by the token below
        super().save_model(request, obj, form, change)
        if not change:
            key = issue_key(obj)
            messages.success(request, f"{obj.name}'s API token (shown only now, send it to them): {key}")

    @admin.action(description="Give the chosen submitters new API tokens (the old ones stop working)")
    def new_token(self, request, queryset):
        for submitter in queryset:
            messages.success(request, f"{submitter.name}'s new API token (shown only now): {issue_key(submitter)}")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "display_name", "suite", "submitter", "status", "verified", "created_at")
    list_filter = ("status", "verified", "suite")
    search_fields = ("display_name", "provider_model", "organisation", "submitter__name")
    readonly_fields = ("report", "progress", "run", "archive_name", "archive_bytes", "created_at", "checked_at",
                       "reviewed_at", "reviewed_by", "superseded_by", "verified", "status")
