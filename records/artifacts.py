"""ADK artifacts on the ``Artifact`` model: the sync functions every caller shares.

``DjangoArtifactService`` (records.artifact_service) wraps these for ADK's async
interface; the sweeper calls them directly. Semantics follow ADK's in-memory service:

- A filename starting with ``user:`` is user-scoped: shared by all of the user's
  sessions and stored with an empty ``session_id``, whatever session is given. Any
  other filename is session-scoped and needs a session id.
- Versions count from 0; every save adds one. Deleting an artifact removes all of
  its versions, so the next save is version 0 again.
- Loading a missing artifact or version returns None (so does a rewind tombstone).
  A part whose ``file_data`` is an ``artifact://`` URI is a reference to another
  artifact of the same user and is followed on load.
- ``canonical_uri`` is ADK's ``artifact://`` URI of the version, so a part holding it
  as ``file_data`` is a reference that any ADK artifact service resolves.

Inline bytes are stored in ``Artifact.data``, the rest of the Part as JSON in
``Artifact.part``. Invalid input raises ADK's ``InputValidationError`` (a ValueError).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import Max
from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import ArtifactVersion, ensure_part
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.platform import time as platform_time
from google.genai import types
from pydantic_core import to_jsonable_python

from .ids import validate_app_name, validate_id
from .locks import acquire_user_lock
from .models import SESSION_ID_MAX, USER_ID_MAX, Artifact
from .storable import storable, storable_text

USER_NAMESPACE = "user:"
FILENAME_MAX = Artifact._meta.get_field("filename").max_length
MIME_TYPE_MAX = Artifact._meta.get_field("mime_type").max_length
# The session_id stored for user-scoped artifacts.
USER_SCOPE = ""

__all__ = [
    "delete_artifact",
    "delete_session_artifacts",
    "get_artifact_version",
    "list_artifact_keys",
    "list_artifact_versions",
    "list_versions",
    "load_artifact",
    "save_artifact",
    "session_artifact_keys",
]


# --- validation and scope ---------------------------------------------------------


def _check_owner(app_name: object, user_id: object) -> None:
    # Ours (type, blank, NUL, length), then ADK's (no path tricks in a URI segment).
    validate_app_name(app_name, error=InputValidationError)
    validate_id("user_id", user_id, USER_ID_MAX, error=InputValidationError)
    artifact_util.validate_path_segment(app_name, "app_name")
    artifact_util.validate_path_segment(user_id, "user_id")


def _check_session_id(session_id: object) -> str:
    validate_id("session_id", session_id, SESSION_ID_MAX, error=InputValidationError)
    artifact_util.validate_path_segment(session_id, "session_id")
    return session_id


def _check_filename(filename: object) -> str:
    validate_id("filename", filename, FILENAME_MAX, error=InputValidationError)
    if filename.startswith(USER_NAMESPACE) and not filename[len(USER_NAMESPACE) :].strip():
        raise InputValidationError(
            f"filename {filename!r} names no file after the 'user:' prefix; "
            "use e.g. 'user:profile.png'."
        )
    return filename


def _scope(app_name: str, user_id: str, filename: str, session_id: str | None) -> str:
    """The ``session_id`` the artifact is stored under ('' for user-scoped ones)."""
    _check_owner(app_name, user_id)
    _check_filename(filename)
    if filename.startswith(USER_NAMESPACE):
        return USER_SCOPE
    if session_id is None:
        raise InputValidationError(
            f"Session ID must be provided for session-scoped artifacts: {filename!r} has no "
            f"'user:' prefix, so it belongs to one session. Pass session_id, or name it "
            f"'user:{filename}' to share it across the user's sessions."
        )
    return _check_session_id(session_id)


def _canonical_uri(app_name: str, user_id: str, filename: str, scope: str, version: int) -> str:
    return artifact_util.get_artifact_uri(
        app_name=app_name,
        user_id=user_id,
        filename=filename,
        version=version,
        session_id=scope or None,
    )


def _mime_type(part: types.Part, app_name: str, user_id: str, session_id: str | None) -> str:
    """The version's MIME type as ADK's in-memory service records it ('' = none)."""
    if part.inline_data is not None:
        return part.inline_data.mime_type or ""
    if part.text is not None:
        return "text/plain"
    if part.file_data is not None:
        if artifact_util.is_artifact_ref(part):
            parsed = artifact_util.parse_artifact_uri(part.file_data.file_uri)
            if not parsed:
                raise InputValidationError(
                    f"Invalid artifact reference URI: {part.file_data.file_uri}"
                )
            artifact_util.validate_artifact_reference_scope(
                app_name=app_name, user_id=user_id, session_id=session_id, parsed_uri=parsed
            )
            return ""  # known only once the reference is loaded
        return part.file_data.mime_type or ""
    raise InputValidationError(
        "Not supported artifact type: an artifact must be a Part with inline_data, text "
        "or file_data."
    )


def _split_part(part: types.Part) -> tuple[dict[str, Any], bytes | None]:
    """(the Part as JSON without its inline bytes, the inline bytes)."""
    if part.inline_data is None or part.inline_data.data is None:
        return storable(part.model_dump(mode="json", exclude_none=True), what="an artifact"), None
    blob = part.inline_data.model_copy(update={"data": None})
    rest = part.model_copy(update={"inline_data": blob})
    return (
        storable(rest.model_dump(mode="json", exclude_none=True), what="an artifact"),
        bytes(part.inline_data.data),
    )


def _part_of(row: Artifact) -> types.Part:
    part = types.Part.model_validate(row.part)
    if row.data is not None and part.inline_data is not None:
        part.inline_data.data = bytes(row.data)
    return part


def _json_metadata(custom_metadata: dict[str, Any] | None) -> dict[str, Any]:
    if custom_metadata is None:
        return {}
    if not isinstance(custom_metadata, dict):
        raise InputValidationError(
            f"custom_metadata must be a dict, not {type(custom_metadata).__name__}."
        )
    try:
        return storable(to_jsonable_python(copy.deepcopy(custom_metadata)), what="metadata")
    except Exception as exc:  # pydantic_core raises its own serialisation errors
        raise InputValidationError(
            f"custom_metadata must be JSON-serialisable (strings, numbers, lists, dicts, "
            f"datetimes): {exc}"
        ) from exc


def _versions(app_name: str, user_id: str, scope: str, filename: str):
    return Artifact.objects.filter(
        app_name=app_name, user_id=user_id, session_id=scope, filename=filename
    )


def _version_row(
    app_name: str,
    user_id: str,
    scope: str,
    filename: str,
    version: int | None,
    *,
    with_content: bool = True,
) -> Artifact | None:
    rows = _versions(app_name, user_id, scope, filename)
    if not with_content:
        rows = rows.defer("data", "part")
    if version is None:
        return rows.order_by("-version").first()
    if version < 0:
        return None
    return rows.filter(version=version).first()


def _artifact_version(row: Artifact) -> ArtifactVersion:
    return ArtifactVersion(
        version=row.version,
        canonical_uri=_canonical_uri(
            row.app_name, row.user_id, row.filename, row.session_id, row.version
        ),
        custom_metadata=row.custom_metadata,
        create_time=row.created_at.timestamp(),
        mime_type=row.mime_type or None,
    )


# --- the ADK operations -------------------------------------------------------------


def save_artifact(
    *,
    app_name: str,
    user_id: str,
    filename: str,
    artifact: types.Part | dict[str, Any],
    session_id: str | None = None,
    custom_metadata: dict[str, Any] | None = None,
    now: float | None = None,
) -> int:
    """Store a new version of the artifact and return its number (the first is 0)."""
    scope = _scope(app_name, user_id, filename, session_id)
    part = ensure_part(artifact)
    # NUL and lone surrogates become U+FFFD, on both databases (records.storable).
    mime_type = storable_text(_mime_type(part, app_name, user_id, session_id))
    if len(mime_type) > MIME_TYPE_MAX:
        raise InputValidationError(
            f"mime_type is {len(mime_type)} characters long; at most {MIME_TYPE_MAX} are allowed."
        )
    part_json, data = _split_part(part)
    metadata = _json_metadata(custom_metadata)
    now = platform_time.get_time() if now is None else now

    # Under the user's lock the next version number cannot be taken by anyone else;
    # the unique constraint is the backstop for writers that skip the lock.
    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        last = _versions(app_name, user_id, scope, filename).aggregate(v=Max("version"))["v"]
        version = 0 if last is None else last + 1
        Artifact.objects.create(
            app_name=app_name,
            user_id=user_id,
            session_id=scope,
            filename=filename,
            version=version,
            part=part_json,
            data=data,
            mime_type=mime_type,
            custom_metadata=metadata,
            created_at=datetime.fromtimestamp(now, UTC),
        )
    return version


def load_artifact(
    *,
    app_name: str,
    user_id: str,
    filename: str,
    session_id: str | None = None,
    version: int | None = None,
) -> types.Part | None:
    """The artifact's Part at ``version`` (latest if None), or None if there is none."""
    # ADK bounds reference chains so a cycle cannot recurse forever.
    depth = artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH
    while True:
        scope = _scope(app_name, user_id, filename, session_id)
        row = _version_row(app_name, user_id, scope, filename, version)
        if row is None:
            return None
        part = _part_of(row)
        if not artifact_util.is_artifact_ref(part):
            break
        target = artifact_util.resolve_artifact_reference(
            file_uri=part.file_data.file_uri,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            remaining_depth=depth,
        )
        app_name, user_id, session_id = target.app_name, target.user_id, target.session_id
        filename, version, depth = target.filename, target.version, depth - 1
    if part == types.Part() or artifact_util._is_rewind_tombstone(part):
        return None
    return part


