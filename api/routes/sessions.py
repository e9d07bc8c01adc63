"""Sessions: what ``DjangoSessionService`` does in-process, over HTTP."""

from __future__ import annotations

from django.utils import timezone
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from ninja import Query, Router

from memadmin_client.wire import MAX_RECENT_EVENTS
from records import sessions
from records.ids import stored_session_id
from records.models import SESSION_ID_MAX, USER_ID_MAX

from ..errors import ApiError
from ..schemas import (
    AppendEventIn,
    AppendEventOut,
    CreateSessionIn,
    SessionDeletedOut,
    SessionListOut,
    SessionOut,
    UserStateOut,
)
from . import CONFLICT, ERRORS, NOT_FOUND, AppName, SessionId, UserId, adk_json

router = Router(tags=["sessions"])
app_router = Router(tags=["sessions"])


def _session_json(session: Session, status: int = 200):
    return adk_json(SessionOut.of(session), status=status)


@router.post(
    "/sessions",
    response={201: SessionOut, **ERRORS, **CONFLICT},
    by_alias=True,
    summary="Create a session (create_session)",
)
def create_session(request, app_name: AppName, user_id: UserId, body: CreateSessionIn):
    """``app:`` and ``user:`` keys of ``state`` go to the app's and the user's shared
    state. A taken ``sessionId`` is refused with 409 ``already_exists``."""
    session = sessions.create_session(
        app_name=app_name,
        user_id=user_id,
        state=body.state,
        session_id=body.session_id,
        now=timezone.now().timestamp(),
    )
    return _session_json(session, status=201)


# A page cursor is the position of the last session of the page before: its place in
# the listing (``AgentSession.listed_at``, its latest update time, as Python's ``repr``
# writes a float, exponent, sign, inf or nan included: values stored before today's
# timestamp rule are positions too), then its user and session ids as the hex of their
# UTF-8. Every string of this pattern is a position (one made by hand starts its page
# there), so a cursor the pattern accepts is never refused, and every cursor the server
# makes has the pattern.
_PLACE = r"(?:-?inf|nan|-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e[+-][0-9]{1,3})?)"
CURSOR_PATTERN = rf"^{_PLACE}~(?:[0-9a-f]{{2}})+~(?:[0-9a-f]{{2}})+$"
CURSOR_MAX = 47 + 2 + 8 * (USER_ID_MAX + SESSION_ID_MAX)
PAGE_DEFAULT, PAGE_MAX = 100, 1_000

Cursor = Query(
    None,
    max_length=CURSOR_MAX,
    pattern=CURSOR_PATTERN,
    description="The `nextCursor` of the page before; absent for the first page.",
)
Limit = Query(
    PAGE_DEFAULT,
    ge=1,
    le=PAGE_MAX,
    description=f"Sessions per page (default {PAGE_DEFAULT}, at most {PAGE_MAX}).",
)


def encode_cursor(position: tuple[float, str, str]) -> str:
    updated, user_id, session_id = position
    return f"{updated!r}~{user_id.encode().hex()}~{session_id.encode().hex()}"


def decode_cursor(cursor: str) -> tuple[float, str, str]:
    updated, user_hex, session_hex = cursor.split("~")

    def text(hexed: str) -> str:
        # Hand-made bytes still name a position: bad UTF-8 and NUL become U+FFFD.
        return bytes.fromhex(hexed).decode(errors="replace").replace("\x00", "\ufffd")

    return float(updated), text(user_hex), text(session_hex)


def _page(app_name: str, user_id: str | None, cursor: str | None, limit: int):
    page = sessions.list_sessions_page(
        app_name=app_name,
        user_id=user_id,
        after=None if cursor is None else decode_cursor(cursor),
        limit=limit,
    )
    return adk_json(
        SessionListOut(
            sessions=[SessionOut.of(s) for s in page.sessions],
            next_cursor=None if page.next_after is None else encode_cursor(page.next_after),
        )
    )


PAGING = (
    "Without events, oldest update first (then user and session id), a page at a time: "
    "follow ``nextCursor`` until it is absent. Each page costs the same however deep. A "
    "session is placed at the latest ``lastUpdateTime`` it has had: an event stamped "
    "earlier than the session's last update (an agent clock behind the server's) moves "
    "``lastUpdateTime`` back but not the session's place. A session updated while you "
    "page moves to its new place and, when that is past your cursor, is listed again "
    "there (keep the later copy); none that existed when you began is skipped."
)


@router.get(
    "/sessions",
    response={200: SessionListOut, **ERRORS},
    by_alias=True,
    summary="List the user's sessions (list_sessions), a page at a time",
    description=PAGING,
)
def list_user_sessions(
    request, app_name: AppName, user_id: UserId, cursor: str | None = Cursor, limit: int = Limit
):
    return _page(app_name, user_id, cursor, limit)


