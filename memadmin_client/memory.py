"""``RemoteMemoryService``: ADK's BaseMemoryService over memadmin's HTTP API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, override

from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session

from .http import RemoteService, segment, user_path
from .wire import dump_as_text, json_safe_state


class RemoteMemoryService(RemoteService, BaseMemoryService):
    """memadmin's evicting memory (rules, pins, caps, TTL), run by a memadmin server.

    Behaves as the in-process ``EvictingMemoryService``: idempotent ingest, search of
    unexpired records ranked by relevance (which counts as a use), deletes logged as
    manual evictions.
    """

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError("add_session_to_memory expects a google.adk Session")
        await self.client.request(
            "POST",
            f"{user_path(session.app_name, session.user_id)}/memory/sessions",
            json={"session": dump_as_text(session)},
            app_name=session.app_name,
            idempotent=True,  # ingest never duplicates a record
        )

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        events = list(events)
        for event in events:
            if not isinstance(event, Event):
                raise TypeError(
                    f"events must be google.adk Event objects, not {type(event).__name__}"
                )
        body: dict[str, Any] = {"events": [dump_as_text(e) for e in events]}
        if session_id is not None:
            body["sessionId"] = session_id
        await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/memory/events",
            json=body,
            app_name=app_name,
            idempotent=True,
        )

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memories = list(memories)
        for memory in memories:
            if not isinstance(memory, MemoryEntry):
                raise TypeError(
                    f"memories must be MemoryEntry objects, not {type(memory).__name__}"
                )
        body: dict[str, Any] = {"memories": [dump_as_text(m) for m in memories]}
        if custom_metadata is not None:
            body["customMetadata"] = json_safe_state(dict(custom_metadata))
        await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/memory/entries",
            json=body,
            # The server keeps one record per distinct entry (by id, or by text when
            # there is none): a retry stores nothing twice.
            app_name=app_name,
            idempotent=True,
        )

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        response = await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/memory/search",
            json={"query": query},
            app_name=app_name,
            idempotent=True,  # at worst a record is counted as used twice
        )
        return SearchMemoryResponse.model_validate(response.json())

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete the one record ``memory_id`` names; without an id nothing, as ADK's own
        services do (``delete_all_memories`` deletes every record of the user)."""
        if not memory_id:
            return
        if isinstance(memory_id, int) and not isinstance(memory_id, bool):
            if memory_id < 1:  # no record has it: nothing to delete, as in process
                return
            memory_id = str(memory_id)  # the int itself, as the in-process service takes
        path = f"{user_path(app_name, user_id)}/memory/{segment('memory_id', memory_id)}"
        await self.client.request("DELETE", path, app_name=app_name, idempotent=True)

    async def delete_all_memories(self, *, app_name: str, user_id: str) -> int:
        """Delete every memory record of the user (``DELETE …/memory``); how many went."""
        path = f"{user_path(app_name, user_id)}/memory"
        response = await self.client.request("DELETE", path, app_name=app_name, idempotent=True)
        return int(response.json()["deleted"])

    async def report_correction(
        self, *, app_name: str, user_id: str, session_id: str = "", about: str = ""
    ) -> bool:
        """Report that the user had to repeat something; True if it matches a record
        evicted recently (a sign the policy evicted something still wanted)."""
        response = await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/corrections",
            json={"sessionId": session_id, "about": about},
            app_name=app_name,
            idempotent=False,
        )
        return bool(response.json()["matchedEviction"])
