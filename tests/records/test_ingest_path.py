"""The ingest write path: its statement count on PostgreSQL, and the per-process cache
of policies and rules (``records.config_cache``), which must never serve a policy or
a rule older than a change, however the change is made."""

from datetime import UTC, datetime, timedelta

import pytest
import sqlparse
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from records import config_cache, feedback, search_text, store, touches
from records.extract import Extractor
from records.memory_service import add_session
from records.models import (
    ConfigGeneration,
    DailyCounter,
    EvictedRecord,
    EvictionEvent,
    ImportanceRule,
    MemoryRecord,
    Policy,
    RegretTerm,
)
from records.policies import update_policy

from .factories import make_records, session

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TEXTS = [
    "I prefer email please",
    "my order 1234 is late again and I am unhappy",
    "Call me on my mobile about the Leeds branch",
]


def at_cap(app="app", user="u1", cap=20):
    update_policy(app, {"max_records": cap})
    make_records(app, user, cap, NOW - timedelta(hours=1))
    # A first ingest warms this process's cache, as a running worker's is.
    add_session(session(["I am allergic to penicillin"], app=app, user=user, id="warm"), NOW)


def statements(query: str) -> list[str]:
    """The statements of one query string (several go in one round trip)."""
    return [s.strip() for s in sqlparse.split(query) if s.strip()]


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_steady_state_ingest_is_five_statements_in_three_round_trips_and_one_commit():
    at_cap()
    with CaptureQueriesContext(connection) as queries:
        result = add_session(session(TEXTS, app="app", id="s1"), NOW + timedelta(minutes=1))
    assert result.added == 3 and len(result.evicted) == 3  # every ingest evicts
    sql = [q["sql"].strip() for q in queries.captured_queries]
    assert sql.count("COMMIT") == 1, sql
    trips = [s for s in sql if s not in ("BEGIN", "COMMIT", "ROLLBACK")]
    sent = [s for trip in trips for s in statements(trip)]
    assert len(sent) <= 5, "\n".join(sent)
    # the locks, then the state read; the insert, then the victims; their eviction
    assert len(trips) <= 3, "\n\n".join(trips)
    assert [len(statements(t)) for t in trips] == [2, 2, 1]
    assert "pg_advisory_xact_lock" in statements(trips[0])[0]
    assert statements(trips[1])[0].startswith("INSERT INTO")
    # and it wrote what an eviction writes: events, replay metadata, regret terms
    assert EvictionEvent.objects.filter(user_id="u1").count() == 1 + 3  # warm-up + this
    assert EvictedRecord.objects.filter(user_id="u1").count() == 1 + 3
    assert RegretTerm.objects.filter(user_id="u1").exists()
    assert MemoryRecord.objects.filter(app_name="app", user_id="u1").count() == 20
    # the counters waited in the touch buffer: nothing written yet, all there after a flush
    assert not DailyCounter.objects.filter(name=feedback.SESSIONS_INGESTED).exists()
    touches.flush_touches()
    counted = dict(DailyCounter.objects.values_list("name", "value"))
    assert counted[feedback.SESSIONS_INGESTED] == 2
    assert counted[feedback.RECORDS_ADDED] == 4


@pytest.mark.django_db
def test_the_eviction_keeps_what_the_replay_and_the_regret_check_need():
    at_cap()
    add_session(session(TEXTS, app="app", id="s1"), NOW + timedelta(minutes=1))
    assert EvictionEvent.objects.filter(evicted_at=NOW).count() == 1  # the warm-up's
    events = EvictionEvent.objects.filter(evicted_at=NOW + timedelta(minutes=1))
    replay = EvictedRecord.objects.filter(evicted_at=NOW + timedelta(minutes=1))
    events, replay = events.order_by("record_id"), replay.order_by("record_id")
    assert len(events) == 3
    assert [e.record_id for e in events] == [r.record_id for r in replay]
    for e, r in zip(events, replay, strict=True):
        assert (e.app_name, e.reason, e.evicted_at) == (
            "app",
            "record_cap",
            NOW + timedelta(minutes=1),
        )
        assert r.created_at == NOW - timedelta(hours=1) - timedelta(days=1)
        assert r.term_hashes and r.slot == ""
        hashes = set(
            RegretTerm.objects.filter(record_id=e.record_id).values_list("term_hash", flat=True)
        )
        assert hashes == set(r.term_hashes)
    evicted_text = MemoryRecord(content="note 0").content  # make_records' first text
    later = NOW + timedelta(minutes=2)
    assert feedback.is_regret("app", "u1", feedback._terms(evicted_text), later)


@pytest.mark.django_db
def test_a_policy_change_is_used_by_the_next_ingest():
    at_cap(cap=20)
    update_policy("app", {"max_records": 10})
    add_session(session(TEXTS, app="app", id="s1"), NOW + timedelta(minutes=1))
    assert MemoryRecord.objects.filter(app_name="app", user_id="u1").count() == 10
    later = EvictionEvent.objects.filter(evicted_at=NOW + timedelta(minutes=1))
    assert set(later.values_list("policy_version", flat=True)) == {
        Policy.objects.get(app_name="app").version
    }


