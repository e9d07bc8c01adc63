"""Properties of the eviction policy for any records, caps and clock (hypothesis)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.models import MemoryRecord
from records.policy import EXPIRED, SUPERSEDED, HybridPolicy, PolicyParams, Record
from records.victims import select_victims

BASE = datetime(2026, 1, 1, tzinfo=UTC)

instants = st.integers(min_value=0, max_value=900 * 86400).map(
    lambda s: BASE + timedelta(seconds=s)
)


@st.composite
def records(draw, max_size=60):
    n = draw(st.integers(min_value=0, max_value=max_size))
    out = []
    for i in range(n):
        created = draw(instants)
        out.append(
            Record(
                id=i + 1,
                created_at=created,
                last_accessed_at=created
                + timedelta(seconds=draw(st.integers(-86400 * 30, 86400 * 300))),
                hits=draw(st.integers(0, 10_000)),
                importance=draw(
                    st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]) | st.floats(0, 1, allow_nan=False)
                ),
                pinned=draw(st.booleans()),
                tokens=draw(st.integers(0, 2_000)),
                due_at=draw(st.none() | instants),
                slot=draw(st.sampled_from(["", "", "address", "phone"])),
                stated_at=draw(st.none() | st.sampled_from([created, BASE])),
            )
        )
    return out


@st.composite
def params(draw):
    # weights in thousandths: 0 or at least 0.001 each, summing to exactly 1
    a = draw(st.integers(0, 1000))
    b = draw(st.integers(0, 1000 - a))
    w_r, w_f = a / 1000, b / 1000
    return PolicyParams(
        ttl=timedelta(days=draw(st.integers(1, 800))),
        half_life=timedelta(hours=draw(st.floats(0.5, 24 * 400))),
        max_records=draw(st.integers(1, 80)),
        max_tokens=draw(st.integers(1, 60_000)),
        w_recency=w_r,
        w_frequency=w_f,
        w_importance=(1000 - a - b) / 1000,
        saturation_hits=draw(st.integers(1, 1000)),
        # 0 (never decays) or at least a second (records.policy.problems)
        past_due_half_life=timedelta(
            hours=draw(st.sampled_from([0, 1]) | st.floats(1 / 3600, 24 * 400))
        ),
        supersede=draw(st.booleans()),
    )


@given(records(), params(), instants)
@settings(suppress_health_check=[HealthCheck.too_slow])  # the test machine is shared
def test_victims_respect_pins_caps_subset_expiry_and_determinism(rs, p, now):
    policy = HybridPolicy(p)
    victims = policy.victims(rs, now)
    ids = [v.id for v in victims]
    by_id = {r.id: r for r in rs}
    # a subset, without repeats
    assert len(ids) == len(set(ids)) and set(ids) <= set(by_id)
    # pinned records are never victims
    assert not any(by_id[i].pinned for i in ids)
    # every expired unpinned record is a victim, for that reason
    expired = {r.id for r in rs if not r.pinned and r.created_at + p.ttl < now}
    assert expired <= set(ids)
    assert {v.id for v in victims if v.reason == EXPIRED} == expired
    # after removing the victims both caps hold, unless only pinned records remain over
    kept = [r for r in rs if r.id not in set(ids)]
    over = len(kept) > p.max_records or sum(r.tokens for r in kept) > p.max_tokens
    assert not over or all(r.pinned for r in kept)
    # never more than needed: putting back the last cap victim breaks a cap
    cap_victims = [v for v in victims if v.reason not in (EXPIRED, SUPERSEDED)]
    if cap_victims:
        back = kept + [by_id[cap_victims[-1].id]]
        assert len(back) > p.max_records or sum(r.tokens for r in back) > p.max_tokens
    # a superseded record's replacement is live and current (the caps may still take
    # it), states the same slot and was said later
    retired = {v.id for v in victims if v.reason in (EXPIRED, SUPERSEDED)}
    for v in victims:
        if v.reason == SUPERSEDED:
            newer, old = by_id[v.superseded_by], by_id[v.id]
            assert p.supersede and newer.id not in retired and newer.slot == old.slot != ""
            assert (newer.said_at, newer.id) > (old.said_at, old.id)
    # deterministic, whatever the input order
    assert policy.victims(list(reversed(rs)), now) == victims


@given(records(max_size=40), params(), instants)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.django_db
def test_database_selection_equals_the_pure_policy(rs, p, now):
    with transaction.atomic():  # each example in its own savepoint, rolled back after
        _check_database_selection(rs, p, now)
        transaction.set_rollback(True)


def _check_database_selection(rs, p, now):
    MemoryRecord.objects.bulk_create(
        MemoryRecord(
            id=r.id,
            app_name="app",
            user_id="u",
            content="x",
            created_at=r.created_at,
            last_accessed_at=r.last_accessed_at,
            hits=r.hits,
            importance=r.importance,
            pinned=r.pinned,
            tokens=r.tokens,
            due_at=r.due_at,
            slot=r.slot,
            entry_timestamp=r.stated_at,
        )
        for r in rs
    )
    expected = HybridPolicy(p).victims(rs, now)
    got = select_victims("app", ["u"], now, p)
    assert [(v.id, v.reason, v.superseded_by) for v in got] == [
        (v.id, v.reason, v.superseded_by) for v in expected
    ]
