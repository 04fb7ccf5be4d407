"""Top-level URL routes: the admin, the REST API, staff login, the favicon, the play pages and the site's pages."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path, register_converter
from django.views.decorators.http import require_safe

from config.ids import IdConverter

# Before the routes that name it are read (the includes below).
register_converter(IdConverter, "id")


@require_safe
def favicon(request):
    """Browsers ask for /favicon.ico whatever a page links to (an API response links nothing): the site's icon."""
    return redirect(static("favicon.svg"))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/env/", include("runs.environment.urls")),
    path("api/submissions/", include("submissions.api")),
    path("api/", include("leaderboard.api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(next_page="leaderboard:index"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="leaderboard:index"), name="logout"),
    path("favicon.ico", favicon, name="favicon"),
    path("play/", include("leaderboard.play.urls")),
    path("submissions/", include("submissions.urls")),
    path("", include("leaderboard.urls")),
]
