"""Routes of the site's pages, under the "leaderboard" namespace (mounted at / by config/urls.py)."""
from django.urls import path, re_path

from leaderboard.analysis import views as analysis
from leaderboard.board import views as board
from leaderboard.comparison import views as comparison
from leaderboard.explorer import views as explorer
from leaderboard.items import views as items
from leaderboard.run_pages import control
from leaderboard.run_pages import views as run_pages
from leaderboard.search import views as search

app_name = "leaderboard"

urlpatterns = [
    path("", board.index, name="index"),
    re_path(r"^leaderboard\.(?P<fmt>csv|json)$", board.download, name="download"),
    path("tasks/<str:code>/", analysis.task, name="task"),
    path("tasks/<str:code>/items/", items.task_items, name="task_items"),
    path("tasks/<str:code>/items/<id:pk>/", items.task_item, name="task_item"),
    path("analysis/", analysis.analysis, name="analysis"),
    path("runs/", run_pages.runs_list, name="runs"),
    path("runs/new/", control.new_run, name="new_run"),
    path("runs/compare/", comparison.compare_runs, name="compare_runs"),
    path("runs/<id:pk>/", run_pages.run_detail, name="run"),
    path("runs/<id:pk>/progress.json", run_pages.run_progress, name="run_progress"),
    path("runs/<id:pk>/cancel/", control.run_cancel, name="run_cancel"),
    path("runs/<id:pk>/resume/", control.run_resume, name="run_resume"),
    path("episodes/", search.episodes, name="episodes"),
    re_path(r"^episodes/export\.(?P<fmt>csv|jsonl)$", search.export, name="episodes_export"),
    path("episodes/compare/", explorer.compare, name="compare"),
    path("episodes/<id:pk>/", explorer.episode, name="episode"),
    path("episodes/<id:pk>/record/", explorer.episode_record, name="episode_record"),
    path("episodes/<id:pk>/record/window.json", explorer.episode_record_window, name="episode_record_window"),
    path("episodes/<id:pk>/steps/<id:index>/", explorer.episode_step, name="episode_step"),
    path("episodes/<id:pk>/steps/<id:index>/signal.json", explorer.episode_signal, name="episode_signal"),
]
