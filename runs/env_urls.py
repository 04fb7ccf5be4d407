"""Routes of the environment API, mounted at /api/env/ by config/urls.py."""
from django.urls import path

from runs import env_api

app_name = "env"

urlpatterns = [
    path("runs/", env_api.RunListView.as_view(), name="runs"),
    path("runs/<int:run_id>/episodes/", env_api.EpisodeStartView.as_view(), name="episodes"),
    path("episodes/<int:episode_id>/actions/", env_api.ActionView.as_view(), name="actions"),
]