def list_artifact_keys(*, app_name: str, user_id: str, session_id: str | None = None) -> list[str]:
    """Sorted filenames readable in this scope: the session's and the user's (``user:...``).

    Without a session id, only the user-scoped ones.
    """
    _check_owner(app_name, user_id)
    scopes = [USER_SCOPE]
    if session_id is not None:
        scopes.append(_check_session_id(session_id))
    return _sorted_filenames(
        Artifact.objects.filter(app_name=app_name, user_id=user_id, session_id__in=scopes)
    )


def _sorted_filenames(rows) -> list[str]:
    # Sorted by Python, as ADK's services sort them (by code point): the database's
    # order follows its collation ("B.txt" after "a.txt" under en-US, before it in C).
    return sorted(rows.order_by().values_list("filename", flat=True).distinct())


def delete_artifact(
    *, app_name: str, user_id: str, filename: str, session_id: str | None = None
) -> int:
    """Delete every version of the artifact; returns how many versions there were."""
    scope = _scope(app_name, user_id, filename, session_id)
    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        deleted, _ = _versions(app_name, user_id, scope, filename).delete()
    return deleted


def list_versions(
    *, app_name: str, user_id: str, filename: str, session_id: str | None = None
) -> list[int]:
    scope = _scope(app_name, user_id, filename, session_id)
    return list(
        _versions(app_name, user_id, scope, filename)
        .order_by("version")
        .values_list("version", flat=True)
    )


