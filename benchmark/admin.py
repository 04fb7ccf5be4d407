"""Admin pages for tasks, releases, suites, instances and model specifications."""
from django.contrib import admin

from benchmark.models import Instance, ModelSpec, Release, Suite, Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["code", "key", "name", "primary_metric", "expected_count", "max_tool_calls", "max_turns"]
    search_fields = ["code", "key", "name"]


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "is_synthetic", "checksum", "created_at"]
    list_filter = ["is_synthetic"]
    search_fields = ["name", "version", "source", "checksum"]
    readonly_fields = ["checksum", "created_at"]


@admin.register(Suite)
class SuiteAdmin(admin.ModelAdmin):
    list_display = ["name", "release", "version", "is_partial", "is_synthetic", "created_at"]
    list_filter = ["is_partial", "release__is_synthetic"]
    list_select_related = ["release"]
    search_fields = ["name", "description", "release__name"]
    readonly_fields = ["created_at"]

    @admin.display(boolean=True, description="synthetic")
    def is_synthetic(self, suite: Suite) -> bool:
        return suite.is_synthetic


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ["record_id", "scenario_id", "suite", "task", "subject", "position", "duration_sec"]
    list_filter = ["task", "suite"]
    list_select_related = ["suite", "task"]
    search_fields = ["record_id", "scenario_id", "subject"]


@admin.register(ModelSpec)
class ModelSpecAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "provider_model",
        "family",
        "parameters",
        "context_window",
        "is_open_weight",
        "input_price_per_mtok",
        "output_price_per_mtok",
    ]
    list_filter = ["family", "is_open_weight"]
    search_fields = ["name", "provider_model", "family"]
