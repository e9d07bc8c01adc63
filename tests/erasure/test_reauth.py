"""The erasure password check is throttled as a login is (issue 13, finding 8)."""

import time

import pytest
from django.test import Client

from erasure.reauth import SESSION_KEY

pytestmark = pytest.mark.django_db

PASSWORD = "pw-Secret-123"
REAUTH = "/erasure/confirm-password/"


@pytest.fixture
def carol(make_user):
    return make_user("carol", "compliance", password=PASSWORD)


def staff_client(user) -> Client:
    """Logged in an hour ago: submitting an erasure needs a fresh password check."""
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = time.time() - 3600
    session.save()
    return client


def checked_recently(client) -> bool:
    return time.time() - client.session[SESSION_KEY] < 60


def check(client, password):
    return client.post(REAUTH, {"password": password, "next": "/erasure/new/"})


def test_after_the_failure_limit_even_the_right_password_is_refused(carol, settings):
    client = staff_client(carol)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert "not your password" in check(client, "nope").content.decode()
    assert check(client, "nope").status_code == settings.AXES_HTTP_RESPONSE_CODE  # locked

    refused = check(client, PASSWORD)
    assert refused.status_code == settings.AXES_HTTP_RESPONSE_CODE
    assert "locked" in refused.content.decode().lower()
    assert not checked_recently(client)
    # the same lockout a login sees: the right password does not log carol in either
    login = Client().post("/login/", {"username": "carol", "password": PASSWORD})
    assert login.status_code == settings.AXES_HTTP_RESPONSE_CODE
    assert "_auth_user_id" not in login.wsgi_request.session


def test_failed_logins_and_failed_checks_add_up(carol, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        failed = Client().post("/login/", {"username": "carol", "password": "nope"})
        assert failed.status_code == 200
    client = staff_client(carol)
    assert check(client, "nope").status_code == settings.AXES_HTTP_RESPONSE_CODE
    assert check(client, PASSWORD).status_code == settings.AXES_HTTP_RESPONSE_CODE
    assert not checked_recently(client)


def test_the_right_password_before_the_limit_resets_the_count(carol, settings):
    client = staff_client(carol)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        check(client, "nope")
    right = check(client, PASSWORD)
    assert right.status_code == 302 and right["Location"] == "/erasure/new/"
    assert checked_recently(client)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert check(client, "nope").status_code == 200  # counting from zero again


def test_another_staff_members_lockout_does_not_lock_carol(carol, make_user, settings):
    dave = staff_client(make_user("dave", "compliance", password=PASSWORD))
    for _ in range(settings.AXES_FAILURE_LIMIT):
        check(dave, "nope")
    assert check(dave, PASSWORD).status_code == settings.AXES_HTTP_RESPONSE_CODE
    assert check(staff_client(carol), PASSWORD).status_code == 302


def test_a_failed_check_or_login_keeps_no_request_data(carol, settings):
    """django-axes would keep a failed attempt's form and query string, masking only the
    password: the erasure form's subject, ticket and reason, a login's ``next`` (a user's
    page). The attempt keeps what the lockout needs, no request data."""
    from axes.models import AccessAttempt

    subject = "bank-user-001"
    form = {"scope": "app", "app_name": "pharmacy", "user_id": subject,
            "user_id_again": subject, "ticket": "T-9", "reason": "gdpr art 17"}  # fmt: skip
    client = staff_client(carol)
    refused = client.post("/erasure/new/", {**form, "password": "wrong-password"})
    assert refused.status_code == 403
    Client().post(f"/login/?next=/users/pharmacy/{subject}/", {"username": "carol",
                  "password": "nope", "next": f"/users/pharmacy/{subject}/"})  # fmt: skip
    attempt = AccessAttempt.objects.get(username="carol")
    assert attempt.failures_since_start == 2  # both counted, as one lockout
    assert (attempt.get_data, attempt.post_data) == ("", "")
    assert not AccessAttempt.objects.filter(post_data__contains=subject).exists()


def test_attempts_stored_before_keep_no_request_data_after_the_migration():
    """Rows written before the receiver existed are emptied by memadmin's migration 0004."""
    from importlib import import_module

    from axes.models import AccessAttempt
    from django.apps import apps

    AccessAttempt.objects.create(
        username="carol", ip_address="127.0.0.1", user_agent="ua", http_accept="*/*",
        path_info="/erasure/new/", failures_since_start=1,
    )  # fmt: skip
    AccessAttempt.objects.update(post_data="user_id=bank-user-001", get_data="next=/users/x/")
    migration = import_module("memadmin.migrations.0004_login_attempts_without_request_data")
    migration.forget_request_data(apps, None)
    assert list(AccessAttempt.objects.values_list("get_data", "post_data")) == [("", "")]
