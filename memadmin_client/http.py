"""The HTTP client the remote services share: one connection pool per event loop,
timeouts, and retries with backoff for calls that are safe to repeat.

No Django here (nor anywhere in memadmin_client): agents import it in processes
that have no Django and no memadmin settings.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from google.adk.errors.input_validation_error import InputValidationError

from .errors import MemadminUnavailable, NotAuthorized, error_from_response
from .version import __version__
from .wire import json_body

API_PREFIX = "/api/v1"
# Answers worth another try: the server or a proxy in front of it had a bad moment.
RETRY_STATUSES = frozenset({500, 502, 503, 504})
# Failures that happen before the request is sent: any call may be retried after them.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def without_user(path: str) -> str:
    """A memadmin API path or URL with its user ids left out (``/users/<user>/``, and a
    sessions page's ``cursor``, which holds one): the agent's logs and error messages
    should not hold them (memadmin's own logs name a user by keyed hash only)."""
    path, mark, query = path.partition("?")
    parts = path.split("/")  # a segment holds no '/': ``segment`` quotes it
    for i in range(2, len(parts) - 1):
        if parts[i] == "users" and parts[i - 2] == "apps":
            parts[i + 1] = "<user>"
    params = [
        "cursor=<cursor>" if p.startswith("cursor=") else p for p in query.split("&")
    ]  # fmt: skip
    return "/".join(parts) + mark + "&".join(params)


class UserIdsOutOfHttpxLogs(logging.Filter):
    """httpx logs every request's URL at INFO (``HTTP Request: GET https://…``); in a
    memadmin URL the user id is replaced with ``<user>``. Other URLs pass unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, httpx.URL) for a in args):
            record.args = tuple(
                without_user(str(a)) if isinstance(a, httpx.URL) and API_PREFIX + "/apps/" in a.path
                else a
                for a in args
            )  # fmt: skip
        return True


logging.getLogger("httpx").addFilter(UserIdsOutOfHttpxLogs())


def segment(name: str, value: object) -> str:
    """``value`` as one URL path segment; ids the API cannot address are refused here
    (with ADK's InputValidationError, a ValueError, as the in-process services do)."""
    if not isinstance(value, str):
        raise InputValidationError(f"{name} must be a string, not {type(value).__name__}.")
    if not value.strip():
        raise InputValidationError(f"{name} must not be empty or blank.")
    if "/" in value or value in {".", ".."}:
        raise InputValidationError(
            f"{name} {value!r} cannot be used over HTTP: no '/', '.' or '..'."
        )
    return quote(value, safe="")


def filename_param(filename: object) -> str:
    """An artifact filename for the ``filename`` query parameter: a query string is sent
    as it is, where a path would be normalised (``a//b``, ``./a``, ``dir/``), so any
    filename the in-process service takes reaches the server unchanged."""
    if not isinstance(filename, str):
        raise InputValidationError(f"filename must be a string, not {type(filename).__name__}.")
    if not filename.strip():
        raise InputValidationError("filename must not be empty or blank.")
    return filename


class MemadminClient:
    """Talks to one memadmin server.

    ``base_url`` is the server (``https://memadmin.example.com``); ``api_key`` a key
    of the app the agent runs as (``manage.py apikey create``), or a mapping
    ``{app_name: key}`` for a process that serves several apps (ADK's api_server, say):
    every key is scoped to one app. Idempotent calls are
    retried ``retries`` times on connection errors, timeouts and 5xx, with exponential
    backoff and jitter; any call is retried when the connection could not be opened.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | Mapping[str, str],
        *,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        limits: httpx.Limits | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not api_key:
            raise ValueError("api_key is required: create one with 'manage.py apikey create'.")
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith(API_PREFIX) else base + API_PREFIX
        self._keys: str | dict[str, str] = api_key if isinstance(api_key, str) else dict(api_key)
        self._headers = {
            "Accept": "application/json",
            "User-Agent": f"memadmin-client/{__version__}",
        }
        self._timeout = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
        self.retries = retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self._limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self._transport = transport
        # An httpx.AsyncClient belongs to the event loop it first ran on; keep one per
        # loop so a service object survives asyncio.run() being called more than once.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers,
                timeout=self._timeout,
                limits=self._limits,
                transport=self._transport,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this loop's connections (others close with their loops)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> MemadminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        retry_after = response.headers.get("Retry-After") if response is not None else None
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), self.max_backoff)
        return min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.0)

    def _authorization(self, app_name: str) -> dict[str, str]:
        if isinstance(self._keys, str):
            return {"Authorization": f"Bearer {self._keys}"}
        key = self._keys.get(app_name)
        if key is None:
            raise NotAuthorized(
                f"No API key for app {app_name!r} (keys are for {sorted(self._keys)}).",
                code="no_key",
            )
        return {"Authorization": f"Bearer {key}"}

    async def request(
        self,
        method: str,
        path: str,
        *,
        app_name: str,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool,
        allow: frozenset[int] = frozenset(),
    ) -> httpx.Response:
        """Send; return a 2xx answer (or one whose status is in ``allow``); raise the
        mapped error for anything else."""
        headers = self._authorization(app_name)
        content = None
        if json is not None:
            content = json_body(json)
            headers["Content-Type"] = "application/json"
        if params:
            params = {k: v for k, v in params.items() if v is not None}
        attempt = 0
        while True:
            response = None
            try:
                response = await self._client().request(
                    method, path, content=content, params=params, headers=headers
                )
            except httpx.TransportError as exc:
                retry = idempotent or isinstance(exc, NOT_SENT)
                if not retry or attempt >= self.retries:
                    raise MemadminUnavailable(
                        f"memadmin at {self.base_url} did not answer {method} "
                        f"{without_user(path)}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
            else:
                if response.is_success or response.status_code in allow:
                    return response
                if not (idempotent and response.status_code in RETRY_STATUSES) or (
                    attempt >= self.retries
                ):
                    raise error_from_response(response)
            await asyncio.sleep(self._delay(attempt, response))
            attempt += 1


def user_path(app_name: str, user_id: str) -> str:
    return f"/apps/{segment('app_name', app_name)}/users/{segment('user_id', user_id)}"


def session_path(app_name: str, user_id: str, session_id: str) -> str:
    return f"{user_path(app_name, user_id)}/sessions/{segment('session_id', session_id)}"


class RemoteService:
    """What the three remote ADK services share: the client they talk through, one
    passed in (shared by several services) or one made from ``base_url`` and
    ``api_key`` (``client_options`` go to ``MemadminClient``)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        client: MemadminClient | None = None,
        **client_options: Any,
    ) -> None:
        if client is None:
            if base_url is None or api_key is None:
                raise TypeError("pass base_url and api_key, or client=MemadminClient(...)")
            client = MemadminClient(base_url, api_key, **client_options)
        self.client = client
