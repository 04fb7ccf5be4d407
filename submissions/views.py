"""The submitters' pages (their submissions, the upload, one submission) and staff's review of a submission."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from submissions.forms import ReviewForm, SubmissionForm
from submissions.models import Submission, Submitter
from submissions.services import SubmissionError, over_rate, reject, request_approval, submit, submittable_suites


def _submitter(request: HttpRequest) -> Submitter | None:
    return Submitter.objects.filter(user=request.user).first() if request.user.is_authenticated else None


def submitter_or_staff(view):
    """Signed-in submitters and staff; anyone else signs in first, or is refused (403)."""

    def checked(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        request.submitter = _submitter(request)
        if request.submitter is None and not request.user.is_staff:
            raise PermissionDenied("Only invited submitters submit runs.")
        return view(request, *args, **kwargs)

    checked.__name__, checked.__doc__ = view.__name__, view.__doc__
    return checked


def visible_submissions(request: HttpRequest):
    """Staff see every submission; a submitter only their own."""
    submissions = Submission.objects.select_related("suite", "submitter", "run")
    return submissions if request.user.is_staff else submissions.filter(submitter=request.submitter)


@submitter_or_staff
def submission_list(request: HttpRequest) -> HttpResponse:
    """Your submissions (every one, for staff), newest first, with their state and outcome."""
    return render(request, "submissions/list.html", {
        "nav": "submissions", "submissions": visible_submissions(request)[:200], "can_submit": request.submitter is not None,
    })


@require_http_methods(["GET", "HEAD", "POST"])
@submitter_or_staff
def new_submission(request: HttpRequest) -> HttpResponse:
    """Upload one run's output with the model's card; the check runs in the queue."""
    if request.submitter is None:
        raise PermissionDenied("Only invited submitters submit runs; staff review them.")
    form = SubmissionForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                submission = submit(submitter=request.submitter, suite=form.cleaned_data["suite"], card=form.card(),
                                    upload=form.cleaned_data["archive"])
            except SubmissionError as error:
                form.add_error(None, str(error))
            else:
                messages.success(request, f"Submission {submission.pk} was received; it is being checked.")
                return redirect("submissions:detail", pk=submission.pk)
        status = 400
    return render(request, "submissions/new.html", {
        "nav": "submissions", "form": form, "suites": submittable_suites(), "rate": over_rate(request.submitter),
    }, status=status)


@submitter_or_staff
def submission_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One submission: its state, what the check found per task, its reasons, and (staff) the review."""
    submission = get_object_or_404(visible_submissions(request), pk=pk)
    return render(request, "submissions/detail.html", {
        "nav": "submissions", "submission": submission, "report": submission.report or {},
        "review": ReviewForm() if request.user.is_staff and submission.status == Submission.Status.PENDING else None,
    })


@require_POST
@submitter_or_staff
def review(request: HttpRequest, pk: int) -> HttpResponse:
    """Staff approve (publish) or reject a checked submission."""
    if not request.user.is_staff:
        raise Http404("No such page.")
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return redirect("submissions:detail", pk=pk)
    try:
        if form.cleaned_data["decision"] == "approve":
            request_approval(pk, by=request.user, reason=form.cleaned_data["reason"])
            messages.success(request, f"Submission {pk} is approved; a queue worker publishes it as a run.")
        else:
            reject(pk, by=request.user, reason=form.cleaned_data["reason"])
            messages.success(request, f"Submission {pk} was rejected.")
    except SubmissionError as error:
        messages.error(request, str(error))
    except Submission.DoesNotExist:
        raise Http404("No such submission.") from None
    return redirect("submissions:detail", pk=pk)
