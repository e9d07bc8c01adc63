"""EvictingMemoryService through ADK's own interface."""

from datetime import UTC, datetime, timedelta

import pytest
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records.memory_service import EvictingMemoryService
from records.models import EvictionEvent, MemoryRecord
from records.policies import update_policy
from records.touches import buffering

from ..asyncutil import run
from .factories import session, text_event

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def service(now=NOW):
    return EvictingMemoryService(clock=lambda: now)


def test_it_is_adks_real_memory_service():
    assert isinstance(service(), BaseMemoryService)


def test_add_session_then_search_returns_memory_entries_with_ids_and_metadata():
    svc = service()
    run(
        svc.add_session_to_memory(
            session(["Hello!", "I am allergic to penicillin", "Deliver to 12 Elm Street"], id="s-7")
        )
    )
    response = run(svc.search_memory(app_name="pharmacy", user_id="u1", query="penicillin allergy"))
    [entry] = response.memories
    record = MemoryRecord.objects.get(content="I am allergic to penicillin")
    assert entry.id == str(record.id)
    assert entry.content.parts[0].text == "I am allergic to penicillin"
    assert entry.author == "user" and entry.content.role == "user"
    assert datetime.fromisoformat(entry.timestamp).tzinfo is not None
    assert entry.custom_metadata["source_session_id"] == "s-7"
    assert entry.custom_metadata["pinned"] is True and entry.custom_metadata["importance"] == 0.95


@pytest.mark.skipif(buffering(), reason="with Redis the touch lands at the next flush")
def test_search_touches_what_it_returned():
    svc = service()
    run(svc.add_session_to_memory(session(["Deliver to 12 Elm Street", "My name is Ana"])))
    run(svc.search_memory(app_name="pharmacy", user_id="u1", query="deliver"))
    touched = MemoryRecord.objects.get(content__startswith="Deliver")
    untouched = MemoryRecord.objects.get(content__startswith="My name")
    assert (touched.hits, touched.last_accessed_at) == (1, NOW)
    assert (untouched.hits, untouched.last_accessed_at) == (0, NOW - timedelta(days=30))


def test_add_events_is_an_incremental_delta_and_idempotent():
    svc = service()
    events = [text_event("My name is Ana"), text_event("I prefer email")]
    for _ in range(2):
        run(
            svc.add_events_to_memory(
                app_name="pharmacy", user_id="u1", events=events, session_id="s1"
            )
        )
    assert MemoryRecord.objects.count() == 2
    assert set(MemoryRecord.objects.values_list("source_session_id", flat=True)) == {"s1"}


def test_add_memory_stores_explicit_entries_with_caller_importance():
    svc = service()
    run(
        svc.add_memory(
            app_name="pharmacy",
            user_id="u1",
            memories=[
                MemoryEntry(
                    id="pref-1", content=types.Content(parts=[types.Part(text="Likes jazz")])
                )
            ],
            custom_metadata={"importance": 0.7},
        )
    )
    run(
        svc.add_memory(
            app_name="pharmacy",
            user_id="u1",
            memories=[
                MemoryEntry(
                    id="pref-1", content=types.Content(parts=[types.Part(text="Likes jazz")])
                )
            ],
        )
    )
    [record] = MemoryRecord.objects.all()
    assert (record.importance, record.importance_source) == (0.7, "caller")


def test_every_write_enforces_the_policy():
    update_policy("pharmacy", {"max_records": 2})
    svc = service()
    run(
        svc.add_session_to_memory(
            session(["What time do you open?", "My name is Ana", "Deliver to 4 Mill Lane"])
        )
    )
    assert MemoryRecord.objects.count() == 2
    assert list(EvictionEvent.objects.values_list("reason", flat=True)) == ["record_cap"]
    assert not MemoryRecord.objects.filter(content="What time do you open?").exists()


def test_delete_memory_one_and_all():
    svc = service()
    run(svc.add_session_to_memory(session(["My name is Ana", "Deliver to 4 Mill Lane"])))
    run(svc.add_session_to_memory(session(["My name is Bo"], user="u2")))
    first = MemoryRecord.objects.filter(user_id="u1").first()
    run(svc.delete_memory(app_name="pharmacy", user_id="u1", memory_id=str(first.id)))
    assert MemoryRecord.objects.filter(user_id="u1").count() == 1
    run(svc.delete_memory(app_name="pharmacy", user_id="u1"))
    assert MemoryRecord.objects.filter(user_id="u1").count() == 0
    assert MemoryRecord.objects.filter(user_id="u2").count() == 1


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.search_memory(app_name="", user_id="u", query="x"), ValueError, "app_name"),
        (lambda s: s.search_memory(app_name="a", user_id="u", query=None), ValueError, "query"),
        (
            lambda s: s.delete_memory(app_name="a", user_id="u", memory_id="abc"),
            ValueError,
            "memory_id must be a record id",
        ),
        (lambda s: s.add_session_to_memory({"id": "s"}), TypeError, "Session"),
        (
            lambda s: s.add_events_to_memory(app_name="a", user_id="u", events=[{"id": 1}]),
            TypeError,
            "Event",
        ),
        (
            lambda s: s.add_memory(
                app_name="a",
                user_id="u",
                memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="x y z")]))],
                custom_metadata={"importance": 9},
            ),
            ValueError,
            "importance",
        ),
    ],
)
def test_bad_calls_get_clear_errors_and_write_nothing(call, error, message):
    with pytest.raises(error, match=message):
        run(call(service()))
    assert MemoryRecord.objects.count() == 0


@pytest.mark.redis
def test_with_redis_search_touches_are_buffered_and_land_at_the_flush():
    from records import touches

    svc = service()
    run(svc.add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    run(svc.search_memory(app_name="pharmacy", user_id="u1", query="deliver"))
    record = MemoryRecord.objects.get()
    assert record.hits == 0
    touches.flush_touches()
    record.refresh_from_db()
    assert (record.hits, record.last_accessed_at) == (1, NOW)
