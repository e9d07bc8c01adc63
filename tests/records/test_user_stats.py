"""The per-user stats rows equal the aggregates of the records, whatever writes them."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count, Max, Q, Sum

from records import store
from records.memory_service import add_session
from records.models import MemoryRecord, UserMemoryStats
from records.policies import update_policy
from records.touches import apply_touches

from .factories import make_records, session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def aggregates():
    return {
        (r["app_name"], r["user_id"]): (r["n"], r["t"], r["p"], r["w"])
        for r in MemoryRecord.objects.values("app_name", "user_id").annotate(
            n=Count("id"),
            t=Sum("tokens"),
            p=Count("id", filter=Q(pinned=True)),
            w=Max("created_at"),
        )
    }


def stats():
    return {
        (s.app_name, s.user_id): (s.records, s.tokens, s.pinned, s.last_written)
        for s in UserMemoryStats.objects.all()
    }


def test_stats_follow_inserts_deletes_pins_token_changes_and_erase_everything():
    rng = random.Random(3)
    for user in ("u1", "u2", "u3"):
        make_records(
            "a",
            user,
            rng.randint(5, 40),
            NOW - timedelta(days=rng.randint(0, 9)),
            tokens=rng.randint(1, 50),
        )
    make_records("b", "u1", 7, NOW)
    assert stats() == aggregates() and len(stats()) == 4
    # pins and token changes, one by one and in bulk
    first = MemoryRecord.objects.filter(user_id="u1", app_name="a").first()
    first.pinned, first.tokens = True, 999
    first.save()
    MemoryRecord.objects.filter(user_id="u2").update(pinned=True)
    MemoryRecord.objects.filter(user_id="u3").update(tokens=7)
    assert stats() == aggregates()
    # touches and re-scoring do not touch the stats (nor need to)
    ids = list(MemoryRecord.objects.values_list("id", flat=True)[:10])
    apply_touches(dict.fromkeys(ids, 1), dict.fromkeys(ids, NOW + timedelta(days=1)))
    MemoryRecord.objects.filter(user_id="u3").update(importance=0.9)
    assert stats() == aggregates()
    # moving a record to another user (never done, but counted right)
    MemoryRecord.objects.filter(id=ids[0]).update(user_id="u9")
    assert stats() == aggregates()
    # enforcement (bulk delete), manual delete, the last record of a user
    update_policy("a", {"max_records": 3})
    store.enforce("a", "u3", NOW)
    store.delete_records("b", "u1", NOW)
    assert stats() == aggregates()
    assert ("b", "u1") not in stats()  # a user with no records has no row


def test_stats_follow_ingest_with_eviction():
    update_policy("app", {"max_records": 2})
    add_session(
        session(
            ["My name is Ana", "Deliver to 4 Mill Lane", "What time do you open?"],
            app="app",
            user="u",
        ),
        NOW,
    )
    assert stats() == aggregates() == {("app", "u"): (2, stats()[("app", "u")][1], 0, NOW)}
