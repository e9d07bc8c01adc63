"""ADK sessions on our models: the sync functions every caller shares.

``DjangoSessionService`` (records.session_service) wraps these for ADK's async
interface; the sweeper's Celery tasks and management commands call them directly.
Each takes plain values and returns ADK objects (``Session``, ``Event``,
``ListSessionsResponse``), with the semantics of ADK's own services:

- State keys ``app:`` and ``user:`` live in ``AppState`` / ``UserState`` (without the
  prefix) and are merged back, prefixed, into every session read; ``temp:`` keys are
  never stored.
- ``append_event`` is idempotent for an equal re-delivery of an event, refuses a
  session object older than the stored revision (``StaleSessionError``) and runs
  under the user's lock, because state and memory for one user must not race.
- A refused input raises ``ValueError`` saying what is wrong and what is allowed,
  before anything is written. Timestamps must be real moments, from 2000 to a day
  ahead of the clock (``records.timestamps``; ``TimestampError``, a ``ValueError``).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, Max, Model, OuterRef, Subquery, TextField, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid

# ADK's own JSON coercion for persisted state, so values round-trip as they do in
# ADK's database services (datetimes and models faithfully, the rest by repr).
from google.adk.sessions._session_util import extract_json_safe_state_delta
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from memadmin_client.wire import check_session_config, check_storable_state, without_temp_keys

from . import one_trip
from .ids import decimal_id, stored_session_id, validate_app_name, validate_id
from .locks import acquire_user_lock, user_lock_key
from .models import (
    SESSION_ID_MAX,
    USER_ID_MAX,
    AgentSession,
    AppState,
    SessionEvent,
    UserState,
)
from .storable import storable, storable_text
from .timestamps import check_timestamp

EVENT_ID_MAX = SessionEvent._meta.get_field("event_id").max_length
INVOCATION_ID_MAX = SessionEvent._meta.get_field("invocation_id").max_length
AUTHOR_MAX = SessionEvent._meta.get_field("author").max_length

__all__ = [
    "SessionPage",
    "append_event",
    "create_session",
    "delete_session",
    "get_session",
    "get_user_state",
    "is_last_event",
    "list_sessions",
    "list_sessions_page",
    "next_marker",
    "revision_marker",
]


# --- validation -----------------------------------------------------------------


def _check_owner(app_name: object, user_id: object) -> None:
    validate_app_name(app_name)
    validate_id("user_id", user_id, USER_ID_MAX)


def _clean_session_id(session_id: object) -> str:
    if isinstance(session_id, str):
        session_id = stored_session_id(session_id)
    return validate_id("session_id", session_id, SESSION_ID_MAX)


def _check_event_columns(event: Event) -> None:
    """Refuse over-long id, invocation id and author; make them storable as the event's
    JSON is (NUL and lone surrogates become U+FFFD, on both databases), so the columns
    and the JSON hold the same values."""
    for name, value, limit in (
        ("event id", event.id, EVENT_ID_MAX),
        ("event invocation_id", event.invocation_id or "", INVOCATION_ID_MAX),
        ("event author", event.author or "", AUTHOR_MAX),
    ):
        if len(value) > limit:
            raise ValueError(
                f"{name} is {len(value)} characters long; at most {limit} are allowed."
            )
    for field in ("id", "invocation_id", "author"):
        value = getattr(event, field)
        if value and storable_text(value) != value:
            setattr(event, field, storable_text(value))


# --- reading --------------------------------------------------------------------


def revision_marker(row_id: int, revision: int) -> str:
    """A session object's ``_storage_update_marker``: which stored session it was read
    from (its row) and at which revision. A session deleted and created again under its
    id is another row, so an object read before the delete is stale whatever the
    revisions (ADK's database service marks with the update time for that reason)."""
    return f"{row_id}.{revision}"


def next_marker(marker: str) -> str | None:
    """The marker one append after ``marker``, or None if it is not one we write."""
    row_id, dot, revision = marker.partition(".")
    ids = decimal_id(row_id), decimal_id(revision)
    if not dot or ids[0] is None or ids[1] is None:
        return None
    return revision_marker(ids[0], ids[1] + 1)


def _to_session(row: AgentSession, state: dict[str, Any], events: list[Event]) -> Session:
    return _session_of(
        row.app_name,
        row.user_id,
        row.session_id,
        state,
        events,
        row.last_update_time,
        revision_marker(row.id, row.revision),
    )


_SESSION_TEMPLATE = Session(app_name="-", user_id="-", id="-")
# What pydantic's model_copy(update=...) of the template leaves: every field set.
_SESSION_FIELDS = frozenset(_SESSION_TEMPLATE.__dict__)
# The template's fields and private slots that a listing does not set itself (none in
# this ADK; a later one may add some, with their defaults).
_OTHER_FIELDS = {
    k: v
    for k, v in _SESSION_TEMPLATE.__dict__.items()
    if k not in {"id", "app_name", "user_id", "state", "events", "last_update_time"}
}
_OTHER_PRIVATE = {
    k: v for k, v in _SESSION_TEMPLATE.__pydantic_private__.items() if k != "_storage_update_marker"
}
_set_slot = object.__setattr__


def _session_of(
    app_name: str,
    user_id: str,
    session_id: str,
    state: dict[str, Any],
    events: list[Event],
    last_update_time: float,
    marker: str,
) -> Session:
    session = _sessions_of(
        app_name, [(user_id, session_id, None, last_update_time, marker)], [state], {}, {}
    )[0]
    session.__dict__["events"] = events
    return session


def _merged_state(
    app_state: dict[str, Any], user_state: dict[str, Any], session_state: dict[str, Any]
) -> dict[str, Any]:
    merged = dict(session_state)
    merged.update({State.APP_PREFIX + k: v for k, v in app_state.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user_state.items()})
    return merged


def _app_state(app_name: str) -> dict[str, Any]:
    state = AppState.objects.filter(app_name=app_name).values_list("state", flat=True).first()
    return state or {}


def _user_state(app_name: str, user_id: str) -> dict[str, Any]:
    state = (
        UserState.objects.filter(app_name=app_name, user_id=user_id)
        .values_list("state", flat=True)
        .first()
    )
    return state or {}


def _load_events(row: AgentSession, config: GetSessionConfig | None) -> list[Event]:
    """The session's events in append order, filtered as ADK's in-memory service does:
    first the last ``num_recent_events``, then everything after the newest event that
    is older than ``after_timestamp``."""
    events = SessionEvent.objects.filter(session=row)
    if config is not None and config.num_recent_events is not None:
        if config.num_recent_events == 0:
            return []
        first = (
            events.order_by("-position")
            .values_list("position", flat=True)[config.num_recent_events - 1 :]
            .first()
        )
        if first is not None:
            events = events.filter(position__gte=first)
    if config is not None and config.after_timestamp is not None:
        older = events.filter(timestamp__lt=config.after_timestamp).aggregate(p=Max("position"))
        if older["p"] is not None:
            events = events.filter(position__gt=older["p"])
    return [
        Event.model_validate(data)
        for data in events.order_by("position").values_list("data", flat=True)
    ]


def get_session(
    *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
) -> Session | None:
    """The session with its (filtered) events and merged state, or None if there is none."""
    _check_owner(app_name, user_id)
    session_id = _clean_session_id(session_id)
    check_session_config(config)
    # The row is read before the events: if an append commits in between, the caller
    # holds an older revision than its events and a later append is refused as stale
    # (safe), rather than the other way round (a lost event).
    # The shared states come in the same statement (one round trip fewer each).
    row = (
        AgentSession.objects.filter(app_name=app_name, user_id=user_id, session_id=session_id)
        .annotate(
            app_state=Subquery(
                AppState.objects.filter(app_name=OuterRef("app_name")).values("state")[:1]
            ),
            user_state=Subquery(
                UserState.objects.filter(
                    app_name=OuterRef("app_name"), user_id=OuterRef("user_id")
                ).values("state")[:1]
            ),
        )
        .first()
    )
    if row is None:
        return None
    events = _load_events(row, config)
    state = _merged_state(_json_object(row.app_state), _json_object(row.user_state), row.state)
    return _to_session(row, state, events)


def _json_object(value: Any) -> dict[str, Any]:
    # A JSON column read through a subquery arrives as text on some backends.
    if value is None:
        return {}
    return json.loads(value) if isinstance(value, str) else value


# The order of every listing, and of the positions a page cursor names: by where each
# session is placed (``AgentSession.listed_at``: its latest last update, which never
# moves back, so a listing in progress misses none of the sessions it began with).
LISTING_ORDER = ("listed_at", "user_id", "session_id")


@dataclass(frozen=True)
class SessionPage:
    """One page of a listing, and where the next one starts (None after the last)."""

    sessions: list[Session]
    next_after: tuple[float, str, str] | None


def _listing(
    app_name: str,
    user_id: str | None,
    *,
    updated_before: float | None = None,
    after: tuple[float, str, str] | None = None,
    limit: int | None = None,
) -> tuple[list[Session], list[tuple]]:
    """Sessions without events in ``LISTING_ORDER``, and their rows (user, session,
    state, last update, revision, place): read in index order (app, place, user,
    session: no sort), the session columns only, then the shared states once."""
    validate_app_name(app_name)
    rows = AgentSession.objects.filter(app_name=app_name)
    if user_id is not None:
        validate_id("user_id", user_id, USER_ID_MAX)
        rows = rows.filter(user_id=user_id)
    if updated_before is not None:
        rows = rows.filter(last_update_time__lt=updated_before)
    if after is not None:
        # A row comparison: one index range on both databases (an OR of three would not be).
        rows = rows.extra(
            where=['("listed_at", "user_id", "session_id") > (%s, %s, %s)'],
            params=list(after),
        )
    # The state as text, decoded here: the JSON field's converter per row cost a third
    # of a 10,000-session listing.
    listing = rows.order_by(*LISTING_ORDER).values_list(
        "user_id",
        "session_id",
        Cast("state", TextField()),
        "last_update_time",
        Concat(  # the session's marker (revision_marker)
            Cast("id", TextField()),
            Value("."),
            Cast("revision", TextField()),
            output_field=TextField(),
        ),
        "listed_at",
    )
    app_state = AppState.objects.filter(app_name=app_name).values_list(Cast("state", TextField()))
    if limit is None:
        # The user states of the listed sessions' users, found by the database (one
        # index probe per user state of the app, no list of users sent back).
        user_states = UserState.objects.filter(
            app_name=app_name, user_id__in=rows.values("user_id")
        ).values_list("user_id", Cast("state", TextField()))
        listed, app_rows, user_rows = _read_together(listing, app_state, user_states)
    else:
        # A page: only its own users' states (a cursor deep in a large app would make the
        # database look at every later session's user).
        listed, app_rows = _read_together(listing[:limit], app_state)
        users = {row[0] for row in listed}
        user_rows = (
            UserState.objects.filter(app_name=app_name, user_id__in=users).values_list(
                "user_id", Cast("state", TextField())
            )
            if users
            else []
        )
    if not listed:
        return [], []
    # One decode for every state (they are JSON objects from our own column), and the
    # shared states prefixed once per user rather than once per session.
    app_shared = _merged_state(json.loads(app_rows[0][0]) if app_rows else {}, {}, {})
    shared = {user: _merged_state({}, json.loads(state), app_shared) for user, state in user_rows}
    with _collector_paused():
        states = json.loads("[" + ",".join([row[2] for row in listed]) + "]")
        return _sessions_of(app_name, listed, states, shared, app_shared), listed


@contextmanager
def _collector_paused():
    """No cyclic garbage collection while a listing builds its sessions. Six new objects
    a session, all alive: at 10,000 sessions the collector promoted them generation by
    generation and ran a full collection of the process. Freed by reference counting
    when the caller drops them, they need no collection. Whoever found the collector on
    turns it back on (a pause in another thread may end first: that only shortens this
    one)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _read_together(*querysets) -> list[list[tuple]]:
    """The rows of each queryset; on PostgreSQL from one query string (one round trip)."""
    statements = [qs.query.sql_with_params() for qs in querysets]
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            results = []
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall())
            return results
        return one_trip.execute(
            cursor,
            [sql for sql, _ in statements],
            [param for _, params in statements for param in params],
        )


def _sessions_of(
    app_name: str,
    listed: list[tuple],
    states: list[dict[str, Any]],
    shared: dict[str, dict[str, Any]],
    app_shared: dict[str, Any],
) -> list[Session]:
    """A ``Session`` without events for every listed row (user, session, _, time,
    marker, and anything after), its state completed with the user's shared
    states (``app_shared`` for a user without any).

    Not a validation: every value comes from our own columns (checked when written).
    Built as pydantic's model_construct and model_copy build a model (the instance dict,
    the fields set, no extra, the private slots), without their per-field loop and
    copies, in one loop without a call per session: a listing of 10,000 sessions spent
    most of its time here. The template supplies any field and private slot ADK adds
    later.
    """
    new, set_slot, fields = object.__new__, _set_slot, _SESSION_FIELDS
    other_fields, other_private = _OTHER_FIELDS, _OTHER_PRIVATE
    built = []
    append = built.append
    for (user, session_id, _, updated, marker, *_), state in zip(listed, states, strict=True):
        state.update(shared.get(user, app_shared))
        session = new(Session)
        set_slot(
            session,
            "__dict__",
            {
                **other_fields,
                "id": session_id,
                "app_name": app_name,
                "user_id": user,
                "state": state,
                "events": [],
                "last_update_time": updated,
            },
        )
        set_slot(session, "__pydantic_fields_set__", set(fields))
        set_slot(session, "__pydantic_extra__", None)
        set_slot(
            session, "__pydantic_private__", {**other_private, "_storage_update_marker": marker}
        )
        append(session)
    return built


def list_sessions(
    *, app_name: str, user_id: str | None = None, updated_before: float | None = None
) -> ListSessionsResponse:
    """Sessions without events, oldest update first; every user's when ``user_id`` is None.

    ``updated_before`` (epoch seconds, not part of ADK's interface) keeps only sessions
    last updated before it: the sweeper's idle sessions, by index.
    """
    listed, _ = _listing(app_name, user_id, updated_before=updated_before)
    return ListSessionsResponse(sessions=listed)


def list_sessions_page(
    *,
    app_name: str,
    user_id: str | None = None,
    after: tuple[float, str, str] | None = None,
    limit: int,
) -> SessionPage:
    """At most ``limit`` sessions of the listing, those after the position ``after``
    (a session's (listed_at, user_id, session_id)). Keyset paging: each page costs the
    same however deep it is; a session updated while a caller pages is seen again later
    (moved to the end), and none that existed when the paging began is skipped: a
    session's place never moves back (``AgentSession.listed_at``)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}.")
    listed, rows = _listing(app_name, user_id, after=after, limit=limit + 1)
    if len(listed) <= limit:
        return SessionPage(sessions=listed, next_after=None)
    user, session_id, *_, listed_at = rows[limit - 1]
    return SessionPage(sessions=listed[:limit], next_after=(listed_at, user, session_id))


def get_user_state(*, app_name: str, user_id: str) -> dict[str, Any]:
    """The user's ``user:`` state, keys without the prefix ({} if none is stored)."""
    _check_owner(app_name, user_id)
    return _user_state(app_name, user_id)


# --- writing --------------------------------------------------------------------


def _update_state_row(model: type[Model], delta: dict[str, Any], **key: str) -> None:
    """Merge ``delta`` into the row's state with dict.update() semantics, row-locked."""
    if not delta:
        return
    row, _ = model.objects.select_for_update().get_or_create(**key)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def create_session(
    *,
    app_name: str,
    user_id: str,
    state: dict[str, Any] | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> Session:
    """Create a session; ``app:``/``user:`` keys of ``state`` go to the shared states.

    ``now`` (epoch seconds, ADK's clock by default) is its creation and update time.
    Raises ``AlreadyExistsError`` if the id is taken (and then changes nothing).
    """
    _check_owner(app_name, user_id)
    session_id = platform_uuid.new_uuid() if session_id is None else _clean_session_id(session_id)
    if state is not None and not isinstance(state, dict):
        raise ValueError(f"state must be a dict of key -> value, not {type(state).__name__}.")
    check_storable_state(state or {}, "session state")
    deltas = storable(extract_json_safe_state_delta(state or {}), what="session state")
    now = (
        platform_time.get_time()
        if now is None
        else check_timestamp("now", now, platform_time.get_time())
    )

    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        key = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        if AgentSession.objects.filter(**key).exists():
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        _update_state_row(AppState, deltas["app"], app_name=app_name)
        _update_state_row(UserState, deltas["user"], app_name=app_name, user_id=user_id)
        try:
            row = AgentSession.objects.create(
                **key,
                state=deltas["session"],
                created_at=datetime.fromtimestamp(now, UTC),
                last_update_time=now,
            )
        except IntegrityError as exc:  # created by a writer that did not take the lock
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from exc
        merged = _merged_state(_app_state(app_name), _user_state(app_name, user_id), row.state)
    return _to_session(row, merged, [])


def delete_session(*, app_name: str, user_id: str, session_id: str) -> bool:
    """Delete the session and its events (not its artifacts). True if it existed.

    Artifacts are left alone on purpose: whoever retires a session deletes them first
    (``records.artifacts.delete_session_artifacts``), while they can still be listed.
    """
    _check_owner(app_name, user_id)
    session_id = _clean_session_id(session_id)
    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        row = (
            AgentSession.objects.filter(app_name=app_name, user_id=user_id, session_id=session_id)
            .only("pk")
            .first()
        )
        if row is None:
            return False
        SessionEvent.objects.filter(session_id=row.pk).delete()
        AgentSession.objects.filter(pk=row.pk).delete()
    return True


def _is_stored_already(row: AgentSession, event: Event, as_stored: dict[str, Any]) -> bool:
    """An equal re-delivery (same id and fields) of an event the session already holds.

    Numbers compare by value: PostgreSQL's jsonb gives 1e+23 back as the integer
    100000000000000000000000, which Python's == does not take for the float 1e23."""
    stored = SessionEvent.objects.filter(session=row, event_id=event.id).values_list(
        "data", flat=True
    )
    wanted = _by_value(as_stored)
    return any(_by_value(data) == wanted for data in stored)


# Events read back at a time before a batch (``events_before``): its first turns'
# context is in the text turns among them (tool calls and responses carry none).
EVENTS_PAGE = 8


def events_before(app_name: str, user_id: str, session_id: str, event: Event) -> Iterator[Event]:
    """The events the session holds before ``event``, newest first, read a page
    (``EVENTS_PAGE``) at a time as the caller goes on; none when this store holds neither
    the session nor ``event``. Where several stored events share its id (a different
    event may), the one equal to it, judged as a re-delivery is; none if none is."""
    # The session's key first, so that the events are read backwards along
    # (session, position) rather than all of the session's filtered and sorted.
    session = Subquery(
        AgentSession.objects.filter(
            app_name=app_name, user_id=user_id, session_id=_clean_session_id(session_id)
        ).values("pk")[:1]
    )
    stored = SessionEvent.objects.filter(session=session)
    found = list(
        stored.filter(event_id=storable_text(event.id or "")).values_list("position", "data")
    )
    if len(found) > 1:
        wanted = _by_value(_stored_form(event))
        found = [(p, data) for p, data in found if _by_value(data) == wanted]
    if len(found) != 1:
        return
    position = found[0][0]
    while True:
        page = list(
            stored.filter(position__lt=position)
            .order_by("-position")
            .values_list("position", "data")[:EVENTS_PAGE]
        )
        for _, data in page:
            yield Event.model_validate(data)
        if len(page) < EVENTS_PAGE:
            return
        position = page[-1][0]  # the next page ends where this one did


def is_last_event(app_name: str, user_id: str, session_id: str, event: Event) -> bool:
    """Whether the session's last stored event is ``event``, judged as a re-delivery is
    (``_is_stored_already``): a session may hold another event with the same id."""
    data = (
        SessionEvent.objects.filter(
            session__app_name=app_name, session__user_id=user_id, session__session_id=session_id
        )
        .order_by("-position")
        .values_list("data", flat=True)
        .first()
    )
    return data is not None and _by_value(data) == _by_value(_stored_form(event))


def _stored_form(event: Event) -> dict[str, Any]:
    """``event`` as the session stores it: storable JSON without its ``temp:`` keys."""
    return _without_temp(
        storable(event.model_dump(mode="json", exclude_none=True), what="an event")
    )


def _by_value(value: Any) -> Any:
    """JSON data with every number as the Decimal it was written as (a float's shortest
    repr, which is what json.dumps sent)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _by_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_by_value(v) for v in value]
    return value


def _without_temp(as_json: dict[str, Any]) -> dict[str, Any]:
    """An event's JSON as stored: its delta's ``temp:`` keys are never kept."""
    delta = as_json.get("actions", {}).get("state_delta")
    kept = without_temp_keys(delta) if delta else delta
    if kept is delta:
        return as_json
    return {**as_json, "actions": {**as_json["actions"], "state_delta": kept}}


def _check_not_stale(row: AgentSession, session: Session) -> None:
    """Refuse a session object older than storage, as ADK's database service does."""
    marker = session._storage_update_marker
    if marker is not None:
        stored = revision_marker(row.id, row.revision)
        if marker != stored:
            raise StaleSessionError(
                f"Session {row.session_id} is at revision {stored} in storage but this "
                f"session object was loaded at revision {marker} (a revision names the "
                "stored session too: one deleted and created again is another). Reload it "
                "with get_session before appending more events."
            )
        return
    # A session object that did not come from us (no marker): stale only if storage has
    # moved past the last event it holds.
    if row.last_update_time > session.last_update_time:
        latest = (
            SessionEvent.objects.filter(session=row)
            .order_by("-position")
            .values_list("event_id", flat=True)
            .first()
        )
        held = session.events[-1].id if session.events else None
        if latest != held:
            raise StaleSessionError(
                f"Session {row.session_id} has been modified in storage since this session "
                "object was made. Reload it with get_session before appending more events."
            )


def _apply_temp_state(session: Session, event: Event) -> None:
    # As BaseSessionService: temp values stay readable for the rest of the invocation.
    for key, value in (event.actions.state_delta or {}).items():
        if key.startswith(State.TEMP_PREFIX):
            session.state[key] = value


def _append_sql() -> str:
    """The PostgreSQL append, run after the user's lock: one statement that locks the session
    row and writes only if the caller's revision is the stored one and no event with
    this id is stored yet (anything else is left to the ORM path, which explains it)."""
    session_t = AgentSession._meta.db_table
    event_t = SessionEvent._meta.db_table
    app_t, user_t = AppState._meta.db_table, UserState._meta.db_table
    return f"""
    WITH target AS (
        SELECT id, revision FROM {session_t}
        WHERE app_name = %(app)s AND user_id = %(user)s AND session_id = %(session)s
        FOR UPDATE
    ), fit AS (
        SELECT target.id FROM target
        WHERE target.id::text || '.' || target.revision::text = %(marker)s AND NOT EXISTS (
            SELECT 1 FROM {event_t} e
            WHERE e.session_id = target.id AND e.event_id = %(event_id)s
        )
    ), event AS (
        INSERT INTO {event_t} ("session_id", "position", "event_id", "invocation_id",
                               "author", "timestamp", "is_compaction", "data")
        SELECT fit.id, COALESCE((
                SELECT e."position" + 1 FROM {event_t} e
                WHERE e.session_id = fit.id ORDER BY e."position" DESC LIMIT 1
            ), 0), %(event_id)s, %(invocation_id)s, %(author)s, %(ts)s, %(compaction)s,
            %(data)s::jsonb
        FROM fit
    ), app_state AS (
        INSERT INTO {app_t} (app_name, state, updated_at)
        SELECT %(app)s, %(app_delta)s::jsonb, %(now)s FROM fit WHERE %(has_app)s
        ON CONFLICT (app_name) DO UPDATE
        SET state = {app_t}.state || EXCLUDED.state, updated_at = EXCLUDED.updated_at
    ), user_state AS (
        INSERT INTO {user_t} (app_name, user_id, state, updated_at)
        SELECT %(app)s, %(user)s, %(user_delta)s::jsonb, %(now)s FROM fit WHERE %(has_user)s
        ON CONFLICT (app_name, user_id) DO UPDATE
        SET state = {user_t}.state || EXCLUDED.state, updated_at = EXCLUDED.updated_at
    )
    UPDATE {session_t} AS s
    SET state = s.state || %(session_delta)s::jsonb, last_update_time = %(ts)s,
        listed_at = GREATEST(s.listed_at, %(ts)s), revision = s.revision + 1,
        event_count = s.event_count + 1
    FROM fit WHERE s.id = fit.id
    RETURNING s.id, s.revision"""  # noqa: S608 - the models' tables; values are parameters


_APPEND_SQL = _append_sql()


def _append_in_one_round_trip(
    session: Session, event: Event, data: dict[str, Any], deltas: dict[str, dict[str, Any]]
) -> str | None:
    """PostgreSQL: store the event, its state deltas and the session's new revision in
    one query string (one round trip; outside a transaction PostgreSQL runs the string
    as one, so the lock is held to its end). The new marker, or None if it did not
    write: a missing session, a stale one, an event id already stored."""
    with connection.cursor() as cursor:
        _locked, written = one_trip.execute(
            cursor,
            ["SELECT pg_advisory_xact_lock(%(lock)s)", _APPEND_SQL],
            {
                "lock": user_lock_key(session.app_name, session.user_id),
                "app": session.app_name,
                "user": session.user_id,
                "session": session.id,
                "marker": session._storage_update_marker,
                "event_id": event.id,
                "invocation_id": event.invocation_id or "",
                "author": event.author or "",
                "ts": event.timestamp,
                "compaction": event.actions.compaction is not None,
                "data": json.dumps(data),
                "has_app": bool(deltas["app"]),
                "app_delta": json.dumps(deltas["app"]),
                "has_user": bool(deltas["user"]),
                "user_delta": json.dumps(deltas["user"]),
                "session_delta": json.dumps(deltas["session"]),
                "now": timezone.now(),
            },
        )
    return revision_marker(*written[0]) if written else None


def append_event(session: Session, event: Event, *, now: float | None = None) -> Event:
    """Store ``event`` in ``session`` and apply its state delta; update ``session`` too.

    Partial (streaming) events are returned unstored. An equal re-delivery of an event
    already stored is returned without storing it again or re-applying its delta.
    The event's timestamp becomes the session's last update, so it must be in range as
    of ``now`` (epoch seconds, ADK's clock by default): ``TimestampError`` otherwise.
    Raises ``SessionNotFoundError`` for a missing session and ``StaleSessionError`` if
    ``session`` is older than the stored revision.
    """
    if event.partial:
        return event
    _check_owner(session.app_name, session.user_id)
    validate_id("session_id", session.id, SESSION_ID_MAX)
    _check_event_columns(event)
    check_storable_state(event.actions.state_delta or {}, "state delta")
    check_timestamp(
        "event timestamp", event.timestamp, platform_time.get_time() if now is None else now
    )
    # PostgreSQL cannot store NUL or lone surrogates: they become U+FFFD (records.storable).
    as_delivered = storable(event.model_dump(mode="json", exclude_none=True), what="an event")

    delta = event.actions.state_delta or {}
    if (
        connection.vendor == "postgresql"
        and session._storage_update_marker is not None
        and without_temp_keys(delta) is delta
    ):
        # The common append (a session object we returned, no temp: keys) in one round
        # trip; anything it does not write goes the ORM's way below, which re-checks all.
        deltas = storable(extract_json_safe_state_delta(delta), what="a state delta")
        marker = _append_in_one_round_trip(session, event, as_delivered, deltas)
        if marker is not None:
            _commit_to_session(session, event, event.timestamp, marker)
            return event

    with transaction.atomic():
        acquire_user_lock(session.app_name, session.user_id)
        # One statement reads the row (locked), whether an event with this id is stored
        # and the last position. Taken after the user's lock, its snapshot holds every
        # append that went before.
        events = SessionEvent.objects.filter(session=OuterRef("pk"))
        row = (
            AgentSession.objects.select_for_update()
            .filter(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
            .annotate(
                id_stored=Exists(events.filter(event_id=event.id)),
                last_position=Subquery(events.order_by("-position").values("position")[:1]),
            )
            .first()
        )
        # As ADK's database service: temp state reaches the caller's session object even
        # when the append is then refused (no session, or a stale one).
        _apply_temp_state(session, event)
        if event.actions.state_delta:
            event.actions.state_delta = without_temp_keys(event.actions.state_delta)
        if row is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        as_stored = _without_temp(as_delivered)
        if row.id_stored and _is_stored_already(row, event, as_stored):
            return event
        _check_not_stale(row, session)

        deltas = storable(
            extract_json_safe_state_delta(event.actions.state_delta or {}), what="a state delta"
        )
        _update_state_row(AppState, deltas["app"], app_name=row.app_name)
        _update_state_row(UserState, deltas["user"], app_name=row.app_name, user_id=row.user_id)
        SessionEvent.objects.create(
            session=row,
            position=0 if row.last_position is None else row.last_position + 1,
            event_id=event.id,
            invocation_id=event.invocation_id or "",
            author=event.author or "",
            timestamp=event.timestamp,
            is_compaction=event.actions.compaction is not None,
            data=as_stored,
        )
        if deltas["session"]:
            row.state = {**row.state, **deltas["session"]}
        row.last_update_time = event.timestamp
        # Never back (LISTING_ORDER); a row not yet placed by the migration is placed now.
        placed = row.last_update_time if row.listed_at is None else row.listed_at
        row.listed_at = max(placed, event.timestamp)
        row.revision += 1
        row.event_count += 1
        row.save(
            update_fields=["state", "last_update_time", "listed_at", "revision", "event_count"]
        )

    _commit_to_session(session, event, row.last_update_time, revision_marker(row.id, row.revision))
    return event


def _commit_to_session(session: Session, event: Event, updated: float, marker: str) -> None:
    session.last_update_time = updated
    session._storage_update_marker = marker
    # As BaseSessionService._commit_event_to_session: every non-temp key, prefixed or not.
    session.state.update(event.actions.state_delta or {})
    session.events.append(event)
