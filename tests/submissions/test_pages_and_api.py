"""Submitting as a researcher does: invited by a command, uploading on the page or through the API with a token,
reading the outcome; staff review on the page or by command; the run shows on the board marked submitted."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from benchmark.models import Suite
from runs.models import Run
from submissions import services
from submissions.models import Submission
from tests.submissions.conftest import CARD, upload, zip_directory

pytestmark = pytest.mark.django_db


def form_data(suite, data: bytes, **card) -> dict:
    fields = {**CARD, "open_weights": "yes", **card}
    return {**fields, "suite": suite.name, "archive": upload(data)}


def api(submitter=None, key=None) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key or submitter.key}")


def test_staff_invite_a_submitter_who_gets_a_login_and_a_token_once(db):
    out = io.StringIO()
    call_command("invite_submitter", "grace@example.org", "--name", "Grace", stdout=out)
    printed = out.getvalue()
    assert "Invited Grace <grace@example.org>" in printed and "API token (shown only now): eegab_sub_" in printed
    key = printed.split("API token (shown only now): ")[1].split()[0]
    assert services.submitter_for_key(key).name == "Grace"
    password = printed.split("password (shown only now): ")[1].split()[0]
    signed_in = Client().post(reverse("login"), {"username": "grace@example.org", "password": password})
    assert signed_in.status_code == 302 and signed_in["Location"] != reverse("login")
    with pytest.raises(CommandError, match="already a login"):
        call_command("invite_submitter", "GRACE@example.org", stdout=io.StringIO())


def test_an_upload_through_the_api_is_checked_and_its_outcome_read_back(
    exported, submitter, django_capture_on_commit_callbacks, django_user_model
):
    suite, _, root = exported
    with django_capture_on_commit_callbacks(execute=True):
        response = api(submitter).post(reverse("submissions_api:list"), form_data(suite, zip_directory(root)))
    assert response.status_code == 201, response.content
    created = response.json()
    assert response["Location"] == reverse("submissions_api:detail", args=[created["id"]])
    detail = api(submitter).get(response["Location"]).json()
    assert (detail["status"], detail["verified"], detail["reasons"], detail["problems"]) == ("pending", True, [], [])
    assert sorted(detail["tasks"]) == ["T1", "T2", "T3", "T4", "T5", "T6"]
    assert detail["card"]["open_weights"] is True and detail["card"]["display_name"] == CARD["display_name"]
    assert [row["id"] for row in api(submitter).get(reverse("submissions_api:list")).json()] == [created["id"]]
    other, _, other_key = services.invite_submitter(email="eve@example.org")
    assert api(key=other_key).get(response["Location"]).status_code == 404
    assert api(key=other_key).get(reverse("submissions_api:list")).json() == []
    assert Client().get(response["Location"]).status_code in (401, 403)
    assert api(key="eegab_sub_forged").get(response["Location"]).status_code == 401


def test_the_api_names_each_bad_field_and_refuses_a_held_out_suite_and_too_many_uploads(
    exported, submitter, settings, django_capture_on_commit_callbacks
):
    suite, _, root = exported
    response = api(submitter).post(reverse("submissions_api:list"), {"display_name": "X"})
    assert response.status_code == 400
    assert {"suite", "archive", "provider_model", "organisation"} <= set(response.json()["errors"])
    settings.EEGAB_SUBMISSION_RATE = "1/day"
    with django_capture_on_commit_callbacks(execute=True):
        assert api(submitter).post(reverse("submissions_api:list"), form_data(suite, zip_directory(root))).status_code == 201
    again = api(submitter).post(reverse("submissions_api:list"), form_data(suite, zip_directory(root)))
    assert again.status_code == 429 and "At most 1 uploads" in again.json()["detail"]
    settings.EEGAB_SUBMISSION_RATE = "10/day"
    Suite.objects.filter(pk=suite.pk).update(references=Suite.References.HELD_OUT)
    held_out = api(submitter).post(reverse("submissions_api:list"), form_data(suite, zip_directory(root)))
    assert held_out.status_code == 400 and "suite" in held_out.json()["errors"]
    assert Submission.objects.count() == 1


def test_on_the_pages_a_submitter_uploads_staff_approve_and_the_board_marks_the_run(
    exported, submitter, staff_user, django_capture_on_commit_callbacks, django_user_model
):
    suite, _, root = exported
    client = Client()
    client.force_login(submitter.user)
    assert client.get(reverse("submissions:new")).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("submissions:new"), form_data(suite, zip_directory(root)))
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("submissions:detail", args=[submission.pk])
    page = client.get(response["Location"]).content.decode()
    assert "checked, waiting for review" in page and 'id="submission-verified">verified' in page
    assert 'id="submission-tasks"' in page and "review-form" not in page
    stranger = django_user_model.objects.create_user(username="mallory", password="pw")
    client_of = Client()
    client_of.force_login(stranger)
    assert client_of.get(response["Location"]).status_code == 403
    assert Client().get(reverse("submissions:list")).status_code == 302  # sign in first

    staff = Client()
    staff.force_login(staff_user)
    assert "review-form" in staff.get(response["Location"]).content.decode()
    assert client.post(reverse("submissions:review", args=[submission.pk]), {"decision": "approve"}).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):  # the publication is queued when the approval commits
        staff.post(reverse("submissions:review", args=[submission.pk]), {"decision": "approve", "reason": "Checked."})
    submission.refresh_from_db()
    assert submission.status == Submission.Status.APPROVED and submission.run.source == Run.Source.SUBMISSION
    listed = client.get(reverse("submissions:list")).content.decode()
    assert "approved and published" in listed and f"run {submission.run_id}" in listed
    board = Client().get(reverse("leaderboard:index")).content.decode()
    assert "submitted · verified" in board
    run_page = Client().get(reverse("leaderboard:run", args=[submission.run_id])).content.decode()
    assert 'id="submission-card"' in run_page and CARD["organisation"] in run_page
    api_rows = Client().get(reverse("api:leaderboard"), {"suite": suite.name}).json()["rows"]
    assert [row["submitted"] for row in api_rows if row["run_id"] == submission.run_id] == [True]


def test_review_by_command(exported, submitter, django_capture_on_commit_callbacks):
    suite, _, root = exported
    with django_capture_on_commit_callbacks(execute=True):
        first = services.submit(submitter=submitter, suite=suite, card=CARD, upload=upload(zip_directory(root)))
    out = io.StringIO()
    call_command("review_submission", str(first.pk), "--reject", "--reason", "Edited by hand.", stdout=out)
    assert f"Rejected submission {first.pk}: Edited by hand." in out.getvalue()
    with pytest.raises(CommandError, match="cannot be rejected"):
        call_command("review_submission", str(first.pk), "--reject", "--reason", "again", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No submission 999"):
        call_command("review_submission", "999", "--approve", stdout=io.StringIO())
    with django_capture_on_commit_callbacks(execute=True):
        second = services.submit(submitter=submitter, suite=suite, card=CARD, upload=upload(zip_directory(root)))
    call_command("review_submission", str(second.pk), "--approve", stdout=out)
    assert f"Approved submission {second.pk}: run " in out.getvalue() and "verified" in out.getvalue()


def test_staff_invite_a_submitter_in_the_admin_and_read_the_token_once(staff_user, django_user_model):
    user = django_user_model.objects.create_user(username="lin@example.org", password="pw")
    staff = Client()
    staff.force_login(staff_user)
    response = staff.post(reverse("admin:submissions_submitter_add"), {"user": user.pk, "name": "Lin"}, follow=True)
    shown = [str(message) for message in response.context["messages"]]
    key = next(message for message in shown if "API token" in message).split(": ")[-1]
    assert services.submitter_for_key(key).user == user
