"""The submissions API: ``POST /api/submissions/`` (multipart: the upload form's fields), ``GET /api/submissions/``
(your submissions) and ``GET /api/submissions/<id>/`` (status, verified, reasons, problems, scores per task).

A submitter authenticates with ``Authorization: Token <token>`` (``manage.py invite_submitter`` prints it),
or their signed-in session; staff see every submission. Uploads are limited per submitter
(``EEGAB_SUBMISSION_RATE``: 429 beyond).
"""
from __future__ import annotations

from django.urls import path, reverse
from rest_framework import status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from submissions.forms import SubmissionForm
from submissions.models import Submission, Submitter
from submissions.services import SubmissionError, over_rate, submit, submitter_for_key


class SubmitterTokenAuthentication(BaseAuthentication):
    """``Authorization: Token <token>``: the request acts for the token's submitter."""

    keyword = b"token"

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword:
            return None
        if len(header) != 2:
            raise AuthenticationFailed("Send the token as 'Authorization: Token <token>'.")
        submitter = submitter_for_key(header[1].decode("latin-1"))
        if submitter is None:
            raise AuthenticationFailed("Unknown token.")
        return (submitter.user, submitter)

    def authenticate_header(self, request):
        return 'Token realm="submissions"'


def submission_json(submission: Submission) -> dict:
    """A submission as the API gives it."""
    report = submission.report or {}
    return {
        "id": submission.pk,
        "url": reverse("submissions:detail", args=[submission.pk]),
        "suite": submission.suite.name,
        "status": submission.status,
        "verified": submission.verified,
        "progress": submission.progress or None,
        "problems": report.get("problems", []),
        "reasons": report.get("reasons", []),
        "tasks": report.get("tasks", {}),
        "settings": report.get("settings", {}),
        "prompt_set": report.get("prompt_set"),
        "run": submission.run_id,
        "review_reason": submission.review_reason,
        "card": {"display_name": submission.display_name, "provider_model": submission.provider_model,
                 "organisation": submission.organisation, "family": submission.family,
                 "parameters": submission.parameters, "open_weights": submission.open_weights,
                 "link": submission.link, "methodology": submission.methodology},
        "created_at": submission.created_at,
        "checked_at": submission.checked_at,
        "reviewed_at": submission.reviewed_at,
    }


class _SubmissionsView(APIView):
    authentication_classes = [SubmitterTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def submitter(self, request) -> Submitter | None:
        if isinstance(request.auth, Submitter):
            return request.auth
        return Submitter.objects.filter(user=request.user).first()

    def visible(self, request):
        submissions = Submission.objects.select_related("suite")
        if request.user.is_staff and not isinstance(request.auth, Submitter):
            return submissions
        submitter = self.submitter(request)
        if submitter is None:
            raise PermissionDenied("Only invited submitters submit runs.")
        return submissions.filter(submitter=submitter)


class SubmissionListView(_SubmissionsView):
    parser_classes = [MultiPartParser, FormParser]

    def get(self, request):
        return Response([submission_json(submission) for submission in self.visible(request)[:200]])

    def post(self, request):
        submitter = self.submitter(request)
        if submitter is None:
            raise PermissionDenied("Only invited submitters submit runs.")
        refused = over_rate(submitter)
        if refused:
            return Response({"detail": refused}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        form = SubmissionForm(request.data, request.FILES)
        if not form.is_valid():
            return Response({"errors": {field: [str(error) for error in errors] for field, errors in form.errors.items()}},
                            status=status.HTTP_400_BAD_REQUEST)
        try:
            submission = submit(submitter=submitter, suite=form.cleaned_data["suite"], card=form.card(),
                                upload=form.cleaned_data["archive"])
        except SubmissionError as error:
            return Response({"errors": {"__all__": [str(error)]}}, status=status.HTTP_400_BAD_REQUEST)
        url = reverse("submissions_api:detail", args=[submission.pk])
        return Response(submission_json(submission), status=status.HTTP_201_CREATED, headers={"Location": url})


class SubmissionDetailView(_SubmissionsView):
    def get(self, request, pk: int):
        submission = self.visible(request).filter(pk=pk).first()
        if submission is None:
            raise NotFound("No such submission.")
        return Response(submission_json(submission))


app_name = "submissions_api"
urlpatterns = [
    path("", SubmissionListView.as_view(), name="list"),
    path("<id:pk>/", SubmissionDetailView.as_view(), name="detail"),
]
