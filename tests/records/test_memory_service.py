"""EvictingMemoryService through ADK's own interface."""

from datetime import UTC, datetime, timedelta

import pytest
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records import later, touches
from records.memory_service import EvictingMemoryService, add_memories, pinned_entries
from records.models import EvictionEvent, MemoryRecord, preset_values
from records.policies import update_policy
from records.policy import ARTICLE
from records.sessions import EVENTS_PAGE
from records.touches import buffering

from ..asyncutil import run
from .factories import session, text_event, tool_call_event

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
    # The allergy first; the turn after it may follow, found through its context (the two
    # turns before it are indexed with it at half weight).
    entry, *after = response.memories
    assert [e.content.parts[0].text for e in after] in ([], ["Deliver to 12 Elm Street"])
    record = MemoryRecord.objects.get(content="I am allergic to penicillin")
    assert entry.id == str(record.id)
    assert entry.content.parts[0].text == "I am allergic to penicillin"
    assert entry.author == "user" and entry.content.role == "user"
    assert datetime.fromisoformat(entry.timestamp).tzinfo is not None
    assert entry.custom_metadata["source_session_id"] == "s-7"
    assert entry.custom_metadata["pinned"] is True and entry.custom_metadata["importance"] == 0.95


@pytest.mark.skipif(buffering(), reason="with Redis the touch lands at the next flush")
def test_search_touches_what_it_returned():
    update_policy("pharmacy", preset_values(ARTICLE))  # new records start a half-life old
    svc = service()
    # The name first: a turn is also indexed with the turns before it, so a name said
    # after the address would match "deliver" through its context and be touched too.
    run(svc.add_session_to_memory(session(["My name is Ana", "Deliver to 12 Elm Street"])))
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


def _stored_session(user, events, session_id="s1"):
    """A session of ``events`` stored by memadmin's session service for ``user``."""
    from records.session_service import DjangoSessionService

    sessions = DjangoSessionService()
    held = run(sessions.create_session(app_name="pharmacy", user_id=user, session_id=session_id))
    for e in events:
        run(sessions.append_event(held, e))
    return held


def _context(user, content):
    tokens = MemoryRecord.objects.get(user_id=user, content=content).search_tokens.split()
    return {t for t in tokens if t.startswith("@")}


def _save(user, events, session_id="s1"):
    run(
        service().add_events_to_memory(
            app_name="pharmacy", user_id=user, events=events, session_id=session_id
        )
    )


TURNS = [
    ("user", "I just adopted a greyhound"),
    ("agent", "Congratulations! What is the dog called?"),
    ("user", "She is called Pepper"),
    ("agent", "Lovely name"),
    ("user", "She is scared of the couriers"),
    ("agent", "Noted"),
]


def test_a_session_remembered_an_exchange_at_a_time_is_indexed_as_when_whole():
    """An agent's callback saving each exchange (``add_events_to_memory`` with the
    session's id) gives each batch's first turn the turns said before it, read from the
    stored session, as ingesting the whole session does: the same search index. Tool
    traffic between the turns (more than a read's page) is skipped, as it is whole."""
    tools = [tool_call_event(f"lookup_{i}") for i in range(EVENTS_PAGE + 3)]
    events = {
        user: [text_event(text, author=author) for author, text in TURNS[:4]]
        + tools
        + [text_event(text, author=author) for author, text in TURNS[4:]]
        for user in ("by-exchange", "whole")
    }
    held = {user: _stored_session(user, e) for user, e in events.items()}
    stored = held["by-exchange"].events
    for batch in (stored[0:2], stored[2:4], stored[4 : 4 + len(tools)], stored[-2:]):
        _save("by-exchange", batch)
    run(service().add_session_to_memory(held["whole"]))

    def index(user):
        return dict(
            MemoryRecord.objects.filter(user_id=user).values_list("content", "search_tokens")
        )

    assert index("by-exchange") == index("whole")
    assert "@greyhound" in _context("whole", "She is called Pepper")
    assert "@pepper" in _context("whole", "She is scared of the couriers")  # past the tools


def test_a_batch_takes_the_turns_before_the_stored_event_equal_to_its_first():
    """A different event may share an id with one stored before it: the batch's first
    event is found by its content too, never a later turn taken for the one before."""
    first = text_event("I just adopted a greyhound", id="e1")
    later = text_event("She is called Pepper", id="e1")
    ask, answer = (text_event(t, author="agent") for t in ("What is the dog called?", "Lovely"))
    events = [first, ask, later, answer]
    _stored_session("u1", events)
    _save("u1", events[:2])
    _save("u1", events[2:])
    assert _context("u1", "I just adopted a greyhound") == set()  # not the later e1's
    assert {"@dog", "@pepper"} <= _context("u1", "Lovely")  # the turns before the later e1


