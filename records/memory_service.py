"""EvictingMemoryService: ADK's BaseMemoryService on the record store.

Agents and the Runner use it unchanged:

    Runner(agent=..., app_name=..., session_service=DjangoSessionService(),
           memory_service=EvictingMemoryService(), artifact_service=DjangoArtifactService())

Every write extracts records (rules decide importance and pins, small talk is
dropped), stores them and enforces the app's policy for that user under the user's
lock. Search returns unexpired records ranked by relevance and touches them; a lost
touch never fails a user's turn. The sync functions below are the same operations
for Celery tasks, management commands and the HTTP API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import override

from asgiref.sync import sync_to_async
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from . import later, search, store
from . import sessions as session_store
from .extract import memory_key, turn_text
from .ids import check_scope, decimal_id, record_id, stored_session_id
from .models import MemoryRecord
from .search_text import CONTEXT_TURNS

Clock = Callable[[], datetime]

UNSCOPED_SESSION = ""


# --- sync operations ---------------------------------------------------------------------


def add_session(session: Session, now: datetime) -> store.IngestResult:
    """Extract a whole session's events, store them, enforce. Idempotent per event."""
    if not isinstance(session, Session):
        raise TypeError("add_session_to_memory expects a google.adk Session")
    check_scope(session.app_name, session.user_id, session.id)
    return store.ingest_extracted(
        session.app_name,
        session.user_id,
        lambda extractor: extractor.from_events(
            session.app_name, session.user_id, session.id, session.events
        ),
        now,
        count_session=True,
    )


def add_events(
    app_name: str,
    user_id: str,
    events: Sequence[Event],
    now: datetime,
    session_id: str | None = None,
) -> store.IngestResult:
    """Extract a delta of events (not necessarily a whole session). When this service
    stores the session and holds the batch's first event, the turns said before it are
    its first turns' context, as when the whole session is ingested (two reads before
    the ingest, a few more where tool traffic lies between the turns)."""
    check_scope(app_name, user_id, session_id)
    for event in events:
        if not isinstance(event, Event):
            raise TypeError(f"events must be google.adk Event objects, not {type(event).__name__}")
    # As the session service names it, so that the session's whole ingest later (the
    # sweeper's) keys these events alike.
    scope = stored_session_id(session_id) if session_id else UNSCOPED_SESSION
    preceding = _turns_before(app_name, user_id, scope, events)
    return store.ingest_extracted(
        app_name,
        user_id,
        lambda extractor: extractor.from_events(app_name, user_id, scope, events, preceding),
        now,
    )


def _turns_before(
    app_name: str, user_id: str, session_id: str, events: Sequence[Event]
) -> list[Event]:
    """The stored events before the batch, oldest first, back to the ``CONTEXT_TURNS``-th
    that carries text (or the session's start): what its first turns' context needs.
    Read a page at a time; none when this service does not store the session or holds
    no event equal to the batch's first."""
    if not session_id or not events or not events[0].id:
        return []
    out: list[Event] = []
    turns = 0
    for event in session_store.events_before(app_name, user_id, session_id, events[0]):
        out.append(event)
        turns += bool(turn_text(event))  # a turn as the extractor reads one
        if turns == CONTEXT_TURNS:
            break
    return out[::-1]


def add_memories(
    app_name: str,
    user_id: str,
    memories: Sequence[MemoryEntry],
    now: datetime,
    custom_metadata: Mapping[str, object] | None = None,
) -> store.IngestResult:
    """Store explicit memories. custom_metadata may set ``importance`` (0..1), ``pinned``.

    One record per distinct entry: an entry whose ``id`` is one of this user's record
    ids (as ``search_memory`` returns them) with that record's text, or an entry without
    an id whose text a record of this user has, refreshes that record instead of
    storing a copy (an agent that saves what it recalled must not double its memory).
    Any other entry is keyed by its own id, so saving it again adds nothing.
    """
    check_scope(app_name, user_id)
    for memory in memories:
        if not isinstance(memory, MemoryEntry):
            raise TypeError(f"memories must be MemoryEntry objects, not {type(memory).__name__}")
    return store.ingest_extracted(
        app_name,
        user_id,
        lambda extractor: extractor.from_memories(app_name, user_id, memories, custom_metadata),
        now,
        entry_ids=recalled_ids(app_name, user_id, memories),
        match_content=True,
    )


