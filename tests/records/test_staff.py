"""Staff changes: locked, transactional, audited, scoped to the named app and user."""

import pytest
from django.core.exceptions import ValidationError

from memadmin.models import AuditEntry
from records.models import MemoryRecord, Policy, PolicyVersion
from records.policies import policy_for
from records.selectors.apps import UnknownApp
from records.staff import (
    StalePolicyError,
    change_policy,
    create_policy,
    pin_record,
    set_importance,
    unpin_record,
)
from tests.records.rows import make_record

pytestmark = pytest.mark.django_db
SECRET = "The customer is allergic to penicillin"


@pytest.fixture
def staff(make_user):
    return make_user("sam", "support")


def test_pin_and_unpin_write_the_flag_and_one_audit_entry_each(staff):
    record = make_record("pharmacy", "alice", content=SECRET)
    pin_record(staff, "pharmacy", "alice", record.pk, reason="allergy")
    pin_record(staff, "pharmacy", "alice", record.pk)  # already pinned: nothing to log
    record.refresh_from_db()
    assert record.pinned
    unpin_record(staff, "pharmacy", "alice", record.pk)
    record.refresh_from_db()
    assert not record.pinned
    entries = list(AuditEntry.objects.order_by("id").values("action", "target", "before", "after"))
    assert entries == [
        {
            "action": "record.pin",
            "target": str(record.pk),
            "before": {"pinned": False},
            "after": {"pinned": True},
        },
        {
            "action": "record.unpin",
            "target": str(record.pk),
            "before": {"pinned": True},
            "after": {"pinned": False},
        },
    ]
    assert not AuditEntry.objects.filter(before__icontains="penicillin").exists()


@pytest.mark.parametrize(("app", "user"), [("pharmacy", "bob"), ("travel", "alice")])
def test_a_record_of_another_app_or_user_is_not_found(staff, app, user):
    record = make_record("pharmacy", "alice")
    with pytest.raises(MemoryRecord.DoesNotExist):
        pin_record(staff, app, user, record.pk)
    with pytest.raises(MemoryRecord.DoesNotExist):
        set_importance(staff, app, user, record.pk, 0.9, reason="x")
    record.refresh_from_db()
    assert not record.pinned and record.importance == 0.5
    assert not AuditEntry.objects.exists()


def test_set_importance_marks_staff_as_the_source_and_audits_old_and_new(staff):
    record = make_record(importance=0.2, importance_source="rule")
    set_importance(staff, "app", "alice", record.pk, 0.9, reason="customer asked")
    record.refresh_from_db()
    assert (record.importance, record.importance_source) == (0.9, "staff")
    entry = AuditEntry.objects.get()
    assert entry.before == {"importance": 0.2, "importance_source": "rule"}
    assert entry.after == {"importance": 0.9, "importance_source": "staff"}
    assert (entry.reason, entry.actor_username) == ("customer asked", "sam")


@pytest.mark.parametrize(
    ("importance", "reason", "field", "message"),
    [
        (1.5, "x", "importance", "from 0 (forgettable) to 1 (essential). 1.5 is outside"),
        (-0.1, "x", "importance", "-0.1 is outside"),
        (float("nan"), "x", "importance", "from 0"),
        (0.5, "  ", "reason", "Say why"),
    ],
)
def test_set_importance_refuses_bad_values_and_changes_nothing(
    staff, importance, reason, field, message
):
    record = make_record(importance=0.2)
    with pytest.raises(ValidationError) as error:
        set_importance(staff, "app", "alice", record.pk, importance, reason=reason)
    assert message in " ".join(error.value.message_dict[field])
    record.refresh_from_db()
    assert record.importance == 0.2
    assert not AuditEntry.objects.exists()


