"""ADK objects to and from the API's JSON (ADK's own: camelCase, bytes as base64)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events.event import Event
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
