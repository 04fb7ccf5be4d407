"""Routes of the site's pages, under the "leaderboard" namespace (mounted at / by config/urls.py)."""
from django.urls import path, re_path

from leaderboard import views

app_name = "leaderboard"

urlpatterns = [
    path("", views.index, name="index"),
    re_path(r"^leaderboard\.(?P<fmt>csv|json)$", views.download, name="download"),
    path("tasks/<str:code>/", views.task, name="task"),
    path("analysis/", views.analysis, name="analysis"),
    path("runs/", views.runs_list, name="runs"),
    path("runs/new/", views.new_run, name="new_run"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/progress.json", views.run_progress, name="run_progress"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run_resume"),
    path("episodes/compare/", views.compare, name="compare"),
    path("episodes/<int:pk>/", views.episode, name="episode"),
    path("episodes/<int:pk>/steps/<int:index>/", views.episode_step, name="episode_step"),
    path("episodes/<int:pk>/steps/<int:index>/signal.json", views.episode_signal, name="episode_signal"),
]
