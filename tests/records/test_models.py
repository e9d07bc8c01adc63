"""Database constraints and policy versioning."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from records.models import MemoryRecord, Policy, PolicyVersion
from records.policies import policy_for, update_policy
from records.policy import PolicyParams

pytestmark = pytest.mark.django_db


def record(**kw):
    now = timezone.now()
    fields = dict(
        app_name="app",
        user_id="u1",
        content="hello",
        created_at=now,
        last_accessed_at=now - timedelta(days=30),
        tokens=2,
    )
    fields.update(kw)
    return MemoryRecord(**fields)


@pytest.mark.parametrize("importance", [-0.01, 1.01])
def test_importance_outside_0_1_is_refused_by_the_database(importance):
    with pytest.raises(IntegrityError), transaction.atomic():
        record(importance=importance).save()
    assert MemoryRecord.objects.count() == 0


def test_importance_bounds_are_allowed():
    record(importance=0.0).save()
    record(importance=1.0).save()
    assert MemoryRecord.objects.count() == 2


def test_same_dedupe_key_twice_for_one_user_is_refused_but_not_across_users():
    record(dedupe_key="k1").save()
    record(dedupe_key="k1", user_id="u2").save()
    with pytest.raises(IntegrityError), transaction.atomic():
        record(dedupe_key="k1").save()
    # records without a key (direct add_memory) never collide
    record(dedupe_key=None).save()
    record(dedupe_key=None).save()
    assert MemoryRecord.objects.count() == 4


def test_policy_defaults_are_the_default_preset_with_the_articles_caps():
    p = policy_for("pharmacy")
    params = p.params()
    assert params == PolicyParams() and p.preset == "default"
    assert (p.ttl_days, p.half_life_hours, p.max_records, p.max_tokens) == (365, 720, 500, 40_000)
    assert (params.w_recency, params.w_frequency, params.w_importance) == (0.5, 0.0, 0.5)
    assert PolicyVersion.objects.filter(app_name="pharmacy", version=1).exists()


def test_policy_change_bumps_the_version_and_keeps_the_previous():
    policy_for("pharmacy")
    p = update_policy("pharmacy", {"max_records": 300}, note="smaller")
    assert p.version == 2
    versions = {v.version: v.values for v in PolicyVersion.objects.filter(app_name="pharmacy")}
    assert versions[1]["max_records"] == 500
    assert versions[2]["max_records"] == 300


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"max_records": 0}, "max_records", "at least 1"),
        ({"half_life_hours": 0}, "half_life_hours", "positive"),
        ({"w_recency": 0.7}, "__all__", "Weights must sum to 1"),
        ({"w_recency": -0.1, "w_frequency": 0.7}, "__all__", "at least 0"),
    ],
)
def test_bad_policy_values_get_messages_and_change_nothing(changes, field, message):
    policy_for("pharmacy")
    with pytest.raises(ValidationError) as err:
        update_policy("pharmacy", changes)
    assert any(message in m for m in err.value.message_dict[field])
    p = Policy.objects.get(app_name="pharmacy")
    assert (p.version, p.max_records, p.w_recency) == (1, 500, 0.5)
    assert PolicyVersion.objects.filter(app_name="pharmacy").count() == 1


def test_unknown_policy_field_is_refused():
    with pytest.raises(ValidationError, match="Unknown policy field"):
        update_policy("pharmacy", {"max_recordz": 3})


def test_database_refuses_out_of_range_policy_even_past_validation():
    with pytest.raises(IntegrityError), transaction.atomic():
        Policy.objects.create(app_name="x", w_recency=-1)
