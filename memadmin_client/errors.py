"""Errors of the remote services, and how API answers map back to ADK's own.

The three ADK errors an agent handles are raised as ADK's own classes, so code that
catches them works the same with the in-process and the remote services:

    409 already_exists     -> google.adk AlreadyExistsError
    409 stale_session      -> google.adk StaleSessionError (reload, then retry)
    404 session_not_found  -> google.adk SessionNotFoundError

Refused input (400, 413, 422) raises ``InvalidRequest``, a ``ValueError`` (and ADK's
``InputValidationError``), as the in-process services raise ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import httpx
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.session_not_found_error import SessionNotFoundError

__all__ = [
    "ADK_ERROR_CODES",
    "AlreadyExistsError",
    "InvalidRequest",
    "MemadminError",
    "MemadminUnavailable",
    "NotAuthorized",
    "ServerError",
    "SessionNotFoundError",
    "StaleSessionError",
    "error_from_response",
    "is_absent",
]


class MemadminError(Exception):
    """An answer from memadmin that is not a success."""

    def __init__(self, detail: str, *, status: int | None = None, code: str | None = None):
        super().__init__(detail)
        self.detail, self.status, self.code = detail, status, code


class NotAuthorized(MemadminError, PermissionError):
    """401 (missing, unknown or revoked key) or 403 (the key is for another app)."""


class InvalidRequest(MemadminError, InputValidationError):
    """400, 413 or 422: the server refused the input and says why; nothing was written."""


class ServerError(MemadminError):
    """5xx after the retries allowed for the call."""


class MemadminUnavailable(MemadminError, ConnectionError):
    """memadmin could not be reached (after the retries allowed for the call)."""


# The one table of ADK's errors on the wire: code -> (HTTP status, ADK class). The
# server answers with it (api.errors) and the client maps codes back with it.
ADK_ERROR_CODES: dict[str, tuple[int, type[Exception]]] = {
    "already_exists": (409, AlreadyExistsError),
    "stale_session": (409, StaleSessionError),
    "session_not_found": (404, SessionNotFoundError),
}


def _body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def error_from_response(response: httpx.Response) -> Exception:
    body = _body(response)
    code = body.get("code") if isinstance(body.get("code"), str) else None
    detail = body.get("detail") if isinstance(body.get("detail"), str) else None
    status = response.status_code
    detail = detail or f"HTTP {status} from memadmin: {response.text[:300]}"
    if code in ADK_ERROR_CODES:
        return ADK_ERROR_CODES[code][1](detail)
    if status in (401, 403):
        return NotAuthorized(detail, status=status, code=code)
    if status in (400, 413, 422):
        return InvalidRequest(detail, status=status, code=code)
    if status >= 500:
        return ServerError(detail, status=status, code=code)
    return MemadminError(detail, status=status, code=code)


def is_absent(response: httpx.Response, code: str) -> bool:
    """Whether an answer allowed to be a 404 says the thing asked for is absent (the
    404 with ``code``); raises for any other 404 (a wrong base URL, a proxy's page):
    that is not an answer about the thing, and None would hide the misconfiguration."""
    if response.status_code != 404:
        return False
    if _body(response).get("code") == code:
        return True
    raise error_from_response(response)
