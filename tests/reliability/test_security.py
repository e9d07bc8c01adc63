"""Login throttling, sessions, headers and deploy checks."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from ..conftest import receipt_signing_key

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-Secret-123"  # the make_user fixture's

pytestmark = pytest.mark.django_db


def test_login_brute_force_is_locked_out_and_only_for_that_username(client, make_user):
    make_user("sam", "support")
    make_user("kim", "ops")
    for _ in range(4):
        response = client.post(reverse("login"), {"username": "sam", "password": "wrong"})
        assert response.status_code == 200  # the form again, with its error
    fifth = client.post(reverse("login"), {"username": "sam", "password": "wrong"})
    assert fifth.status_code == 429  # the fifth failure locks the account out
    locked = client.post(reverse("login"), {"username": "sam", "password": PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session
    other = client.post(reverse("login"), {"username": "kim", "password": PASSWORD})
    assert other.status_code == 302  # another account from the same address still works


def test_logout_invalidates_the_session(client, make_user):
    make_user("sam", "support")
    client.post(reverse("login"), {"username": "sam", "password": PASSWORD})
    old_key = client.session.session_key
    assert client.get(reverse("records:overview")).status_code == 200
    client.post(reverse("logout"))
    from django.contrib.sessions.models import Session

    assert not Session.objects.filter(session_key=old_key).exists()
    client.cookies["sessionid"] = old_key  # replaying the old cookie gets nowhere
    assert client.get(reverse("records:overview")).status_code == 302


def test_sessions_expire_when_idle(client, make_user, settings):
    make_user("sam", "support")
    client.post(reverse("login"), {"username": "sam", "password": PASSWORD})
    assert settings.SESSION_SAVE_EVERY_REQUEST  # the age counts from the last request
    assert client.session.get_expiry_age() == settings.SESSION_COOKIE_AGE <= 8 * 3600


def test_pages_send_csp_frame_denial_and_no_sniff(login):
    response = login("ops").get(reverse("records:overview"))
    csp = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
    assert directives["script-src"] == "'self'"  # no inline or eval'd script
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)  # every script is a file
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers


def test_failed_authorisations_are_logged_without_payloads(login, caplog):
    from records.policies import policy_for

    policy_for("pharmacy")
    client = login("support")
    with caplog.at_level("WARNING", logger="memadmin.authz"):
        response = client.post(
            reverse("records:policy", args=["pharmacy"]),
            {"max_records": "1", "secret": "do-not-log"},
        )
    assert response.status_code == 403
    assert "denied user=support" in caplog.text and "/policies/pharmacy/" in caplog.text
    assert "do-not-log" not in caplog.text


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    env.update(
        DATABASE_URL="postgres://u@db.example/memadmin",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="memadmin.example.com",
        CELERY_BROKER_URL="redis://redis.example:6379/0",
        MEMADMIN_VAR_DIR=str(tmp_path),
        MEMADMIN_RECEIPT_SIGNING_KEY=receipt_signing_key(),
    )
    env.pop("MEMADMIN_RECEIPT_SIGNING_KEY_FILE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
