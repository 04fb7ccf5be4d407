"""Aggregation, charts, public pages and the REST API."""
from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "leaderboard"

    def ready(self):
        from leaderboard import receivers  # noqa: F401  (refreshes summaries as runs' episodes end)
