"""The quality bench's baselines: each evicts in its documented order, never a pin.

PostgreSQL only, like the bench (the orders are SQL over the records table).
"""

from datetime import UTC, datetime, timedelta

import pytest

from bench.quality import policies
from records.models import EvictionEvent, MemoryRecord

from ..records.rows import make_record

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _user(app: str) -> dict[str, int]:
    """Five records, one pinned; name -> id. Untouched records were last accessed a
    half-life before their creation, as ingest stores them."""

    def record(name, created_days, touched_days=None, hits=0, pinned=False):
        created = NOW - timedelta(days=created_days)
        touched = (
            created - timedelta(days=30)
            if touched_days is None
            else NOW - timedelta(days=touched_days)
        )
        return make_record(
            app,
            "u",
            created_at=created,
            last_accessed_at=touched,
            hits=hits,
            pinned=pinned,
            source_session_id="s1",
            source_event_ids=[name],
            dedupe_key=f"{app}-{name}",
        ).id

    return {
        "pinned": record("pinned", 20, pinned=True),
        "a": record("a", 10),
        "b": record("b", 8, touched_days=1, hits=5),
        "c": record("c", 6, hits=2),
        "d": record("d", 4, touched_days=3, hits=1),
    }


@pytest.mark.parametrize(
    ("policy", "evicted"),
    [
        ("fifo", ["a", "b"]),  # oldest creation first
        ("lru", ["a", "c"]),  # last use: a 10 days ago, c 6 (creation), d 3, b 1
        ("lfu", ["a", "d"]),  # hits: a 0, d 1, c 2, b 5
    ],
)
def test_baseline_evicts_in_its_order_down_to_the_budget(policy, evicted):
    ids = _user("app")
    names = {v: k for k, v in ids.items()}
    victims = policies.baseline_victims("app", "u", policy, budget=3, seed=7)
    assert [names[v.id] for v in victims] == evicted


def test_random_order_is_seeded_and_independent_of_record_ids_and_app():
    first, second = _user("one"), _user("two")  # same sources, other ids and app
    order = lambda app, ids, seed: [  # noqa: E731
        {v: k for k, v in ids.items()}[v.id]
        for v in policies.baseline_victims(app, "u", "random", budget=1, seed=seed)
    ]
    assert order("one", first, 7) == order("two", second, 7)
    assert sorted(order("one", first, 7)) == ["a", "b", "c", "d"]  # never the pinned one
    orders = {tuple(order("one", first, seed)) for seed in range(8)}
    assert len(orders) > 1  # the seed matters


def test_enforce_baseline_evicts_through_the_store_and_never_a_pin():
    ids = _user("app")
    assert policies.enforce_baseline("app", "u", "lru", 1, NOW, seed=7) == 4
    assert list(MemoryRecord.objects.values_list("id", flat=True)) == [ids["pinned"]]
    events = EvictionEvent.objects.filter(app_name="app")
    assert sorted(events.values_list("record_id", flat=True)) == sorted(
        v for k, v in ids.items() if k != "pinned"
    )
    assert set(events.values_list("reason", flat=True)) == {"record_cap"}
    assert policies.enforce_baseline("app", "u", "lru", 1, NOW, seed=7) == 0  # pins alone