def recalled_ids(app_name: str, user_id: str, memories: Sequence[MemoryEntry]) -> dict[str, int]:
    """{dedupe key of the entry: the record id it names} for entries whose id could be a
    record id (``to_memory_entry`` sets ``str(record.id)``); ingest checks that the
    record is this user's, under the user's lock."""
    out = {}
    for memory in memories:
        entry_id = memory.id or ""
        record_id = decimal_id(entry_id)  # "5", as search returns it
        if record_id is not None:
            out[memory_key(app_name, user_id, entry_id)] = record_id
    return out


def search_entries(
    app_name: str, user_id: str, query: str, now: datetime, *, note_later: bool = False
) -> list[MemoryEntry]:
    """The user's memories for ``query``, touched and logged (``search.note``); with
    ``note_later`` those writes may run after the answer (``search.note_after_answer``)."""
    found = search.find(app_name, user_id, query, now)
    if note_later:
        search.note_after_answer(app_name, user_id, found, now)
    else:
        search.note(app_name, user_id, found, now)
    return [to_memory_entry(r) for r in found.records]


async def asearch_entries(
    app_name: str, user_id: str, query: str, now: datetime
) -> list[MemoryEntry]:
    """``search_entries`` for the agent's event loop, its note after the answer (the turn
    does not wait for the touch: ``records.later``). Where ``search.answers_in_loop``,
    without a thread: the statement is awaited on a connection of ``records.aio``."""
    if not search.answers_in_loop():
        return await sync_to_async(search_entries)(app_name, user_id, query, now, note_later=True)
    found = await search.afind(app_name, user_id, query, now)
    if not later.try_submit(search.note, app_name, user_id, found, now):
        # The queue is full: the note's Redis call (and its database fallback) must not
        # run on the loop, so it runs in Django's thread before the answer, as before.
        await sync_to_async(search.note)(app_name, user_id, found, now)
    return [to_memory_entry(r) for r in found.records]


def pinned_entries(app_name: str, user_id: str) -> list[MemoryEntry]:
    """The user's pinned records, oldest first (pins never expire nor get evicted). A
    read, not a use: nothing is touched."""
    check_scope(app_name, user_id)
    records = MemoryRecord.objects.filter(app_name=app_name, user_id=user_id, pinned=True)
    return [to_memory_entry(r) for r in records.order_by("created_at", "id")]


def to_memory_entry(record: MemoryRecord) -> MemoryEntry:
    """A record as ADK's ``MemoryEntry``: its content with the role it was stored with, as
    ADK's in-memory service returns it; a record stored without one (before the role was
    kept, or given none) is "user" if the user said it, else "model"."""
    stamp = record.entry_timestamp or record.created_at
    metadata = dict(record.custom_metadata or {})
    metadata.update(
        source_session_id=record.source_session_id,
        importance=record.importance,
        importance_source=record.importance_source,
        pinned=record.pinned,
        category=record.category,
    )
    return MemoryEntry(
        id=str(record.id),
        content=types.Content(
            role=record.role or ("user" if record.author == "user" else "model"),
            parts=[types.Part(text=record.content)],
        ),
        author=record.author or None,
        timestamp=stamp.astimezone(UTC).isoformat(),
        custom_metadata=metadata,
    )


def delete(app_name: str, user_id: str, memory_id: str | None, now: datetime) -> int:
    # As search writes ids: "٥" or " 5 " is no id of ours, though int() reads one.
    one = None if memory_id is None else record_id(memory_id)
    return store.delete_records(app_name, user_id, now, one)


# --- the ADK service ----------------------------------------------------------------------


class EvictingMemoryService(BaseMemoryService):
    """ADK memory service that enforces the app's eviction policy on every write."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or timezone.now

    def now(self) -> datetime:
        return self._clock()

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await sync_to_async(add_session)(session, self.now())

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await sync_to_async(add_events)(app_name, user_id, list(events), self.now(), session_id)

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await sync_to_async(add_memories)(
            app_name, user_id, list(memories), self.now(), custom_metadata
        )

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        entries = await asearch_entries(app_name, user_id, query, self.now())
        return SearchMemoryResponse(memories=entries)

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete the one record ``memory_id`` names (the ``id`` search returned), as
        ADK's contract says. Without an id nothing is deleted, as ADK's own services do:
        ``ToolContext.delete_memory()`` passes None by default, and a tool that forgot
        the id must not wipe the user's memory. ``delete_all_memories`` does that."""
        if not memory_id:
            return
        await sync_to_async(delete)(app_name, user_id, memory_id, self.now())

    async def delete_all_memories(self, *, app_name: str, user_id: str) -> int:
        """Delete every record of the user (logged as manual evictions; not an erasure:
        sessions, history and the rest stay). Returns how many went."""
        return await sync_to_async(delete)(app_name, user_id, None, self.now())