@pytest.mark.django_db
def test_a_rule_change_is_used_by_the_next_ingest_even_the_first_extraction_was_cached():
    at_cap()
    ImportanceRule.objects.create(
        app_name="app", name="no-orders", pattern=r".*\border\b.*", action="drop"
    )
    add_session(session(TEXTS, app="app", id="s1"), NOW)
    contents = set(MemoryRecord.objects.values_list("content", flat=True))
    assert "my order 1234 is late again and I am unhappy" not in contents
    assert "I prefer email please" in contents


@pytest.mark.django_db
def test_a_change_made_behind_the_services_back_is_seen_too():
    """Raw SQL, a queryset update: no signal, no service; the triggers still bump."""
    at_cap(cap=20)
    before = ConfigGeneration.objects.get().value
    Policy.objects.filter(app_name="app").update(max_records=12)
    assert ConfigGeneration.objects.get().value != before
    add_session(session(TEXTS, app="app", id="s1"), NOW)
    assert MemoryRecord.objects.filter(app_name="app", user_id="u1").count() == 12
    table = ImportanceRule._meta.db_table
    ImportanceRule.objects.create(app_name="", name="keep", pattern="zzz", importance=0.5)
    generation = ConfigGeneration.objects.get().value
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET pattern = %s", [r"\bemail\b"])  # noqa: S608
    assert ConfigGeneration.objects.get().value != generation
    assert "keep" in [r.name for r in config_cache.current("app").rules]
    assert config_cache.current("app").rules[-1].pattern == r"\bemail\b"


@pytest.mark.django_db
def test_without_a_generation_row_nothing_is_cached_and_every_ingest_reads_again():
    at_cap(cap=20)
    ConfigGeneration.objects.all().delete()
    config_cache.clear()
    add_session(session(TEXTS[:1], app="app", id="s1"), NOW)
    assert config_cache.cached("app") is None
    Policy.objects.filter(app_name="app").update(max_records=5)
    ConfigGeneration.objects.all().delete()  # the trigger made one: remove it again
    add_session(session(TEXTS[1:], app="app", id="s2"), NOW)
    assert MemoryRecord.objects.filter(app_name="app", user_id="u1").count() == 5


@pytest.mark.django_db
def test_extractor_for_uses_the_current_rules():
    assert store.extractor_for("app").from_events("app", "u1", "s", []) == []
    ImportanceRule.objects.create(app_name="app", name="x", pattern="zebra", importance=0.99)
    assert "x" in [r.name for r in store.extractor_for("app").rules]


@pytest.mark.django_db
def test_a_policy_created_in_a_rolled_back_transaction_is_not_served_from_the_cache():
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        store.extractor_for("fresh")  # creates the app's policy, in this transaction
        raise Rollback
    assert not Policy.objects.filter(app_name="fresh").exists()
    cached = config_cache.cached("fresh")
    assert cached is None or cached.generation != config_cache.read_generation()
    add_session(session(TEXTS, app="fresh", id="s1"), NOW)
    assert Policy.objects.filter(app_name="fresh").exists()


@pytest.mark.django_db
def test_an_ingested_record_has_every_column_the_orm_would_have_written():
    """PostgreSQL stores new records without model instances (``store._pg_insert``):
    every column must be what the ORM's own path (``store._new_record`` and the
    manager's bulk create, SQLite's path) writes, search tokens with their context
    layer included."""
    update_policy("app", {"max_records": 50})
    texts = [
        *TEXTS,
        "I will pick up my order 4521 next Tuesday",  # a commitment: it has a due date
        "My new phone number is 07700 900123",  # a slot
        "Ich heiße Zoë, 東京に住んでいます 😊",
    ]
    events = session(texts, app="app", id="s1").events
    events[1].author = "agent"
    # Stored at a time after the events were stamped (now): one stamped later than its
    # ingest would be stored as said at the ingest (store._said_by_now).
    now = timezone.now()
    add_session(session(events, app="app", id="s1"), now)
    stored = {r.dedupe_key: r for r in MemoryRecord.objects.filter(app_name="app")}
    extractor: Extractor = store.extractor_for("app")
    candidates = extractor.from_events("app", "u1", "s1", events)
    assert len(stored) == len(candidates) == len(texts)
    params = Policy.objects.get(app_name="app").params()
    fields = [
        f.attname
        for f in MemoryRecord._meta.concrete_fields
        if f.attname not in ("id", "search_vector")
    ]
    for c in candidates:
        expected = store._new_record("app", "u1", c, now, params)
        expected.search_tokens = search_text.reindex(
            expected.content, expected.author, expected.search_tokens
        )
        got = stored[c.dedupe_key]
        assert {f: getattr(got, f) for f in fields} == {f: getattr(expected, f) for f in fields}
    assert any(r.due_at for r in stored.values()) and any(r.slot for r in stored.values())
    assert any("@" in r.search_tokens for r in stored.values())  # the context layer
