"""Releases, suites, tasks and instances; release import, prompts and the official scorer."""
from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmark"
