"""The SQL translation of the policy's rules agrees with the pure policy (the oracle)."""

from datetime import UTC, datetime, timedelta

import pytest

from records.models import POLICY_RECORD_FIELDS, AgentSession, MemoryRecord, Policy
from records.policy import PolicyParams, live
from records.policy_sql import expired_q, idle_q, live_q
from records.selectors.sessions import apps_idle_cutoff, is_idle

from .rows import make_record, make_session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_live_and_expired_select_what_the_pure_policy_calls_live():
    p = PolicyParams(ttl=timedelta(days=10))
    cutoff = NOW - p.ttl
    for created in (cutoff, cutoff - timedelta(microseconds=1), cutoff + timedelta(days=1)):
        for pinned in (False, True):
            make_record(now=NOW, created_at=created, pinned=pinned)
    records = list(MemoryRecord.objects.only(*POLICY_RECORD_FIELDS))
    oracle = {r.id for r in records if live(r.as_policy_record(), NOW, p)}
    assert len(oracle) == 5  # only the unpinned one a microsecond past the cutoff is not
    assert set(MemoryRecord.objects.filter(live_q(NOW, p)).values_list("id", flat=True)) == oracle
    expired = set(MemoryRecord.objects.filter(expired_q(NOW, p)).values_list("id", flat=True))
    assert expired == {r.id for r in records} - oracle


def test_the_idle_cutoff_per_app_selects_what_the_pure_rule_calls_idle():
    Policy.objects.create(app_name="quick", session_idle_days=2)  # "other": the default, 7
    sessions = [
        make_session(app, now=NOW, idle_days=days, session_id=f"{app}-{days}")
        for app, days in (("quick", 1.5), ("quick", 2.5), ("other", 6.9), ("other", 7.1))
    ]
    selected = AgentSession.objects.filter(idle_q(apps_idle_cutoff(NOW), NOW))
    assert set(selected.values_list("session_id", flat=True)) == {"quick-2.5", "other-7.1"}
    assert [s.session_id for s in sessions if is_idle(s, NOW)] == ["quick-2.5", "other-7.1"]
