"""The API's wire schemas: they validate requests and generate the OpenAPI document.

ADK objects travel as ADK's own JSON (``model_dump(mode="json", by_alias=True)``:
camelCase keys, bytes as base64, as ADK's api_server speaks). Requests are validated
twice by the same schemas: first the JSON against the OpenAPI document generated from
them (``api.validation``: exact JSON types, no coercion), then by the pydantic models
themselves, which are ADK's own, made strict where ADK's are lenient (``Event`` and
``MemoryEntry`` ignore unknown fields; here an unknown field is an error, so a typo is
not silently dropped). Our own envelopes use the same camelCase convention.
"""

from __future__ import annotations

from typing import Annotated, Any

from google.adk.artifacts.base_artifact_service import ArtifactVersion
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from records.artifacts import FILENAME_MAX
from records.models import SESSION_ID_MAX

from .openapi import ID_RULE, NO_NUL_RULE

# A session's marker (records.sessions.revision_marker): two bigints and a dot.
REVISION_MAX = 39


def _id(max_length: int, **kwargs: Any) -> Any:
    """An id field: some non-blank character, no NUL, at most ``max_length`` characters
    (records.ids.validate_id, stated in the document)."""
    return Field(min_length=1, max_length=max_length, json_schema_extra=ID_RULE, **kwargs)


def _no_nul(max_length: int, **kwargs: Any) -> Any:
    """Any text but NUL (memory's session ids: blank means "no session")."""
    return Field(max_length=max_length, json_schema_extra=NO_NUL_RULE, **kwargs)


class Wire(BaseModel):
    """Our envelopes: camelCase on the wire (snake_case accepted), no unknown fields, and
    strict types (``false`` is not a number, ``"5"`` is not an integer)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, strict=True
    )


# --- ADK payloads, strict --------------------------------------------------------------


class EventIn(Event):
    """An ADK ``Event`` as JSON (ADK's own fields; unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")


class SessionIn(Session):
    """An ADK ``Session`` as JSON, with its events."""

    events: list[EventIn] = Field(default_factory=list)
    revision: Annotated[str, Field(max_length=REVISION_MAX)] | None = Field(
        default=None, description="Ignored; accepted so a session read from the API can be sent."
    )


class MemoryEntryIn(MemoryEntry):
    """An ADK ``MemoryEntry`` as JSON (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")


class SessionOut(Session):
    """An ADK ``Session`` plus the storage revision it was read at.

    Send ``revision`` back with every append: an append from an older revision is
    refused as stale (409, ``stale_session``), as ADK's own database service does.
    """

    revision: str = Field(
        description="Storage revision this session object reflects, as an opaque string "
        "(it names the stored session and its count of appends)."
    )

    @classmethod
    def of(cls, session: Session) -> SessionOut:
        fields = {name: getattr(session, name) for name in Session.model_fields}
        return cls.model_construct(**fields, revision=session._storage_update_marker or "0")


# --- errors ----------------------------------------------------------------------------


class ErrorOut(BaseModel):
    detail: str = Field(description="What was wrong, for people.")
    code: str = Field(description="What was wrong, for programs (e.g. stale_session).")
    errors: list[dict[str, Any]] | None = Field(
        default=None, description="Each invalid field, for request validation errors."
    )


# --- memory ----------------------------------------------------------------------------


class IngestSessionIn(Wire):
    session: SessionIn


class IngestEventsIn(Wire):
    events: list[EventIn]
    session_id: Annotated[str, _no_nul(SESSION_ID_MAX)] | None = None


class AddMemoriesIn(Wire):
    memories: list[MemoryEntryIn]
    custom_metadata: dict[str, Any] | None = Field(
        default=None,
        description="May set 'importance' (0..1) and 'pinned' (true/false) for every entry.",
    )


class IngestOut(Wire):
    candidates: int = Field(description="Texts found (small talk already dropped).")
    added: int = Field(description="New records stored.")
    duplicates: int = Field(description="Already stored (ingest is idempotent).")
    previously_evicted: int = Field(description="Evicted before; not brought back.")
    refreshed: int = Field(
        default=0,
        description="Entries that were already this user's records (an id search returned, "
        "with its text; or no id and the same text): each record counts one access instead "
        "of being stored again.",
    )
    evicted: int = Field(description="Records the policy evicted after this write.")

    @classmethod
    def of(cls, result) -> IngestOut:
        """The counts of a ``records.store.IngestResult``."""
        return cls(
            candidates=result.candidates,
            added=result.added,
            duplicates=result.duplicates,
            previously_evicted=result.previously_evicted,
            refreshed=result.refreshed,
            evicted=len(result.evicted),
        )


class SearchIn(Wire):
    query: str


class SearchOut(BaseModel):
    memories: list[MemoryEntry]


class DeletedOut(Wire):
    deleted: int


# --- sessions --------------------------------------------------------------------------


class CreateSessionIn(Wire):
    session_id: Annotated[str, _id(SESSION_ID_MAX)] | None = Field(
        default=None, description="Generated when absent."
    )
    state: dict[str, Any] | None = None


class SessionListOut(BaseModel):
    """One page of a listing, oldest ``lastUpdateTime`` first."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    sessions: list[SessionOut]
    next_cursor: str | None = Field(
        default=None,
        description="Absent on the last page. Otherwise pass it as `cursor` to get the next "
        "page; keep following it to list every session.",
    )


class AppendEventIn(Wire):
    event: EventIn
    revision: Annotated[str, Field(max_length=REVISION_MAX)] | None = Field(
        default=None, description="The session's revision as last read (SessionOut.revision)."
    )
    last_update_time: float | None = Field(
        default=None,
        description="Only for session objects not read from memadmin (no revision): "
        "their lastUpdateTime, judged as ADK's database service judges them.",
    )
    last_event_id: str | None = Field(
        default=None, description="Only without a revision: the id of the session's last event."
    )


class AppendEventOut(Wire):
    event: Event
    revision: str | None = Field(
        default=None,
        description="The session's revision after this append. Null for a re-delivery "
        "the caller's session object should not take (leave it as it is).",
    )
    last_update_time: float | None = None
    stored: bool = Field(description="False for an equal re-delivery, which is not stored again.")


class SessionDeletedOut(Wire):
    deleted: bool


class UserStateOut(Wire):
    state: dict[str, Any]


# --- artifacts -------------------------------------------------------------------------


class SaveArtifactIn(Wire):
    filename: Annotated[str, _id(FILENAME_MAX)]
    artifact: types.Part
    session_id: Annotated[str, _id(SESSION_ID_MAX)] | None = None
    custom_metadata: dict[str, Any] | None = None


class ArtifactSavedOut(Wire):
    version: int


class ArtifactKeysOut(Wire):
    filenames: list[str]


class ArtifactVersionsOut(BaseModel):
    versions: list[ArtifactVersion]


# --- corrections -----------------------------------------------------------------------


class CorrectionIn(Wire):
    session_id: Annotated[str, _no_nul(SESSION_ID_MAX)] = ""
    about: str = Field(
        default="",
        description="A few words on what was forgotten; matched against recent evictions, "
        "never stored.",
    )


class CorrectionOut(Wire):
    matched_eviction: bool
