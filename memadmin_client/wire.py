"""ADK objects to and from the API's JSON (ADK's own: camelCase, bytes as base64)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

# Bounds of the API's query numbers (api.routes), shared with it. A number beyond one asks
# for no more than the bound does, so the client sends the bound instead.
# Far beyond any real session, small enough for every database's OFFSET:
MAX_RECENT_EVENTS = 1_000_000_000
MAX_ARTIFACT_VERSION = 2**31 - 1  # an artifact version column's range


def dump(model: BaseModel, *, fallback: Callable[[Any], Any] | None = None) -> Any:
    """``model`` as ADK's JSON; ``fallback``: what a value pydantic cannot dump becomes
    (memory payloads take its ``str``, as the in-process service keeps it)."""
    options: dict[str, Any] = {"by_alias": True, "exclude_none": True, "fallback": fallback}
    try:
        return json.loads(model.model_dump_json(**options))
    except PydanticSerializationError:
        # A lone surrogate ("\ud800"), which no UTF-8 text holds: the same data, the
        # way the in-process services dump an event; ``json_body`` sends it as a JSON
        # escape, which the server stores as U+FFFD, as in process (records.storable).
        # Anything else pydantic cannot dump fails here again.
        return model.model_dump(mode="json", **options)


def json_body(data: Any) -> bytes:
    """A request body: UTF-8 JSON, with a lone surrogate written as its ``\\ud800``
    escape (which JSON allows and UTF-8 cannot encode)."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("ascii")


def dump_as_text(model: BaseModel) -> Any:
    """``dump`` with a value JSON cannot hold as its text (``records.extract``'s rule for
    what memory keeps). One no JSON holds at all (circular) is still a ValueError."""
    return dump(model, fallback=str)


def session_from(data: dict[str, Any]) -> Session:
    """A Session from the API, carrying the storage revision it was read at."""
    data = dict(data)
    revision = data.pop("revision", None)
    session = Session.model_validate(data)
    session._storage_update_marker = revision
    return session


def json_safe_state(state: dict[str, Any]) -> dict[str, Any]:
    """State as JSON: rich values as pydantic dumps them, the rest by their str()."""
    return to_jsonable_python(state, fallback=str)


def json_metadata(metadata: dict[str, Any]) -> Any:
    """An artifact's custom_metadata as JSON, as the in-process service converts it
    (datetimes and other pydantic-known values dumped); for anything else ADK's
    InputValidationError (a ValueError), as the in-process service raises."""
    try:
        return to_jsonable_python(metadata)
    except Exception as exc:  # pydantic_core raises its own serialisation errors
        raise InputValidationError(
            "custom_metadata must be JSON-serialisable (strings, numbers, lists, dicts, "
            f"datetimes): {exc}"
        ) from exc


BYTES = (bytes, bytearray, memoryview)


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _unstorable(value: Any) -> str | None:
    """What in ``value`` no stored state can keep, or None."""
    if isinstance(value, BYTES):
        return "bytes, which JSON has not: store text (base64, say) or save an artifact"
    if isinstance(value, dict):
        for key, inner in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}, which is not text: JSON keys are strings"
            if not _is_text(key):
                return f"the key {key!r} with a lone surrogate, which no stored text holds"
            problem = _unstorable(inner)
            if problem:
                return problem
    elif isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            problem = _unstorable(inner)
            if problem:
                return problem
    return None


def check_storable_state(state: dict[str, Any], what: str = "state") -> None:
    """Refuse (ValueError, naming the key) state that no store keeps as given: bytes,
    anywhere in a value (ADK's database service stores UTF-8 bytes as text and fails on
    others; JSON has no bytes), and keys holding a lone surrogate (ADK's serialiser fails
    on them with a codec error). ``temp:`` keys are never stored and pass. The one place
    for the rule: the in-process services (hence the server) and this client use it."""
    for key, value in state.items():
        if not isinstance(key, str):
            raise ValueError(f"{what} key {key!r} is not text: state keys are strings.")
        if key.startswith(State.TEMP_PREFIX):
            continue
        if not _is_text(key):
            raise ValueError(
                f"{what} key {key!r} holds a lone surrogate (invalid Unicode), which no "
                "stored text holds; use a valid Unicode key."
            )
        problem = _unstorable(value)
        if problem:
            raise ValueError(f"{what} key {key!r} holds {problem}.")


def check_session_config(config: GetSessionConfig | None) -> None:
    """Refuse (ValueError) a ``get_session`` filter no service answers sensibly: an
    ``after_timestamp`` that is not a finite number (NaN compares false with every time:
    PostgreSQL returned no event and SQLite every one; ADK's database service raises a
    ValueError or an OverflowError), or a negative ``num_recent_events`` (ADK's config
    refuses one; one built without validation may hold it). The one place for the rule:
    the in-process services (hence the server) and this client use it."""
    if config is None:
        return
    recent = config.num_recent_events
    if recent is not None and recent < 0:
        raise ValueError(f"num_recent_events must be 0 or more, not {recent}.")
    after = config.after_timestamp
    if after is not None and not math.isfinite(after):
        raise ValueError(
            f"after_timestamp must be a finite number of seconds since the epoch, not {after}."
        )


def without_temp_keys(delta: dict[str, Any]) -> dict[str, Any]:
    """A state delta as it is stored: ``temp:`` keys are never kept (the same dict when
    it has none). The one place for the rule: the server and this client both use it."""
    if not any(k.startswith(State.TEMP_PREFIX) for k in delta):
        return delta
    return {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}


def without_temp_state(event: Event) -> Event:
    """A copy of ``event`` whose state delta has no ``temp:`` keys (never stored)."""
    delta = event.actions.state_delta if event.actions else None
    kept = without_temp_keys(delta) if delta else delta
    if kept is delta:
        return event
    copy = event.model_copy(deep=True)
    copy.actions.state_delta = kept
    return copy
