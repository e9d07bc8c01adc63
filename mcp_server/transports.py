"""The two ways ``manage.py mcp`` serves: stdio for a desktop client that starts it
with one app's key, streamable HTTP for remote agents that send their key with every
request (``Authorization: Bearer <key>``, as /api/v1/ takes it)."""

from __future__ import annotations

import anyio
import uvicorn
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import key_for_header
from api.errors import ApiError

from .server import build_server

PATH = "/mcp"


def bearer(token: str) -> str:
    return f"Bearer {token}"


def check_token(token: str) -> str:
    """The app of ``token``; api.errors.ApiError saying what is wrong otherwise."""
    return key_for_header(bearer(token), timezone.now()).app_name


def run_stdio(token: str) -> None:
    """Serve one client on stdin/stdout with ``token``; checked again on every call, so
    a key revoked meanwhile stops working."""
    anyio.run(build_server(lambda ctx: bearer(token)).run_stdio_async)


def _checked_key(header: str | None) -> None:
    close_old_connections()
    try:
        key_for_header(header, timezone.now())
    finally:
        close_old_connections()


def require_api_key(app: ASGIApp) -> ASGIApp:
    """Refuse an HTTP request without a valid key before the MCP session sees it, as the
    API refuses it: 401 JSON ``{detail, code}`` with a Bearer challenge."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Headers(scope=scope).get("authorization")
            try:
                await sync_to_async(_checked_key, thread_sensitive=True)(header)
            except ApiError as exc:
                response = JSONResponse(
                    {"detail": exc.detail, "code": exc.code},
                    status_code=exc.status,
                    headers=exc.headers,
                )
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def http_app(host: str) -> ASGIApp:
    server = build_server(lambda ctx: (ctx.headers or {}).get("authorization"))
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        host=host,  # on localhost, the SDK also refuses other Host/Origin headers
        max_request_body_size=settings.MEMADMIN_API_MAX_BODY_BYTES,
    )
    return require_api_key(app)


def run_http(host: str, port: int) -> None:
    # log_config=None: uvicorn logs through Django's logging, like everything else.
    uvicorn.run(http_app(host), host=host, port=port, log_config=None, lifespan="on")
