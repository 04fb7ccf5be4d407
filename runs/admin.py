"""Admin pages for runs, episodes, the (read-only) steps of each episode, and environment tokens."""
from django.contrib import admin

from runs.models import EnvironmentToken, Episode, Run, Step


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "model", "suite", "status", "source", "created_at", "cost_usd"]
    list_filter = ["status", "source", "model"]
    list_select_related = ["model", "suite"]
    search_fields = ["name", "model__name", "model__provider_model", "suite__name"]
    raw_id_fields = ["created_by"]
    # Where the worker sends a key, and which key, are set by the run form or the command line,
    # which check them (runs.model.routing); the admin shows them only.
    readonly_fields = [
        "api_base",
        "api_key_env",
        "created_by",
        "progress",
        "created_at",
        "prompt_tokens",
        "completion_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "cost_usd",
    ]

    @admin.display(description="episodes by status")
    def progress(self, run: Run) -> str:
        return ", ".join(f"{status} {count}" for status, count in run.progress().items())


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "instance",
        "status",
        "attempt",
        "ended_by",
        "error_kind",
        "n_turns",
        "n_tool_calls",
        "cost_usd",
    ]
    list_filter = ["status", "ended_by", "error_kind", "instance__task"]
    list_select_related = ["run", "instance"]
    search_fields = ["record_id", "instance__record_id", "instance__scenario_id", "run__name"]
    raw_id_fields = ["run", "instance"]
    show_full_result_count = False


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    """Steps are an append-only record: they can be looked at, never added, edited or removed here."""

    list_display = ["episode", "index", "kind", "tool_name", "latency_ms", "cost_usd", "created_at"]
    list_filter = ["kind"]
    list_select_related = ["episode__run", "episode__instance"]
    search_fields = ["tool_name", "episode__record_id"]
    raw_id_fields = ["episode"]
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(EnvironmentToken)
class EnvironmentTokenAdmin(admin.ModelAdmin):
    """Keys are issued by ``create_env_token`` or ``POST /api/env/runs/`` (shown once); here they are revoked."""

    list_display = ["run", "created_at", "revoked"]
    list_filter = ["revoked"]
    list_select_related = ["run"]
    fields = ["run", "key_hash", "created_at", "revoked"]
    readonly_fields = ["run", "key_hash", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False
