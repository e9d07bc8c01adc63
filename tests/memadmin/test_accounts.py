import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

from memadmin.roles import has_role

pytestmark = pytest.mark.django_db


def test_start_setup_only_creates_role_accounts_with_printed_passwords(capsys):
    call_command("start", "--setup-only", "--no-demo")
    out = capsys.readouterr().out
    passwords = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in {"support", "ops", "compliance"}:
            passwords[parts[0]] = parts[1]
    assert set(passwords) == {"support", "ops", "compliance"}
    for username, password in passwords.items():
        request = RequestFactory().post("/login/")
        user = authenticate(request, username=username, password=password)
        assert user is not None and has_role(user, username)
        assert not has_role(user, *({"support", "ops", "compliance"} - {username}))
    # Passwords are generated, never a fixed default
    assert len(set(passwords.values())) == 3

    call_command("start", "--setup-only", "--no-demo")
    again = capsys.readouterr().out
    assert not any(p in again for p in passwords.values())  # shown only once
    assert "exists" in again
