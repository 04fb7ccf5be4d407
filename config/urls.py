"""Top-level URL routes; each app adds its own routes here as it gains pages."""
from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
