"""ADK's ``BaseSessionService`` on our models, for ``Runner(session_service=...)``.

A thin async shell: every method runs the matching sync function of
``records.sessions`` (which the sweeper and commands call directly) in Django's
thread-sensitive executor, so ORM work never blocks the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, override

from asgiref.sync import sync_to_async
from django.db import connections
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from . import sessions


def _release_stale_connections() -> None:
    # What Django does around each request, for callers outside the request cycle
    # (an agent process running a Runner for hours): drop connections that broke or
    # outlived CONN_MAX_AGE. A connection inside a transaction is never touched.
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


# Idle seconds after which the next call checks its connection first (a `SELECT 1` with
# CONN_HEALTH_CHECKS). A Runner appends and reads in bursts: checking before every call
# would add a round trip to each, while a connection used a moment ago is alive, and a
# failed call is cleaned up straight after it.
HEALTH_CHECK_AFTER_IDLE = 1.0
_last_call_end = -HEALTH_CHECK_AFTER_IDLE  # monotonic; touched in the executor thread only


def _in_request_cycle[T](fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    global _last_call_end
    if time.monotonic() - _last_call_end >= HEALTH_CHECK_AFTER_IDLE:
        _release_stale_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        if any(c.errors_occurred for c in connections.all(initialized_only=True)):
            _release_stale_connections()
        _last_call_end = time.monotonic()


async def run_db[T](fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Await the sync ORM function ``fn`` in Django's thread-sensitive executor."""
    return await sync_to_async(partial(_in_request_cycle, fn), thread_sensitive=True)(
        *args, **kwargs
    )


class DjangoSessionService(BaseSessionService):
    """Sessions, events and app/user state in PostgreSQL or SQLite via the Django ORM.

    Stateless: any number of instances (in any number of processes) share the data.
    """

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        return await run_db(
            sessions.create_session,
            app_name=app_name,
            user_id=user_id,
            state=state,
            session_id=session_id,
            now=platform_time.get_time(),
        )

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        return await run_db(
            sessions.get_session,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            config=config,
        )

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await run_db(sessions.list_sessions, app_name=app_name, user_id=user_id)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await run_db(
            sessions.delete_session, app_name=app_name, user_id=user_id, session_id=session_id
        )

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await run_db(sessions.get_user_state, app_name=app_name, user_id=user_id)

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        return await run_db(sessions.append_event, session, event)
