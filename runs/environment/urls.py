"""Routes of the environment API, mounted at /api/env/ by config/urls.py."""
from django.urls import path

from runs.environment import api

app_name = "env"

urlpatterns = [
    path("runs/", api.RunListView.as_view(), name="runs"),
    path("runs/<id:run_id>/episodes/", api.EpisodeStartView.as_view(), name="episodes"),
    path("episodes/<id:episode_id>/actions/", api.ActionView.as_view(), name="actions"),
]