def test_a_batch_names_its_session_as_the_session_service_does():
    """Surrounding whitespace in the session id is ignored, as the session service
    ignores it: the batch reads that session's turns, and the session's whole ingest
    later (the sweeper's) takes its records for the same, storing nothing twice."""
    held = _stored_session("u1", [text_event(text, author=a) for a, text in TURNS[:3]])
    _save("u1", held.events[2:], session_id=" s1 ")
    assert "@greyhound" in _context("u1", "She is called Pepper")
    run(service().add_session_to_memory(held))
    assert MemoryRecord.objects.filter(user_id="u1").count() == 3
    assert set(MemoryRecord.objects.values_list("source_session_id", flat=True)) == {"s1"}


def test_a_batch_reads_no_turns_from_a_session_it_does_not_name_exactly():
    """Another user's session of the same id lends nothing; nor does a session not stored
    here; a blank session id is no session and is still saved."""
    events = [text_event(text, author=author) for author, text in TURNS[:3]]
    _stored_session("someone-else", events)
    _save("u1", events[2:])
    _save("u2", [text_event("She is called Pepper")], session_id="not-stored")
    _save("u3", [text_event("She is called Pepper")], session_id=" ")
    for user in ("u1", "u2", "u3"):
        assert _context(user, "She is called Pepper") == set()


def test_events_sharing_an_id_with_different_texts_are_each_remembered_once():
    """The session service stores a different event that shares an id (only an equal
    re-delivery is dropped): memory keeps each text, and a re-ingest adds nothing."""
    svc = service()
    first = text_event("My blood type is O negative", id="e1")
    other = text_event("My insurance number is 12345", id="e1")
    again = text_event("My blood type is O negative", id="e1")  # an equal one, later
    held = session([first, text_event("I live in Leeds"), other, again], id="s1")
    for _ in range(2):
        run(svc.add_session_to_memory(held))
    assert sorted(MemoryRecord.objects.values_list("content", flat=True)) == [
        "I live in Leeds",
        "My blood type is O negative",
        "My insurance number is 12345",
    ]
    found = run(svc.search_memory(app_name="pharmacy", user_id="u1", query="insurance number"))
    assert [m.content.parts[0].text for m in found.memories][:1] == ["My insurance number is 12345"]


def test_ids_with_nul_or_a_lone_surrogate_are_stored_as_replacement_characters():
    """An event id and a session named in add_memory's metadata are stored as every text
    is (PostgreSQL refuses NUL): the same on both databases, nothing lost."""
    svc = service()
    events = [text_event("I live in Leeds", id="e\x00\ud800")]
    run(svc.add_events_to_memory(app_name="pharmacy", user_id="u1", events=events))
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Likes jazz")]))
    run(
        svc.add_memory(
            app_name="pharmacy", user_id="u1", memories=[entry],
            custom_metadata={"session_id": "s\x00\ud800"},
        )
    )  # fmt: skip
    leeds = MemoryRecord.objects.get(content="I live in Leeds")
    assert leeds.source_event_ids == ["e\ufffd\ufffd"]
    # The session service stores the id so too: its later whole ingest adds nothing.
    stored = text_event("I live in Leeds", id="e\ufffd\ufffd")
    run(svc.add_events_to_memory(app_name="pharmacy", user_id="u1", events=[stored]))
    assert MemoryRecord.objects.filter(content="I live in Leeds").count() == 1
    assert MemoryRecord.objects.get(content="Likes jazz").source_session_id == "s\ufffd\ufffd"


