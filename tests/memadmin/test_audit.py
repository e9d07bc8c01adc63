"""The audit log is append-only in the model, the queryset, the admin and (PostgreSQL) SQL."""

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from memadmin import audit
from memadmin.models import AppendOnlyError, AuditEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(make_user):
    actor = make_user("sam", "support")
    return audit.record(
        actor,
        audit.RECORD_PIN,
        app_name="pharmacy",
        user_id="alice",
        target=17,
        before={"pinned": False},
        after={"pinned": True},
        reason="allergy",
    )


def test_record_copies_who_what_when_before_and_after(entry):
    stored = AuditEntry.objects.get()
    assert (stored.actor.username, stored.actor_username) == ("sam", "sam")
    assert (stored.action, stored.app_name, stored.user_id, stored.target) == (
        "record.pin",
        "pharmacy",
        "alice",
        "17",
    )
    assert (stored.before, stored.after, stored.reason) == (
        {"pinned": False},
        {"pinned": True},
        "allergy",
    )
    assert stored.created_at is not None


def test_saving_an_existing_entry_again_is_refused(entry):
    entry.reason = "rewritten"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert AuditEntry.objects.get().reason == "allergy"


def test_deleting_an_entry_or_a_queryset_is_refused(entry):
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(reason="x")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.bulk_update([entry], ["reason"])
    assert AuditEntry.objects.count() == 1


@pytest.mark.parametrize(
    "payload",
    [
        {"content": "The customer is allergic to penicillin"},
        {"record": {"text": "secret"}},
        {"note": "x" * 300},
        {"when": object()},
    ],
)
def test_payloads_that_look_like_content_are_refused(make_user, payload):
    with pytest.raises(ValueError, match="Audit after"):
        audit.record(make_user("sam"), audit.RECORD_PIN, after=payload)
    assert not AuditEntry.objects.exists()


def test_deleting_the_staff_account_keeps_its_entries_and_name(entry):
    get_user_model().objects.filter(username="sam").delete()
    stored = AuditEntry.objects.get()
    assert stored.actor is None and stored.actor_username == "sam"


@pytest.mark.postgres
def test_postgres_trigger_refuses_raw_update_and_delete(entry):
    assert connection.vendor == "postgresql"
    for sql in (
        "UPDATE memadmin_auditentry SET reason = 'rewritten'",
        "UPDATE memadmin_auditentry SET actor_id = NULL, reason = 'sneaky'",
        "DELETE FROM memadmin_auditentry",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    stored = AuditEntry.objects.get()
    assert stored.reason == "allergy" and stored.actor is not None


def test_admin_shows_entries_to_superusers_but_allows_no_change(entry, login):
    client = login(superuser=True, username="root")
    assert client.get(reverse("admin:memadmin_auditentry_changelist")).status_code == 200
    change_url = reverse("admin:memadmin_auditentry_change", args=[entry.pk])
    page = client.get(change_url)
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert client.post(change_url, {"reason": "rewritten"}).status_code == 403
    delete_url = reverse("admin:memadmin_auditentry_delete", args=[entry.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    assert client.get(reverse("admin:memadmin_auditentry_add")).status_code == 403
    assert AuditEntry.objects.get().reason == "allergy"


def test_admin_is_for_superusers_only(login):
    response = login("ops").get(reverse("admin:memadmin_auditentry_changelist"))
    assert response.status_code == 302  # to the admin login, not the list
