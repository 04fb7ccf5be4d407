"""Routes of the REST API, mounted at /api/ by config/urls.py; /api/ itself lists them."""
from django.urls import path

from leaderboard.api import views

app_name = "api"

endpoints = [
    path("leaderboard/", views.LeaderboardView.as_view(), name="leaderboard"),
    path("runs/", views.RunListView.as_view(), name="runs"),
    path("runs/compare/", views.RunComparisonView.as_view(), name="compare_runs"),
    path("runs/<id:run_id>/", views.RunDetailView.as_view(), name="run"),
    path("episodes/", views.EpisodeListView.as_view(), name="episodes"),
    path("episodes/<id:episode_id>/", views.EpisodeDetailView.as_view(), name="episode"),
    path("tasks/", views.TaskListView.as_view(), name="tasks"),
    path("instances/", views.InstanceListView.as_view(), name="instances"),
    path("items/", views.ItemListView.as_view(), name="items"),
]

urlpatterns = [path("", views.ApiRootView.as_view(patterns=endpoints), name="root"), *endpoints]
