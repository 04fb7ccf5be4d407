"""Guessing a password: the login form, the admin and the API's basic auth lock out after ten failures.

A lockout holds a username at one address: ten wrong passwords for staff's name from anywhere else
leave staff free to log in from their own address.
"""
import base64
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def log_in(client, password, *, username="staff", address="203.0.113.7", **headers):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **headers)


def signed_in(client):
    return "_auth_user_id" in client.session


def fail(client, times, **kwargs):
    for attempt in range(times):
        response = log_in(client, f"guess-{attempt}", **kwargs)
        assert response.status_code == 200, "a wrong password before the limit shows the form again"
        assert not signed_in(client)


def test_nine_wrong_passwords_then_the_right_one_logs_in(client, staff_user):
    fail(client, 9)
    response = log_in(client, "staff-password")
    assert response.status_code == 302 and signed_in(client)
    # A success clears the count: nine more failures still leave the door open.
    client.logout()
    fail(client, 9)
    assert log_in(client, "staff-password").status_code == 302


def test_the_tenth_wrong_password_locks_the_login(client, staff_user):
    fail(client, 9)
    tenth = log_in(client, "guess-9")
    assert tenth.status_code == 429
    assert b"Log in refused" in tenth.content
    right = log_in(client, "staff-password")
    assert right.status_code == 429 and not signed_in(client)
    assert b"Log in refused" in right.content and b"staff-password" not in right.content


def test_nobody_locks_staff_out_from_another_address(client, staff_user):
    for attempt in range(10):
        log_in(client, f"guess-{attempt}", address="198.51.100.1")
    assert log_in(client, "staff-password", address="198.51.100.1").status_code == 429
    assert log_in(client, "staff-password", address="192.0.2.200").status_code == 302 and signed_in(client)


def test_failures_spread_over_addresses_lock_none_of_them(client, staff_user):
    for attempt in range(10):
        log_in(client, f"guess-{attempt}", address=f"198.51.100.{attempt + 1}")
    assert log_in(client, "staff-password", address="198.51.100.1").status_code == 302


def test_failures_for_other_usernames_do_not_lock_a_user_at_the_same_address(client, staff_user, visitor):
    for attempt in range(10):
        log_in(client, "wrong", username=f"nobody{attempt}")
    assert log_in(client, "wrong", username="nobody0").status_code == 200  # one failure for that name so far
    assert log_in(client, "visitor-password", username="visitor").status_code == 302


def test_a_forged_forwarded_for_header_does_not_reset_the_count(client, staff_user):
    for attempt in range(10):
        log_in(client, f"guess-{attempt}", HTTP_X_FORWARDED_FOR=f"10.0.0.{attempt}")
    assert log_in(client, "staff-password", HTTP_X_FORWARDED_FOR="10.9.9.9").status_code == 429


def test_behind_a_proxy_the_address_it_recorded_is_counted(client, staff_user, settings):
    settings.EEGAB_LOGIN_PROXY_COUNT = 1
    for attempt in range(10):
        # The client's own claim comes first; the proxy appends the address it saw.
        log_in(client, f"guess-{attempt}", address="10.0.0.1", HTTP_X_FORWARDED_FOR=f"192.0.2.{attempt}, 203.0.113.50")
    assert log_in(client, "staff-password", address="10.0.0.1",
                  HTTP_X_FORWARDED_FOR="203.0.113.50").status_code == 429
    # Staff behind the same proxy, at another address, are not locked out.
    assert log_in(client, "staff-password", address="10.0.0.1",
                  HTTP_X_FORWARDED_FOR="203.0.113.51").status_code == 302


def test_the_lock_lifts_after_the_cool_off(client, staff_user):
    fail(client, 9)
    log_in(client, "guess-9")
    assert log_in(client, "staff-password").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=61))
    assert log_in(client, "staff-password").status_code == 302 and signed_in(client)


def test_an_administrator_lifts_every_lock(client, staff_user):
    for attempt in range(10):
        log_in(client, f"guess-{attempt}")
    call_command("axes_reset", verbosity=0)
    assert log_in(client, "staff-password").status_code == 302


def test_the_admin_login_shares_the_count(client, staff_user):
    admin_login = reverse("admin:login")
    for attempt in range(10):
        client.post(admin_login, {"username": "staff", "password": f"guess-{attempt}"}, REMOTE_ADDR="203.0.113.7")
    assert log_in(client, "staff-password").status_code == 429
    response = client.post(admin_login, {"username": "staff", "password": "staff-password"}, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 429 and not signed_in(client)


def test_basic_auth_on_the_api_is_locked_out_too(client, staff_user):
    def basic(password):
        token = base64.b64encode(f"staff:{password}".encode()).decode()
        return client.get("/api/runs/", HTTP_AUTHORIZATION=f"Basic {token}", REMOTE_ADDR="203.0.113.9")

    assert basic("staff-password").status_code == 200
    for attempt in range(10):
        assert basic(f"guess-{attempt}").status_code == 403
    # The right password is refused like a wrong one: the lock tells a guesser nothing.
    locked = basic("staff-password")
    assert locked.status_code == 403 and locked.json() == {"detail": "Invalid username/password."}
    # The form refuses the same username at that address too, and lets it in from another.
    assert log_in(client, "staff-password", address="203.0.113.9").status_code == 429
    assert log_in(client, "staff-password", address="192.0.2.1").status_code == 302