@app_router.get(
    "/sessions",
    response={200: SessionListOut, **ERRORS},
    by_alias=True,
    summary="List every user's sessions (list_sessions without user_id), a page at a time",
    description=PAGING,
)
def list_app_sessions(request, app_name: AppName, cursor: str | None = Cursor, limit: int = Limit):
    return _page(app_name, None, cursor, limit)


@router.get(
    "/sessions/{session_id}",
    response={200: SessionOut, **ERRORS, **NOT_FOUND},
    by_alias=True,
    summary="Get a session (get_session)",
)
def get_session(
    request,
    app_name: AppName,
    user_id: UserId,
    session_id: SessionId,
    num_recent_events: int | None = Query(None, ge=0, le=MAX_RECENT_EVENTS),
    after_timestamp: float | None = Query(None, allow_inf_nan=False),
):
    """Events in append order: the last ``num_recent_events``, then those after the
    newest event older than ``after_timestamp`` (epoch seconds), as ADK filters them."""
    config = None
    if num_recent_events is not None or after_timestamp is not None:
        config = GetSessionConfig(
            num_recent_events=num_recent_events, after_timestamp=after_timestamp
        )
    session = sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id, config=config
    )
    if session is None:
        raise SessionNotFoundError(f"Session {session_id} not found.")  # 404 by api.errors
    return _session_json(session)


@router.delete(
    "/sessions/{session_id}",
    response={200: SessionDeletedOut, **ERRORS},
    by_alias=True,
    summary="Delete a session (delete_session)",
)
def delete_session(request, app_name: AppName, user_id: UserId, session_id: SessionId):
    """Deletes the session and its events, not its artifacts (delete those first)."""
    deleted = sessions.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)
    return SessionDeletedOut(deleted=deleted)


@router.post(
    "/sessions/{session_id}/events",
    response={200: AppendEventOut, **ERRORS, **NOT_FOUND, **CONFLICT},
    by_alias=True,
    summary="Append an event (append_event)",
)
def append_event(
    request, app_name: AppName, user_id: UserId, session_id: SessionId, body: AppendEventIn
):
    """Stores the event and applies its state delta. Send the ``revision`` the session
    was read at: if storage has moved on, the append is refused with 409
    ``stale_session`` (reload and retry). An equal re-delivery of a stored event is not
    stored twice, so retrying after a lost answer is safe."""
    # As the other session routes (records.sessions takes every session id so).
    session_id = stored_session_id(session_id)
    event = body.event
    if event.partial:
        raise ApiError(
            422,
            "invalid_input",
            "Partial (streaming) events are never stored; append the final event instead.",
        )
    held = Session(
        app_name=app_name,
        user_id=user_id,
        id=session_id,
        last_update_time=body.last_update_time or 0.0,
        # Only the last event's id matters to the stale check of a session without a
        # revision (see records.sessions._check_not_stale).
        events=[Event(id=body.last_event_id, author="")] if body.last_event_id else [],
    )
    held._storage_update_marker = body.revision
    sessions.append_event(held, event, now=timezone.now().timestamp())
    if held.events and held.events[-1] is event:
        return adk_json(
            AppendEventOut(
                event=event,
                revision=held._storage_update_marker,
                last_update_time=held.last_update_time,
                stored=True,
            )
        )
    return adk_json(_redelivered(app_name, user_id, session_id, event, body.revision))


def _redelivered(app_name, user_id, session_id, event, revision: str | None) -> AppendEventOut:
    """The answer to an equal re-delivery, which was not stored again.

    Typically a retry after the answer to the first delivery was lost. If that first
    delivery is the only write since the caller's revision, the caller may adopt the
    revision after it (and apply the event locally); otherwise (or without a revision)
    its session object is left as it was: a later append may then be stale, which is
    safe.
    """
    latest = sessions.get_session(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        config=GetSessionConfig(num_recent_events=1),
    )
    caught_up = (
        latest is not None
        and revision is not None
        and latest._storage_update_marker == sessions.next_marker(revision)
        and sessions.is_last_event(app_name, user_id, session_id, event)
    )
    return AppendEventOut(
        event=event,
        revision=latest._storage_update_marker if caught_up else None,
        last_update_time=latest.last_update_time if caught_up else None,
        stored=False,
    )


@router.get(
    "/state",
    response={200: UserStateOut, **ERRORS},
    by_alias=True,
    summary="The user's state (get_user_state)",
)
def get_user_state(request, app_name: AppName, user_id: UserId):
    """The ``user:`` state shared by the user's sessions, keys without the prefix."""
    return adk_json(UserStateOut(state=sessions.get_user_state(app_name=app_name, user_id=user_id)))
