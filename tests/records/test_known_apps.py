"""Which apps exist: one definition (records.selectors.apps), used by every edge."""

import io
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from memadmin.models import AuditEntry
from records import artifacts, sessions
from records.models import AppState, DailyCounter, EvictionEvent, Policy, PolicyVersion
from records.policies import policy_for
from records.selectors.apps import UnknownApp, check_known_app, is_known_app, known_apps
from records.selectors.rules import rule_apps
from tests.records.rows import make_record

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_an_app_is_known_by_its_policy_or_any_of_its_data():
    assert known_apps() == []
    policy_for("by-policy")
    make_record("by-record", "alice")
    sessions.create_session(app_name="by-session", user_id="u", session_id="s")
    artifacts.save_artifact(
        app_name="by-artifact", user_id="u", filename="user:a.txt", artifact={"text": "x"}
    )
    AppState.objects.create(app_name="by-app-state", state={"motd": "hi"})
    assert known_apps() == [
        "by-app-state",
        "by-artifact",
        "by-policy",
        "by-record",
        "by-session",
    ]
    assert all(is_known_app(app) for app in known_apps())
    # Only the records had no policy created: knowing an app creates nothing.
    assert list(Policy.objects.values_list("app_name", flat=True)) == ["by-policy"]


def test_history_alone_does_not_make_an_app_known():
    EvictionEvent.objects.create(
        record_id=1,
        app_name="gone",
        user_id="u",
        reason="manual",
        recency=0,
        frequency=0,
        importance=0,
        score=0,
        tokens=1,
        evicted_at=NOW,
    )
    DailyCounter.objects.create(app_name="gone", day=NOW.date(), name="records_added", value=1)
    assert known_apps() == [] and not is_known_app("gone")


@pytest.mark.parametrize("name", ["nope", "", None, "Pharmacy", "pharmacy "])
def test_an_unknown_name_is_refused_with_the_known_apps(name):
    policy_for("pharmacy")
    policy_for("travel")
    assert not is_known_app(name)
    with pytest.raises(UnknownApp) as refused:
        check_known_app(name)
    assert f"No app named {name!r}" in str(refused.value)
    assert "known apps: pharmacy, travel" in str(refused.value)
    check_known_app("pharmacy")


def test_the_message_names_at_most_twenty_apps():
    for i in range(25):
        policy_for(f"app-{i:02}")
    message = str(UnknownApp("nope"))
    assert "app-19" in message and "app-20" not in message and "and 5 more" in message
    assert "knows no app yet" in str(UnknownApp("nope", known=[]))


def test_the_rules_page_offers_every_known_app():
    sessions.create_session(app_name="sessions-only", user_id="u", session_id="s")
    assert rule_apps([]) == ["sessions-only"]


def test_agents_still_create_their_app_by_writing():
    from records import store

    store.ingest("brand-new", "u", [], NOW)
    assert is_known_app("brand-new")
    version = PolicyVersion.objects.get(app_name="brand-new")
    assert (version.version, version.created_by) == (1, None)


def test_manage_py_policy_lists_and_creates():
    make_record("travel", "alice")
    out = io.StringIO()
    call_command("policy", "create", "--app", "pharmacy", "--reason", "launch", stdout=out)
    assert "Created the policy of 'pharmacy' (version 1" in out.getvalue()
    entry = AuditEntry.objects.get()
    assert entry.action == "policy.create" and entry.actor_username.endswith("via manage.py policy")
    out = io.StringIO()
    call_command("policy", "list", stdout=out)
    assert out.getvalue().splitlines() == [
        "pharmacy\tpolicy v1",
        "travel\tno policy yet (the defaults apply)",
    ]
    with pytest.raises(CommandError, match="has a policy already"):
        call_command("policy", "create", "--app", "pharmacy")
    with pytest.raises(CommandError, match="An app name is"):
        call_command("policy", "create", "--app", "a/b")
