"""``RemoteArtifactService``: ADK's BaseArtifactService over memadmin's HTTP API."""

from __future__ import annotations

from typing import Any, override

from google.adk.artifacts.base_artifact_service import (
    ArtifactVersion,
    BaseArtifactService,
    ensure_part,
)
from google.genai import types

from .errors import is_absent
from .http import RemoteService, filename_param, user_path
from .wire import MAX_ARTIFACT_VERSION, dump, json_metadata


class RemoteArtifactService(RemoteService, BaseArtifactService):
    """Versioned artifacts kept by a memadmin server (as ``DjangoArtifactService``)."""

    @override
    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        body: dict[str, Any] = {"filename": filename, "artifact": dump(ensure_part(artifact))}
        if session_id is not None:
            body["sessionId"] = session_id
        if custom_metadata is not None:
            body["customMetadata"] = json_metadata(custom_metadata)
        response = await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/artifacts",
            json=body,
            app_name=app_name,
            idempotent=False,  # every save is a new version
        )
        return response.json()["version"]

    @override
    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        if isinstance(version, int) and abs(version) > MAX_ARTIFACT_VERSION:
            # No version is ever stored beyond the bound, nor at it: asked for the bound,
            # the server answers None as in process, after checking the scope as it does.
            version = MAX_ARTIFACT_VERSION if version > 0 else -MAX_ARTIFACT_VERSION
        response = await self.client.request(
            "GET",
            f"{user_path(app_name, user_id)}/artifact",
            params={
                "filename": filename_param(filename),
                "session_id": session_id,
                "version": version,
            },
            app_name=app_name,
            idempotent=True,
            allow=frozenset({404}),
        )
        if is_absent(response, "artifact_not_found"):
            return None
        return types.Part.model_validate(response.json())

    @override
    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        response = await self.client.request(
            "GET",
            f"{user_path(app_name, user_id)}/artifacts",
            params={"session_id": session_id},
            app_name=app_name,
            idempotent=True,
        )
        return response.json()["filenames"]

    @override
    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        await self.client.request(
            "DELETE",
            f"{user_path(app_name, user_id)}/artifact",
            params={"filename": filename_param(filename), "session_id": session_id},
            app_name=app_name,
            idempotent=True,
        )

    @override
    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        response = await self.client.request(
            "GET",
            f"{user_path(app_name, user_id)}/artifact-versions",
            params={"filename": filename_param(filename), "session_id": session_id},
            app_name=app_name,
            idempotent=True,
        )
        return [ArtifactVersion.model_validate(v) for v in response.json()["versions"]]

    @override
    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        versions = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        return [v.version for v in versions]

    @override
    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        versions = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        if version is None:
            return versions[-1] if versions else None
        return next((v for v in versions if v.version == version), None)
