"""ADK's ``BaseArtifactService`` on the ``Artifact`` model, for ``Runner(artifact_service=...)``.

A thin async shell over ``records.artifacts`` (which the sweeper calls directly).
"""

from __future__ import annotations

from typing import Any, override

from google.adk.artifacts.base_artifact_service import ArtifactVersion, BaseArtifactService
from google.adk.platform import time as platform_time
from google.genai import types

from . import artifacts
from .session_service import run_db


class DjangoArtifactService(BaseArtifactService):
    """Versioned artifacts in PostgreSQL or SQLite via the Django ORM.

    Stateless: any number of instances (in any number of processes) share the data.
    """

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
        return await run_db(
            artifacts.save_artifact,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            artifact=artifact,
            session_id=session_id,
            custom_metadata=custom_metadata,
            now=platform_time.get_time(),
        )

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
        return await run_db(
            artifacts.load_artifact,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
            version=version,
        )

    @override
    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        return await run_db(
            artifacts.list_artifact_keys, app_name=app_name, user_id=user_id, session_id=session_id
        )

    @override
    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        await run_db(
            artifacts.delete_artifact,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
        )

    @override
    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        return await run_db(
            artifacts.list_versions,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
        )

    @override
    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        return await run_db(
            artifacts.list_artifact_versions,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
        )

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
        return await run_db(
            artifacts.get_artifact_version,
            app_name=app_name,
            user_id=user_id,
            filename=filename,
            session_id=session_id,
            version=version,
        )