def test_a_session_id_in_add_memory_metadata_must_be_a_string():
    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Likes jazz")]))
    with pytest.raises(ValueError, match=r"custom_metadata\['session_id'\] must be a string"):
        run(
            service().add_memory(
                app_name="pharmacy", user_id="u1", memories=[entry],
                custom_metadata={"session_id": {"a": 1}},
            )
        )  # fmt: skip
    assert not MemoryRecord.objects.exists()


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
    # No id: nothing, as ADK's own services (ToolContext.delete_memory() passes None).
    run(svc.delete_memory(app_name="pharmacy", user_id="u1"))
    run(svc.delete_memory(app_name="pharmacy", user_id="u1", memory_id=""))
    assert MemoryRecord.objects.filter(user_id="u1").count() == 1
    # Only ids as search writes them: int() reads these as the record's id, search never
    # returns them, and add_memory does not take them for that record either.
    kept = MemoryRecord.objects.get(user_id="u1")
    arabic = "".join(chr(0x0660 + int(d)) for d in str(kept.id))
    for odd in (arabic, f" {kept.id} ", f"0{kept.id}", f"+{kept.id}", True):
        with pytest.raises(ValueError, match="memory_id must be a record id"):
            run(svc.delete_memory(app_name="pharmacy", user_id="u1", memory_id=odd))
    assert MemoryRecord.objects.filter(user_id="u1").count() == 1
    assert run(svc.delete_all_memories(app_name="pharmacy", user_id="u1")) == 1
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
    later.drain()  # the touch is written after the answer (records.later)
    touches.flush_touches()
    record.refresh_from_db()
    assert (record.hits, record.last_accessed_at) == (1, NOW)


# --- saving what was recalled (one record per distinct entry) ----------------------------

LATER = NOW + timedelta(hours=3)
FIVE_FACTS = [
    "I am allergic to penicillin",
    "Deliver to 12 Elm Street",
    "My name is Ana",
    "My date of birth is 1 May 1980",
    "I prefer morning deliveries",
]


def entry(text, id=None):
    return MemoryEntry(id=id, content=types.Content(role="user", parts=[types.Part(text=text)]))


def recall_all(svc, user="u1"):
    """Every record of the user, through search_memory (one query per fact)."""
    entries = {}
    for text in FIVE_FACTS:
        for found in run(svc.search_memory(app_name="pharmacy", user_id=user, query=text)).memories:
            entries[found.id] = found
    later.drain()
    touches.flush_touches()  # with Redis the search hits land now, not in a later test
    return list(entries.values())


def test_saving_recalled_entries_refreshes_the_records_instead_of_copying_them():
    run(service().add_session_to_memory(session(FIVE_FACTS)))
    recalled = recall_all(service())
    assert len(recalled) == 5 and MemoryRecord.objects.count() == 5
    hits = dict(MemoryRecord.objects.values_list("id", "hits"))

    for _ in range(2):  # saving them again and again changes nothing but the use
        run(service(LATER).add_memory(app_name="pharmacy", user_id="u1", memories=recalled))

    assert MemoryRecord.objects.count() == 5
    for record in MemoryRecord.objects.all():
        assert record.last_accessed_at == LATER  # refreshed: used now, as a search hit is
        assert record.hits == hits[record.id] + 2


def test_a_recalled_entry_can_pin_its_record_but_not_overrule_staff_importance():
    run(service().add_session_to_memory(session(["Deliver to 12 Elm Street", "My name is Ana"])))
    address = MemoryRecord.objects.get(content__startswith="Deliver")
    name = MemoryRecord.objects.get(content__startswith="My name")
    MemoryRecord.objects.filter(pk=name.pk).update(importance=0.2, importance_source="staff")
    recalled = [entry(r.content, id=str(r.pk)) for r in (address, name)]
    result = add_memories_now(recalled, {"pinned": True, "importance": 0.9})
    assert (result.added, result.refreshed) == (0, 2)
    address.refresh_from_db()
    name.refresh_from_db()
    assert (address.pinned, address.importance, address.importance_source) == (
        True,
        0.9,
        "caller",
    )
    assert (name.pinned, name.importance, name.importance_source) == (True, 0.2, "staff")


def add_memories_now(memories, metadata=None, user="u1"):
    from records.memory_service import add_memories

    return add_memories("pharmacy", user, memories, LATER, metadata)


def test_an_entry_naming_another_users_record_is_a_new_memory_and_leaves_that_record_alone():
    run(service().add_session_to_memory(session(["Deliver to 12 Elm Street"], user="u2")))
    theirs = MemoryRecord.objects.get(user_id="u2")
    before = (theirs.hits, theirs.last_accessed_at, theirs.pinned)

    result = add_memories_now([entry(theirs.content, id=str(theirs.pk))], {"pinned": True})

    assert (result.added, result.refreshed) == (1, 0)
    theirs.refresh_from_db()
    assert (theirs.hits, theirs.last_accessed_at, theirs.pinned) == before
    mine = MemoryRecord.objects.get(user_id="u1")
    assert (mine.content, mine.pinned) == ("Deliver to 12 Elm Street", True)
    # and it is keyed by the entry's id, like any id the caller chose
    assert add_memories_now([entry(theirs.content, id=str(theirs.pk))]).duplicates == 1
    assert MemoryRecord.objects.filter(user_id="u1").count() == 1


