"""Memory: what ``EvictingMemoryService`` does in-process, over HTTP."""

from __future__ import annotations

from django.utils import timezone
from google.adk.memory.base_memory_service import SearchMemoryResponse
from ninja import Router

from records import memory_service
from records.timestamps import check_event_stamps

from ..errors import ApiError
from ..schemas import (
    AddMemoriesIn,
    DeletedOut,
    IngestEventsIn,
    IngestOut,
    IngestSessionIn,
    SearchIn,
    SearchOut,
)
from . import ERRORS, AppName, MemoryId, UserId, adk_json

router = Router(tags=["memory"])


@router.post(
    "/memory/sessions",
    response={200: IngestOut, **ERRORS},
    by_alias=True,
    summary="Add a session to memory (add_session_to_memory)",
)
def add_session(request, app_name: AppName, user_id: UserId, body: IngestSessionIn):
    """Extract the session's events into records, store the new ones and enforce the
    app's policy for this user. Idempotent: re-sending a session adds only new events.
    The session's ``appName`` and ``userId`` must be the path's."""
    session = body.session
    if (session.app_name, session.user_id) != (app_name, user_id):
        raise ApiError(
            422,
            "invalid_input",
            f"session.appName/userId ({session.app_name!r}, {session.user_id!r}) must match "
            f"the path ({app_name!r}, {user_id!r}).",
        )
    now = timezone.now()
    check_event_stamps(session.events, now.timestamp())
    # The transactions are the service's own (records.store.ingest): the records under the
    # user's lock, then the app's counters after it, so ingests do not queue on them.
    result = memory_service.add_session(session, now)
    return IngestOut.of(result)


@router.post(
    "/memory/events",
    response={200: IngestOut, **ERRORS},
    by_alias=True,
    summary="Add events to memory (add_events_to_memory)",
)
def add_events(request, app_name: AppName, user_id: UserId, body: IngestEventsIn):
    """A delta of events, e.g. the latest turn. Idempotent per event id and session."""
    now = timezone.now()
    check_event_stamps(body.events, now.timestamp())
    result = memory_service.add_events(
        app_name, user_id, body.events, now, session_id=body.session_id
    )
    return IngestOut.of(result)


@router.post(
    "/memory/entries",
    response={200: IngestOut, **ERRORS},
    by_alias=True,
    summary="Add explicit memories (add_memory)",
)
def add_memories(request, app_name: AppName, user_id: UserId, body: AddMemoriesIn):
    """``customMetadata`` may set ``importance`` (0..1) and ``pinned`` for the entries.
    One record per distinct entry: an entry with the ``id`` and text of one of this
    user's records (as search returns it), or without an id and with a stored text,
    refreshes that record (``refreshed``) instead of storing it again."""
    result = memory_service.add_memories(
        app_name, user_id, body.memories, timezone.now(), body.custom_metadata
    )
    return IngestOut.of(result)


@router.post(
    "/memory/search",
    response={200: SearchOut, **ERRORS},
    by_alias=True,
    summary="Search memory (search_memory)",
)
def search(request, app_name: AppName, user_id: UserId, body: SearchIn):
    """At most 10 unexpired records, most relevant first, as ADK ``MemoryEntry``s; the
    records returned count as used (hits, last access), written after the answer."""
    entries = memory_service.search_entries(
        app_name, user_id, body.query, timezone.now(), note_later=True
    )
    return adk_json(SearchMemoryResponse(memories=entries))


@router.delete(
    "/memory/{memory_id}",
    response={200: DeletedOut, **ERRORS},
    by_alias=True,
    summary="Delete one memory (delete_memory)",
)
def delete_memory(request, app_name: AppName, user_id: UserId, memory_id: MemoryId):
    """``memory_id`` is the ``id`` search returned. Logged as a manual eviction."""
    deleted = memory_service.delete(app_name, user_id, str(memory_id), timezone.now())
    return DeletedOut(deleted=deleted)


@router.delete(
    "/memory",
    response={200: DeletedOut, **ERRORS},
    by_alias=True,
    summary="Delete all of the user's memories (delete_memory without an id)",
)
def delete_all_memories(request, app_name: AppName, user_id: UserId):
    return DeletedOut(deleted=memory_service.delete(app_name, user_id, None, timezone.now()))
