"""Top-level URL routes: the admin, the REST API, staff login and the site's pages."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/env/", include("runs.env_urls")),
    path("api/", include("leaderboard.api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(next_page="leaderboard:index"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="leaderboard:index"), name="logout"),
    path("", include("leaderboard.urls")),
]