def test_change_policy_saves_a_version_and_audits_only_changed_values(staff):
    policy_for("app")
    policy = change_policy(
        staff, "app", {"max_records": 300, "ttl_days": 365}, base_version=1, note="smaller"
    )
    assert (policy.version, policy.max_records) == (2, 300)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.app_name, entry.reason) == ("policy.update", "app", "smaller")
    assert entry.before == {"version": 1, "max_records": 500}
    assert entry.after == {"version": 2, "max_records": 300}
    assert PolicyVersion.objects.get(app_name="app", version=2).created_by == staff


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"max_records": "abc"}, "max_records", "must be an integer"),
        ({"w_recency": "lots", "w_frequency": 0.2}, "w_recency", "must be a float"),
        ({"half_life_hours": [720]}, "half_life_hours", "must be a float"),
        ({"ttl_days": 10**12}, "ttl_days", "TTL must be at most 36500 days (a century)."),
        ({"half_life_hours": 1e300}, "half_life_hours", "at most 876000 hours"),
        ({"session_idle_days": 2**31 - 1}, "session_idle_days", "at most 36500 days"),
    ],
)
def test_change_policy_refuses_a_value_of_the_wrong_type_or_size_at_its_field(
    staff, changes, field, message
):
    policy_for("app")
    with pytest.raises(ValidationError) as refused:
        change_policy(staff, "app", changes, note="typo")
    assert message in " ".join(refused.value.message_dict[field])
    assert Policy.objects.get(app_name="app").version == 1
    assert not AuditEntry.objects.exists()


def test_change_policy_refuses_an_app_memadmin_has_never_seen(staff):
    policy_for("pharmacy")
    with pytest.raises(UnknownApp, match=r"No app named 'pharmcy'.*known apps: pharmacy"):
        change_policy(staff, "pharmcy", {"max_records": 300}, note="typo")
    assert not Policy.objects.filter(app_name="pharmcy").exists()
    assert not PolicyVersion.objects.filter(app_name="pharmcy").exists()
    assert not AuditEntry.objects.exists()


def test_change_policy_of_an_app_with_data_but_no_policy_yet_creates_it(staff):
    make_record("travel", "alice")
    policy = change_policy(staff, "travel", {"max_records": 300}, note="smaller")
    assert (policy.version, policy.max_records) == (2, 300)
    assert list(PolicyVersion.objects.filter(app_name="travel").values_list("version", flat=True))


def test_create_policy_makes_the_first_version_with_the_defaults_and_audits_it(staff):
    policy = create_policy(staff, "travel-concierge", reason="goes live on Monday")
    assert (policy.version, policy.updated_by) == (1, staff)
    assert policy.snapshot() == Policy(app_name="x").snapshot()  # the defaults
    version = PolicyVersion.objects.get(app_name="travel-concierge")
    assert (version.version, version.created_by, version.note) == (1, staff, "goes live on Monday")
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.app_name, entry.target, entry.reason) == (
        "policy.create",
        "travel-concierge",
        "v1",
        "goes live on Monday",
    )
    assert entry.after == {"version": 1, **policy.snapshot()}
    # now it is known: its policy can change, and it cannot be created twice
    assert change_policy(staff, "travel-concierge", {"max_records": 300}).version == 2
    with pytest.raises(ValidationError, match="has a policy already"):
        create_policy(staff, "travel-concierge")
    assert AuditEntry.objects.count() == 2


@pytest.mark.parametrize("name", ["", "   ", " padded", "a/b", "tab\there", "x" * 129, None])
def test_create_policy_refuses_names_agents_could_not_use(staff, name):
    with pytest.raises(ValidationError, match="An app name is 1 to 128 characters"):
        create_policy(staff, name)
    assert not Policy.objects.exists() and not AuditEntry.objects.exists()


def test_change_policy_refuses_a_stale_review_and_bad_values(staff):
    policy_for("app")
    change_policy(staff, "app", {"max_records": 300})
    with pytest.raises(StalePolicyError):
        change_policy(staff, "app", {"max_records": 100}, base_version=1)
    with pytest.raises(ValidationError, match="sum to 1"):
        change_policy(staff, "app", {"w_recency": 0.9})
    assert Policy.objects.get(app_name="app").version == 2
    assert AuditEntry.objects.count() == 1
