"""``RemoteSessionService``: ADK's BaseSessionService over memadmin's HTTP API."""

from __future__ import annotations

from typing import Any, override

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from .errors import is_absent
from .http import RemoteService, segment, session_path, user_path
from .wire import (
    MAX_RECENT_EVENTS,
    check_session_config,
    check_storable_state,
    dump,
    json_safe_state,
    session_from,
    without_temp_state,
)

# Sessions per request when listing (the server's largest page).
PAGE_SIZE = 1_000


def _stripped(session_id: object) -> object:
    # ADK's services ignore surrounding whitespace in a session id; so does memadmin.
    return session_id.strip() if isinstance(session_id, str) else session_id


class RemoteSessionService(RemoteService, BaseSessionService):
    """Sessions, events and state kept by a memadmin server.

    Behaves as memadmin's in-process ``DjangoSessionService``: the same state prefixes,
    idempotent appends and stale-session detection (each session carries the revision
    it was read at; appending from an older one raises ADK's ``StaleSessionError``).
    """

    page_size = PAGE_SIZE  # sessions per request when listing

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        body: dict[str, Any] = {}
        if state is not None:
            if not isinstance(state, dict):
                raise ValueError(
                    f"state must be a dict of key -> value, not {type(state).__name__}."
                )
            check_storable_state(state, "session state")
            body["state"] = json_safe_state(state)
        if session_id is not None:
            body["sessionId"] = session_id
        # Not retried once sent: after a lost answer a retry would be refused as taken.
        response = await self.client.request(
            "POST",
            f"{user_path(app_name, user_id)}/sessions",
            json=body,
            app_name=app_name,
            idempotent=False,
        )
        return session_from(response.json())

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        check_session_config(config)
        params = {}
        if config is not None:
            recent = config.num_recent_events
            if isinstance(recent, int) and recent > MAX_RECENT_EVENTS:  # "all", as said
                recent = MAX_RECENT_EVENTS
            params = {"num_recent_events": recent, "after_timestamp": config.after_timestamp}
        path = session_path(app_name, user_id, _stripped(session_id))
        response = await self.client.request(
            "GET", path, params=params, app_name=app_name, idempotent=True, allow=frozenset({404})
        )
        if is_absent(response, "session_not_found"):
            return None
        return session_from(response.json())

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        if user_id is None:
            path = f"/apps/{segment('app_name', app_name)}/sessions"
        else:
            path = f"{user_path(app_name, user_id)}/sessions"
        # The server answers a page at a time; ADK's interface returns the whole list, so
        # follow the cursor to the end. A session updated meanwhile comes again, later in
        # the order: the later copy wins, at its later place.
        listed: dict[tuple[str, str], Session] = {}
        params: dict[str, Any] = {"limit": self.page_size}
        while True:
            page = (
                await self.client.request(
                    "GET", path, params=params, app_name=app_name, idempotent=True
                )
            ).json()
            for item in page["sessions"]:
                session = session_from(item)
                listed.pop((session.user_id, session.id), None)
                listed[(session.user_id, session.id)] = session
            if not page.get("nextCursor"):
                return ListSessionsResponse(sessions=list(listed.values()))
            params["cursor"] = page["nextCursor"]

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        path = session_path(app_name, user_id, _stripped(session_id))
        await self.client.request("DELETE", path, app_name=app_name, idempotent=True)

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        response = await self.client.request(
            "GET", f"{user_path(app_name, user_id)}/state", app_name=app_name, idempotent=True
        )
        return response.json()["state"]

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        check_storable_state(event.actions.state_delta or {}, "state delta")
        body: dict[str, Any] = {
            # Sent without temp: keys, as it will be stored, so that a retry is an equal
            # re-delivery the server recognises (it never stores an event twice).
            "event": dump(without_temp_state(event)),
            "revision": session._storage_update_marker,
        }
        if session._storage_update_marker is None:  # a session object not read from us
            body["lastUpdateTime"] = session.last_update_time
            if session.events:
                body["lastEventId"] = session.events[-1].id
        path = session_path(session.app_name, session.user_id, session.id) + "/events"
        try:
            response = await self.client.request(
                "POST", path, json=body, app_name=session.app_name, idempotent=True
            )
        except (StaleSessionError, SessionNotFoundError):
            # As in process (and ADK's database service): temp state reaches the session
            # object even when the append is refused (no session, or a stale one).
            self._apply_temp_state(session, event)
            self._trim_temp_delta_state(event)
            raise
        answer = response.json()
        if answer.get("revision") is None:
            # A re-delivery of a stored event this session object should not take.
            return event
        # As ADK's base service: temp state for the rest of the invocation, the rest of
        # the delta into the session's state, the event appended.
        event = await super().append_event(session, event)
        session.last_update_time = answer["lastUpdateTime"]
        session._storage_update_marker = answer["revision"]
        return event
