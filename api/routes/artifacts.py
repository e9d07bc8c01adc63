"""Artifacts: what ``DjangoArtifactService`` does in-process, over HTTP.

A filename may hold any character, '/' included. Each operation on one artifact has two
routes: the filename in a query parameter (``artifact?filename=``), which reaches any
filename exactly, and the filename ending the path (``artifacts/{filename}``), kept for
ordinary names: a path is normalised on its way (``a//b``, ``./a``, ``../a`` or ``dir/``
may arrive as another name, by the client's URL handling or a proxy's).
"""

from __future__ import annotations

from typing import Annotated

from django.urls import register_converter
from django.urls.converters import StringConverter
from django.utils import timezone
from google.genai import types
from ninja import Path, Query, Router, Status

from memadmin_client.wire import MAX_ARTIFACT_VERSION
from records import artifacts
from records.artifacts import FILENAME_MAX

from ..errors import ApiError
from ..schemas import (
    ArtifactKeysOut,
    ArtifactSavedOut,
    ArtifactVersionsOut,
    DeletedOut,
    SaveArtifactIn,
)
from . import ERRORS, NOT_FOUND, AppName, UserId, adk_json


class AnyPathConverter(StringConverter):
    """The rest of the path, whatever it holds ('/', even a newline: Django's own
    ``path`` converter stops at one, and the filename would be unaddressable)."""

    regex = r"[\s\S]+"


register_converter(AnyPathConverter, "anypath")

router = Router(tags=["artifacts"])

Filename = Annotated[str, Path(min_length=1, max_length=FILENAME_MAX)]
FilenameQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=FILENAME_MAX,
        description="The artifact's filename, exactly as saved (any characters).",
    ),
]
SessionQuery = Query(None, description="Needed for session-scoped (non 'user:') filenames.")
VersionQuery = Query(
    None,
    ge=-MAX_ARTIFACT_VERSION,
    le=MAX_ARTIFACT_VERSION,
    description="Latest if absent; a version that does not exist (negative ones "
    "included, as in ADK) is a 404.",
)


@router.post(
    "/artifacts",
    response={201: ArtifactSavedOut, **ERRORS},
    by_alias=True,
    summary="Save a new version of an artifact (save_artifact)",
)
def save_artifact(request, app_name: AppName, user_id: UserId, body: SaveArtifactIn):
    """Versions count from 0. A filename starting with ``user:`` is shared by the user's
    sessions; any other needs a ``sessionId``. Inline bytes are base64 in JSON."""
    version = artifacts.save_artifact(
        app_name=app_name,
        user_id=user_id,
        filename=body.filename,
        artifact=body.artifact,
        session_id=body.session_id,
        custom_metadata=body.custom_metadata,
        now=timezone.now().timestamp(),
    )
    return Status(201, ArtifactSavedOut(version=version))


@router.get(
    "/artifacts",
    response={200: ArtifactKeysOut, **ERRORS},
    by_alias=True,
    summary="List artifact filenames (list_artifact_keys)",
)
def list_artifact_keys(
    request, app_name: AppName, user_id: UserId, session_id: str | None = SessionQuery
):
    """The session's and the user's filenames; without ``session_id`` the user's only."""
    return ArtifactKeysOut(
        filenames=artifacts.list_artifact_keys(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
    )


def _load(app_name: str, user_id: str, filename: str, session_id, version):
    part = artifacts.load_artifact(
        app_name=app_name,
        user_id=user_id,
        filename=filename,
        session_id=session_id,
        version=version,
    )
    if part is None:
        which = "latest version" if version is None else f"version {version}"
        raise ApiError(404, "artifact_not_found", f"Artifact {filename!r} has no {which}.")
    return adk_json(part)


def _versions(app_name: str, user_id: str, filename: str, session_id):
    versions = artifacts.list_artifact_versions(
        app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
    )
    return adk_json(ArtifactVersionsOut(versions=versions))


def _delete(app_name: str, user_id: str, filename: str, session_id):
    deleted = artifacts.delete_artifact(
        app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
    )
    return DeletedOut(deleted=deleted)


LOAD = {"response": {200: types.Part, **ERRORS, **NOT_FOUND}, "by_alias": True}
VERSIONS = {"response": {200: ArtifactVersionsOut, **ERRORS}, "by_alias": True}
DELETE = {"response": {200: DeletedOut, **ERRORS}, "by_alias": True}


@router.get("/artifact", **LOAD, summary="Load an artifact, any filename (load_artifact)")
def load_artifact_by_query(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: FilenameQuery,
    session_id: str | None = SessionQuery,
    version: int | None = VersionQuery,
):
    """The artifact's ``Part`` (404 ``artifact_not_found`` if there is none)."""
    return _load(app_name, user_id, filename, session_id, version)


@router.get(
    "/artifact-versions",
    **VERSIONS,
    summary="List an artifact's versions, any filename (list_artifact_versions)",
)
def list_artifact_versions_by_query(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: FilenameQuery,
    session_id: str | None = SessionQuery,
):
    """Oldest first; empty when the artifact does not exist."""
    return _versions(app_name, user_id, filename, session_id)


@router.delete("/artifact", **DELETE, summary="Delete an artifact, any filename (delete_artifact)")
def delete_artifact_by_query(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: FilenameQuery,
    session_id: str | None = SessionQuery,
):
    """Every version of it; answers how many there were."""
    return _delete(app_name, user_id, filename, session_id)


# The same with the filename ending the path, for names a URL path carries unchanged
# (see the module's doc).


@router.get("/artifacts/{anypath:filename}", **LOAD, summary="Load an artifact (load_artifact)")
def load_artifact(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: Filename,
    session_id: str | None = SessionQuery,
    version: int | None = VersionQuery,
):
    """The artifact's ``Part`` (404 ``artifact_not_found`` if there is none)."""
    return _load(app_name, user_id, filename, session_id, version)


@router.get(
    "/artifact-versions/{anypath:filename}",
    **VERSIONS,
    summary="List an artifact's versions with metadata (list_artifact_versions)",
)
def list_artifact_versions(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: Filename,
    session_id: str | None = SessionQuery,
):
    """Oldest first; empty when the artifact does not exist."""
    return _versions(app_name, user_id, filename, session_id)


@router.delete(
    "/artifacts/{anypath:filename}",
    **DELETE,
    summary="Delete every version of an artifact (delete_artifact)",
)
def delete_artifact(
    request,
    app_name: AppName,
    user_id: UserId,
    filename: Filename,
    session_id: str | None = SessionQuery,
):
    return _delete(app_name, user_id, filename, session_id)