def list_artifact_versions(
    *, app_name: str, user_id: str, filename: str, session_id: str | None = None
) -> list[ArtifactVersion]:
    scope = _scope(app_name, user_id, filename, session_id)
    rows = _versions(app_name, user_id, scope, filename).defer("data", "part").order_by("version")
    return [_artifact_version(row) for row in rows]


def get_artifact_version(
    *,
    app_name: str,
    user_id: str,
    filename: str,
    session_id: str | None = None,
    version: int | None = None,
) -> ArtifactVersion | None:
    scope = _scope(app_name, user_id, filename, session_id)
    row = _version_row(app_name, user_id, scope, filename, version, with_content=False)
    return None if row is None else _artifact_version(row)


# --- for retiring a session (not part of ADK's interface) --------------------------


def session_artifact_keys(*, app_name: str, user_id: str, session_id: str) -> list[str]:
    """Sorted filenames scoped to this one session (user-scoped ones are not its own)."""
    _check_owner(app_name, user_id)
    _check_session_id(session_id)
    return _sorted_filenames(
        Artifact.objects.filter(app_name=app_name, user_id=user_id, session_id=session_id)
    )


def delete_session_artifacts(*, app_name: str, user_id: str, session_id: str) -> int:
    """Delete every version of every artifact scoped to this session; returns the count.

    User-scoped (``user:``) artifacts are kept: they belong to the user, not to the
    session, even though ``list_artifact_keys(session_id=...)`` lists them too.
    """
    _check_owner(app_name, user_id)
    _check_session_id(session_id)
    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        deleted, _ = Artifact.objects.filter(
            app_name=app_name, user_id=user_id, session_id=session_id
        ).delete()
    return deleted
