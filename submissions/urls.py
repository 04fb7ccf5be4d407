from django.urls import path

from submissions import views

app_name = "submissions"

urlpatterns = [
    path("", views.submission_list, name="list"),
    path("new/", views.new_submission, name="new"),
    path("<id:pk>/", views.submission_detail, name="detail"),
    path("<id:pk>/review/", views.review, name="review"),
]
