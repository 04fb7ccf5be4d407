"""Routes of the play pages, under the "play" namespace (mounted at /play/ by config/urls.py)."""
from django.urls import path

from leaderboard.play import views as play_views

app_name = "play"

urlpatterns = [
    path("", play_views.index, name="index"),
    path("start/", play_views.start, name="start"),
    path("episodes/<int:pk>/", play_views.episode, name="episode"),
    path("episodes/<int:pk>/actions/", play_views.action, name="action"),
    path("episodes/<int:pk>/preview.json", play_views.preview, name="preview"),
    path("episodes/<int:pk>/steps/", play_views.steps, name="steps"),
    path("episodes/<int:pk>/steps/<int:index>/", play_views.step, name="step"),
    path("episodes/<int:pk>/steps/<int:index>/signal.json", play_views.signal, name="signal"),
]
