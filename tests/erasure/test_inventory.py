"""The personal-data inventory keeps up with the schema (and with Redis)."""

import pytest
from django.apps import apps
from django.contrib import admin

from erasure.inventory import (
    REDIS_FAMILIES,
    SUBJECT_STORES,
    Subject,
    classification,
    redis_family,
    unclassified_models,
)
from records import touches

from .conftest import populate
from .helpers import erase


def test_every_model_is_classified_as_subject_data_or_not():
    assert unclassified_models() == [], (
        "Classify these models in erasure/inventory.py (subject data, with how to find a "
        "subject's rows, or no subject data, with why) so erasure covers them"
    )
    # The same check, spelled out over the registry.
    known = classification()
    for model in apps.get_models():
        assert model._meta.label in known, model._meta.label


def test_every_classification_names_a_model_that_exists():
    for label in classification():
        apps.get_model(label)


def test_every_model_with_a_user_column_is_a_subject_store():
    stores = {s.label for s in SUBJECT_STORES}
    with_user = {
        m._meta.label
        for m in apps.get_models()
        if any(f.name == "user_id" and not f.is_relation for f in m._meta.get_fields())
    }
    # The request needs the id until verified, then clears it (tests/erasure/test_job.py).
    assert with_user - stores == {"erasure.ErasureRequest"}


def test_each_store_filters_by_user_and_by_app_when_given():
    for store in SUBJECT_STORES:
        one_app = str(store.rows(Subject("pharmacy", "u1")).query)
        every_app = str(store.rows(Subject(None, "u1")).query)
        assert "user_id" in one_app and "app_name" in one_app, store.label
        assert "user_id" in every_app and "app_name" not in every_app.split("WHERE")[1], store.label


def test_subject_data_models_are_read_only_in_the_admin():
    """admin.LogEntry holds no subject data because of this: the admin logs only additions,
    changes and deletions, and it offers none of them for subject-data models."""
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = type(
        "Super",
        (),
        {"is_active": True, "is_staff": True, "is_superuser": True, "has_perm": lambda *a: True},
    )()
    subject_labels = {s.label for s in SUBJECT_STORES}
    for model, model_admin in admin.site._registry.items():
        if model._meta.label in subject_labels:
            assert not model_admin.has_add_permission(request), model._meta.label
            assert not model_admin.has_change_permission(request), model._meta.label
            assert not model_admin.has_delete_permission(request), model._meta.label


@pytest.mark.redis
@pytest.mark.django_db
def test_every_redis_key_belongs_to_a_classified_family():
    populate("pharmacy", "cust-redis-1", "mk9red")
    populate("pharmacy", "cust-redis-2", "mk8red")
    erase("pharmacy", "cust-redis-1")
    touches.flush_touches()
    populate("travel", "cust-redis-2", "mk7red")
    keys = [k.decode("utf-8", "replace") for k in touches.redis_client().scan_iter(count=1000)]
    assert any(k.startswith("memadmin:touch:") for k in keys)
    assert [k for k in keys if redis_family(k) is None] == [], (
        "Classify these Redis keys in erasure.inventory.REDIS_FAMILIES"
    )
    assert {f.name for f in REDIS_FAMILIES if f.subject_data} == {
        "touch buffer",
        "touch buffer pending set",
    }


@pytest.mark.django_db
def test_audit_entries_about_a_subject_can_only_be_pseudonymised():
    from django.db import connection, transaction

    from memadmin.models import AppendOnlyError, AuditEntry

    entry = AuditEntry.objects.create(
        actor_username="s", action="pin", app_name="a", user_id="alice", target="1"
    )
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(id=entry.id).pseudonymise_subject("bob")
    assert AuditEntry.objects.filter(id=entry.id).pseudonymise_subject("erased:abc") == 1
    entry.refresh_from_db()
    assert (entry.user_id, entry.action, entry.target) == ("erased:abc", "pin", "1")
    if connection.vendor == "postgresql":  # the trigger allows nothing else, even in raw SQL
        with (
            pytest.raises(Exception, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute("UPDATE memadmin_auditentry SET action = 'x' WHERE id = %s", [entry.id])


@pytest.mark.django_db
def test_deleting_a_planned_work_item_keeps_its_run_finishable():
    from sweeper import runs
    from sweeper.models import ItemKind, ItemStatus, Run, RunKind, RunStatus, WorkItem

    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    runs.fan_out(
        run,
        token,
        [WorkItem(run=run, kind=ItemKind.USERS, app_name="a", users=[u]) for u in ("alice", "bob")],
    )
    alice, bob = WorkItem.objects.filter(run=run).order_by("id")
    item, item_token = runs.claim_item(bob.id)
    runs.complete_item(item, item_token, ItemStatus.DONE)
    alice.delete()  # what erasing alice does to a planned batch naming her
    run.refresh_from_db()
    assert (run.total, run.done, run.status) == (1, 1, RunStatus.DONE)
    assert Run.objects.get(id=run.id).status == RunStatus.DONE


@pytest.mark.django_db
@pytest.mark.parametrize("user", ["josé-0042", "東京-7", 'quote"back\\slash', "plain-1"])
def test_a_batch_naming_the_subject_is_found_whatever_the_id_s_script(user):
    from django.utils import timezone

    from sweeper.models import ItemKind, Run, RunKind, WorkItem

    run = Run.objects.create(kind=RunKind.ENFORCE, as_of=timezone.now(), total=2)
    batch = WorkItem.objects.create(
        run=run, kind=ItemKind.USERS, app_name="a", users=["cust-1", user]
    )
    other = WorkItem.objects.create(run=run, kind=ItemKind.USERS, app_name="a", users=["cust-1"])
    store = next(s for s in SUBJECT_STORES if s.label == "sweeper.WorkItem")
    found = set(WorkItem.objects.filter(store.q(Subject("a", user))).values_list("id", flat=True))
    assert found == {batch.id} and other.id not in found
    assert not WorkItem.objects.filter(store.q(Subject("b", user))).exists()
