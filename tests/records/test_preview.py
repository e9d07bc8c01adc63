"""Dry-run previews agree with the pure policy and change nothing."""

from datetime import UTC, datetime, timedelta

import pytest

from records.models import MemoryRecord
from records.policy import RECORD_CAP, TOKEN_CAP, HybridPolicy, PolicyParams
from records.preview import policy_impact, preview_user_victims
from tests.records.rows import make_record, make_records

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)


def snapshot():
    return list(MemoryRecord.objects.order_by("pk").values())


def test_user_victims_are_the_lowest_scores_never_pins_and_nothing_changes():
    # same score as the pinned one, which ranks first (lower id) and is skipped
    pinned = make_record(user="alice", importance=0.0, pinned=True, now=NOW)
    low = make_record(user="alice", importance=0.0, now=NOW, content="lowest")
    make_records("app", "alice", 3, importance=0.9, now=NOW)
    make_records("app", "bob", 10, importance=0.0, now=NOW)  # another user is not previewed
    before = snapshot()

    victims = preview_user_victims("app", "alice", PolicyParams(max_records=4), NOW)

    assert [(r.pk, v.reason) for r, v in victims] == [(low.pk, RECORD_CAP)]
    assert victims[0][0].content == "lowest"  # whole records, ready to show
    assert pinned.pk not in {r.pk for r, _ in victims}
    assert snapshot() == before


def test_user_victims_match_the_pure_policy_for_other_values():
    for i in range(20):
        make_record(
            user="alice",
            importance=i / 20,
            tokens=50 + i,
            hits=i % 4,
            now=NOW - timedelta(days=i * 20),
            last_accessed_at=NOW - timedelta(days=i * 3),
        )
    params = PolicyParams(
        ttl=timedelta(days=200), half_life=timedelta(days=5), max_records=8, max_tokens=400
    )
    expected = HybridPolicy(params).victims(
        [r.as_policy_record() for r in MemoryRecord.objects.all()], NOW
    )
    got = preview_user_victims("app", "alice", params, NOW)
    # the same victims in the same order; scores equal up to the last floating-point digit
    # (the database and Python compute logarithms with different libraries)
    assert [(v.id, v.reason, v.tokens) for _, v in got] == [
        (v.id, v.reason, v.tokens) for v in expected
    ]
    for (_, g), e in zip(got, expected, strict=True):
        assert g.score.total == pytest.approx(e.score.total, abs=1e-9)
    assert {v.reason for v in expected} == {"expired", RECORD_CAP, TOKEN_CAP}


def test_policy_impact_counts_victims_users_and_tokens_across_the_app():
    make_records("app", "alice", 6, tokens=10, now=NOW)  # 2 over a cap of 4
    make_records("app", "bob", 5, tokens=10, now=NOW)  # 1 over
    make_records("app", "carol", 4, tokens=10, now=NOW)  # at the cap
    make_records("other", "dave", 50, tokens=10, now=NOW)  # another app
    before = snapshot()
    impact = policy_impact("app", PolicyParams(max_records=4), NOW)
    assert (impact.records, impact.users, impact.tokens) == (3, 2, 30)
    assert impact.by_reason == {RECORD_CAP: 3}
    assert policy_impact("app", PolicyParams(), NOW).records == 0
    assert snapshot() == before
