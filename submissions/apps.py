"""Outside submissions: the official runner's output uploaded, checked, rescored, reviewed and published."""
from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "submissions"
