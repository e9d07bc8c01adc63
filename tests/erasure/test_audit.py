"""The audit log is append-only, complete, and never names the subject."""

import pytest
from django.db import DatabaseError, connection, transaction

from erasure.inventory import SUBJECT_STORES
from erasure.models import AppendOnlyError, ErasureAuditEntry, ErasureRequest

from .conftest import populate
from .helpers import USER, erase, submit

pytestmark = pytest.mark.django_db


def test_every_state_change_is_logged_in_order():
    populate("pharmacy", USER, "mk1x9q")
    req = erase("pharmacy")
    entries = list(req.audit.all())
    assert [e.action for e in entries] == [
        "submitted",
        "running",
        "barrier_raised",
        *["store_done"] * (len(SUBJECT_STORES) + 1),  # every store, then Redis
        "completed",
        "verified",
    ]
    assert [(e.from_status, e.to_status) for e in entries if e.to_status] == [
        ("", "submitted"),
        ("submitted", "running"),
        ("running", "completed"),
        ("completed", "verified"),
    ]
    assert entries[-1].detail == {"receipt_sha256": req.receipt_sha256}
    assert all(USER not in str(e.detail) for e in entries)


def test_the_orm_refuses_to_update_or_delete_audit_entries():
    req = submit("pharmacy")
    entry = req.audit.get()
    entry.action = "forged"
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        ErasureAuditEntry.objects.filter(pk=entry.pk).update(action="forged")
    with pytest.raises(AppendOnlyError):
        ErasureAuditEntry.objects.filter(pk=entry.pk).delete()
    with pytest.raises(AppendOnlyError), transaction.atomic():  # bulk_update has no savepoint
        ErasureAuditEntry.objects.bulk_update([entry], ["action"])
    with pytest.raises(AppendOnlyError):
        req.delete()
    with pytest.raises(AppendOnlyError):
        ErasureRequest.objects.all().delete()
    assert req.audit.get().action == "submitted"


def test_the_database_refuses_to_update_audit_entries():
    req = submit("pharmacy")
    table = ErasureAuditEntry._meta.db_table
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"UPDATE {table} SET action = 'forged'")  # noqa: S608
    assert req.audit.get().action == "submitted"


@pytest.mark.postgres
def test_postgres_refuses_to_delete_audit_entries():
    req = submit("pharmacy")
    table = ErasureAuditEntry._meta.db_table
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608
    assert req.audit.count() == 1


def test_the_admin_shows_requests_and_audit_read_only(login):
    req = submit("pharmacy")
    client = login(superuser=True, username="root")
    for url in (
        f"/admin/erasure/erasurerequest/{req.pk}/change/",
        "/admin/erasure/erasureauditentry/",
    ):
        page = client.get(url)
        assert page.status_code == 200
        assert USER not in page.content.decode()
    assert (
        client.post(f"/admin/erasure/erasurerequest/{req.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert ErasureRequest.objects.filter(pk=req.pk).exists()
