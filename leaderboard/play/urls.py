"""Routes of the play pages, under the "play" namespace (mounted at /play/ by config/urls.py)."""
from django.urls import path

from leaderboard.play import views as play_views

app_name = "play"

urlpatterns = [
    path("", play_views.index, name="index"),
    path("start/", play_views.start, name="start"),
    path("episodes/<id:pk>/", play_views.episode, name="episode"),
    path("episodes/<id:pk>/actions/", play_views.action, name="action"),
    path("episodes/<id:pk>/preview.json", play_views.preview, name="preview"),
    path("episodes/<id:pk>/steps/", play_views.steps, name="steps"),
    path("episodes/<id:pk>/record/window.json", play_views.record_window, name="record_window"),
    path("episodes/<id:pk>/steps/<id:index>/", play_views.step, name="step"),
    path("episodes/<id:pk>/steps/<id:index>/signal.json", play_views.signal, name="signal"),
]
