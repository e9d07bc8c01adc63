"""API keys: hashed storage, one app each, revocation, the ops page and the command."""

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from api import keys
from api.models import ApiKey

from .conftest import APP, OTHER_APP

pytestmark = pytest.mark.django_db


def test_only_a_hash_of_the_token_is_stored():
    new = keys.create_key(APP, "web agent", timezone.now())
    token = new.token
    assert token.startswith(f"mma_{new.key.prefix}_")
    row = ApiKey.objects.get()
    assert row.key_hash == hashlib.sha256(token.encode()).hexdigest()
    stored = " ".join(str(v) for v in ApiKey.objects.values().get().values())
    assert token not in stored and token.split("_", 2)[2] not in stored
    # 32 random bytes behind the prefix, and no two keys alike
    assert len(token.split("_", 2)[2]) >= 43
    assert keys.create_key(APP, "web agent", timezone.now()).token != token


def test_authenticate_finds_the_key_and_refuses_others():
    now = timezone.now()
    token = keys.create_key(APP, "agent", now).token
    assert keys.authenticate(token, now).app_name == APP
    for bad in ("", "mma_", token + "x", token[:-1], "Bearer " + token, "x" * 500):
        with pytest.raises(keys.InvalidApiKey):
            keys.authenticate(bad, now)


def test_a_revoked_key_is_refused_and_says_so():
    now = timezone.now()
    new = keys.create_key(APP, "agent", now)
    keys.revoke_key(new.key.prefix, now, revoked_by=None)
    with pytest.raises(keys.RevokedApiKey, match=f"{new.key.prefix}.*revoked"):
        keys.authenticate(new.token, now)
    # revoking again changes nothing
    first = ApiKey.objects.get().revoked_at
    keys.revoke_key(new.key.prefix, now + timedelta(days=1))
    assert ApiKey.objects.get().revoked_at == first


def test_last_used_is_written_at_most_once_a_minute(django_assert_num_queries):
    t0 = timezone.now()
    token = keys.create_key(APP, "agent", t0).token
    with django_assert_num_queries(2):  # lookup + the first write
        keys.authenticate(token, t0)
    with django_assert_num_queries(1):  # lookup only
        keys.authenticate(token, t0 + timedelta(seconds=59))
    assert ApiKey.objects.get().last_used_at == t0
    keys.authenticate(token, t0 + timedelta(seconds=61))
    assert ApiKey.objects.get().last_used_at == t0 + timedelta(seconds=61)


@pytest.mark.parametrize(
    ("app", "name", "message"),
    [
        ("", "agent", "app_name must not be empty"),
        ("a/b", "agent", "must not contain '/'"),
        ("x" * 129, "agent", "at most 128"),
        (APP, "  ", "name must say what the key is for"),
        (APP, "n" * 101, "at most 100"),
    ],
)
def test_refused_key_input_says_what_is_allowed(app, name, message):
    with pytest.raises(ValueError, match=message):
        keys.create_key(app, name, timezone.now())
    assert not ApiKey.objects.exists()


# --- the command ---------------------------------------------------------------------------


def run_command(*args):
    out = StringIO()
    call_command("apikey", *args, stdout=out)
    return out.getvalue()


def test_command_creates_lists_and_revokes():
    out = run_command("create", "--app", APP, "--name", "cli agent")
    token = out.strip().splitlines()[-1]
    key = keys.authenticate(token, timezone.now())
    assert (key.app_name, key.name) == (APP, "cli agent")

    listing = run_command("list")
    assert key.prefix in listing and APP in listing and "active" in listing
    assert token not in listing
    assert run_command("list", "--app", OTHER_APP).strip() == "No API keys."

    assert key.prefix in run_command("revoke", key.prefix)
    with pytest.raises(keys.RevokedApiKey):
        keys.authenticate(token, timezone.now())
    assert "revoked" in run_command("list")


def test_command_errors_are_messages():
    with pytest.raises(CommandError, match="must not contain '/'"):
        run_command("create", "--app", "a/b", "--name", "x")
    with pytest.raises(CommandError, match="No API key has the prefix"):
        run_command("revoke", "ffffffffffff")


# --- the ops page ----------------------------------------------------------------------------


def test_page_needs_the_ops_role(client, login):
    url = reverse("api:keys")
    assert client.get(url).status_code == 302  # to the login page
    support = login("support")
    assert support.get(url).status_code == 403
    assert support.post(url, {"app_name": APP, "name": "x"}).status_code == 403
    assert not ApiKey.objects.exists()


def test_ops_creates_a_key_and_sees_the_token_once(login):
    ops = login("ops")
    url = reverse("api:keys")
    response = ops.post(url, {"app_name": APP, "name": "web agent"})
    assert response.status_code == 201
    token = response.context["new_key"].token
    assert token.encode() in response.content
    assert response["Cache-Control"].startswith("max-age=0")
    key = keys.authenticate(token, timezone.now())
    assert key.created_by.username == "ops"
    # the list shows the prefix, never the token again
    again = ops.get(url)
    assert key.prefix.encode() in again.content and token.encode() not in again.content


def test_page_refuses_bad_input_with_a_message(login):
    response = login("ops").post(reverse("api:keys"), {"app_name": "a/b", "name": "agent"})
    assert response.status_code == 400
    assert b"must not contain" in response.content
    assert not ApiKey.objects.exists()


def test_ops_revokes_a_key(login):
    new = keys.create_key(APP, "agent", timezone.now())
    ops = login("ops")
    assert ops.get(reverse("api:revoke", args=[new.key.id])).status_code == 405
    response = ops.post(reverse("api:revoke", args=[new.key.id]), follow=True)
    assert f"Revoked {new.key.prefix}".encode() in response.content
    key = ApiKey.objects.get()
    assert key.revoked_at is not None and key.revoked_by.username == "ops"


def test_support_cannot_revoke(login):
    new = keys.create_key(APP, "agent", timezone.now())
    assert login("support").post(reverse("api:revoke", args=[new.key.id])).status_code == 403
    assert ApiKey.objects.get().revoked_at is None
