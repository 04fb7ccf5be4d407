"""The ten EEG tools: recording access, signal functions, registry and output budget."""
from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tools_app"
    verbose_name = "EEG tools"

    def ready(self):
        from django.conf import settings

        from tools_app.signal import stored

        stored.configure(settings.EEGAB_STATS_DIR)