def test_an_edited_recalled_entry_is_stored_as_a_new_memory():
    # Supersession (a newer address retires the older) is tested in test_store.
    update_policy("pharmacy", {"supersede": False})
    run(service().add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    old = MemoryRecord.objects.get()
    result = add_memories_now([entry("Deliver to 4 Mill Lane", id=str(old.pk))])
    assert (result.added, result.refreshed) == (1, 0)
    assert set(MemoryRecord.objects.values_list("content", flat=True)) == {
        "Deliver to 12 Elm Street",
        "Deliver to 4 Mill Lane",
    }
    old.refresh_from_db()
    assert old.last_accessed_at < LATER  # not touched: the entry is another text


def test_entries_without_id_are_one_record_per_text():
    run(service().add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    stored = MemoryRecord.objects.get()
    result = add_memories_now(
        [entry("Deliver to 12 Elm Street"), entry("Likes jazz"), entry("Likes jazz")]
    )
    assert (result.candidates, result.added, result.refreshed, result.duplicates) == (3, 1, 1, 1)
    assert add_memories_now([entry("Likes jazz")]).refreshed == 1
    assert sorted(MemoryRecord.objects.values_list("content", flat=True)) == [
        "Deliver to 12 Elm Street",
        "Likes jazz",
    ]
    stored.refresh_from_db()
    assert stored.last_accessed_at == LATER


def test_an_id_that_only_looks_like_a_record_id_is_the_callers_own():
    run(service().add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    record = MemoryRecord.objects.get()
    result = add_memories_now([entry(record.content, id=f"0{record.pk}")])
    assert (result.added, result.refreshed) == (1, 0)


def test_pinned_entries_are_the_users_pins_oldest_first_and_reading_them_is_no_use():
    def entry(text):
        return MemoryEntry(content=types.Content(parts=[types.Part(text=text)]))

    add_memories("pharmacy", "u1", [entry("Name is Ana")], NOW, {"pinned": True})
    add_memories("pharmacy", "u1", [entry("Likes jazz")], NOW, {"pinned": False})
    later = NOW + timedelta(hours=1)
    add_memories("pharmacy", "u1", [entry("Allergic to penicillin")], later, {"pinned": True})
    add_memories("pharmacy", "u2", [entry("Name is Bo")], NOW, {"pinned": True})
    add_memories("travel", "u1", [entry("Name is Cy")], NOW, {"pinned": True})
    hits_before = list(MemoryRecord.objects.order_by("id").values_list("hits", flat=True))

    entries = pinned_entries("pharmacy", "u1")

    texts = [e.content.parts[0].text for e in entries]
    assert texts == ["Name is Ana", "Allergic to penicillin"]
    assert all(e.custom_metadata["pinned"] for e in entries)
    assert list(MemoryRecord.objects.order_by("id").values_list("hits", flat=True)) == hits_before
    with pytest.raises(ValueError, match="user_id"):
        pinned_entries("pharmacy", "")


def test_metadata_no_json_holds_is_refused_not_dropped():
    """Circular or very deep custom_metadata is a clear error and stores nothing; before,
    every key of it (ordinary ones too) was silently dropped and the entry stored."""
    circular: dict = {"src": "import"}
    circular["self"] = circular
    deep: dict = {"src": "import"}
    level = deep
    for _ in range(3000):
        level["x"] = {}
        level = level["x"]
    for metadata in (circular, deep):
        item = MemoryEntry(
            content=types.Content(parts=[types.Part(text="I like black coffee")]),
            custom_metadata=metadata,
        )
        with pytest.raises(ValueError, match="custom_metadata cannot be stored as JSON"):
            add_memories("pharmacy", "u1", [item], NOW)
    assert not MemoryRecord.objects.exists()
    kept = MemoryEntry(
        content=types.Content(parts=[types.Part(text="I like green tea")]),
        custom_metadata={"src": "import", "x": {"y": [1, 2]}},
    )
    add_memories("pharmacy", "u1", [kept], NOW)
    assert MemoryRecord.objects.get().custom_metadata["x"] == {"y": [1, 2]}


# --- the content's role, as stored -------------------------------------------------------


def said(text, *, role, author=None):
    return MemoryEntry(
        author=author, content=types.Content(role=role, parts=[types.Part(text=text)])
    )


def roles_found(svc, query, user="u1"):
    """{text: (author, content role)} of what search_memory returns for ``query``."""
    found = run(svc.search_memory(app_name="pharmacy", user_id=user, query=query)).memories
    return {m.content.parts[0].text: (m.author, m.content.role) for m in found}


def test_search_returns_the_role_an_entry_was_added_with_whoever_the_author():
    svc = service()
    memories = [
        said("I am allergic to penicillin", role="user"),  # no author
        said("Deliver to 12 Elm Street", role="user", author="pharmacy_agent"),
        said("Your order ships on Friday", role="model", author="user"),
    ]
    run(svc.add_memory(app_name="pharmacy", user_id="u1", memories=memories))
    assert roles_found(svc, "penicillin elm ships") == {
        "I am allergic to penicillin": (None, "user"),
        "Deliver to 12 Elm Street": ("pharmacy_agent", "user"),
        "Your order ships on Friday": ("user", "model"),
    }


def test_search_returns_the_role_of_each_events_content():
    svc = service()
    events = [
        text_event("I am allergic to penicillin", author="user"),
        text_event("Deliver to 12 Elm Street", author="pharmacy_agent"),
        text_event("I prefer jazz music", author="pharmacy_agent"),
    ]
    events[2].content.role = "user"  # relayed by the agent, said by the user
    run(svc.add_session_to_memory(session(events)))
    assert roles_found(svc, "penicillin elm jazz") == {
        "I am allergic to penicillin": ("user", "user"),
        "Deliver to 12 Elm Street": ("pharmacy_agent", "model"),
        "I prefer jazz music": ("pharmacy_agent", "user"),
    }
    assert MemoryRecord.objects.get(content="I prefer jazz music").role == "user"


def test_roles_are_returned_as_adks_in_memory_service_returns_them():
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService

    events = [
        text_event("I am allergic to penicillin", author="user"),
        text_event("Deliver to 12 Elm Street", author="pharmacy_agent"),
        text_event("I prefer jazz music", author="pharmacy_agent"),
        text_event("Call me on Friday please", author="user"),
    ]
    events[2].content.role = "user"
    events[3].content.role = "model"
    held = session(events)
    adk, ours = InMemoryMemoryService(), service()
    for svc in (adk, ours):
        run(svc.add_session_to_memory(held))
    query = "penicillin elm jazz friday"
    assert roles_found(ours, query) == roles_found(adk, query)
    assert len(roles_found(ours, query)) == 4


@pytest.mark.parametrize("stored_role", [None, ""], ids=["null", "empty"])
def test_a_record_stored_without_a_role_derives_it_from_the_author(stored_role):
    """Records stored before the role was kept (NULL, as migration 0023 left them; an
    empty role is none either) and entries given none read as before: "user" when the
    user said it, else "model"."""
    svc = service()
    run(svc.add_session_to_memory(session(["I am allergic to penicillin"])))
    run(
        svc.add_memory(
            app_name="pharmacy",
            user_id="u1",
            memories=[
                said("Deliver to 12 Elm Street", role="user", author="pharmacy_agent"),
                said("I prefer jazz music", role=None),
            ],
        )
    )
    assert MemoryRecord.objects.get(content="I prefer jazz music").role is None
    MemoryRecord.objects.update(role=stored_role)  # every row as an old one
    assert set(MemoryRecord.objects.values_list("role", flat=True)) == {stored_role}
    assert roles_found(svc, "penicillin elm jazz") == {
        "I am allergic to penicillin": ("user", "user"),
        "Deliver to 12 Elm Street": ("pharmacy_agent", "model"),
        "I prefer jazz music": (None, "model"),
    }


def test_a_role_is_stored_bounded_and_storable_as_the_author_is():
    long_role = "r" * 40
    add_memories(
        "pharmacy",
        "u1",
        [
            said("I am allergic to penicillin", role=long_role),
            said("Deliver to 12 Elm Street", role="us\x00er\ud800"),
        ],
        NOW,
    )
    roles = dict(MemoryRecord.objects.values_list("content", "role"))
    assert roles == {
        "I am allergic to penicillin": "r" * 32,
        "Deliver to 12 Elm Street": "us\ufffder\ufffd",
    }
    assert roles_found(service(), "penicillin elm") == {
        "I am allergic to penicillin": (None, "r" * 32),
        "Deliver to 12 Elm Street": (None, "us\ufffder\ufffd"),
    }
