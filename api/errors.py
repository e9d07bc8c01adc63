"""How the API answers when something is wrong: always JSON ``{"detail", "code"}``.

``detail`` is for people (what was wrong, what is allowed); ``code`` is for programs,
so a client can tell a stale session from a taken id although both are 409. The
remote ADK services (``memadmin_client``) turn codes back into ADK's exceptions.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError

from memadmin.pseudonyms import pseudonymous_path
from memadmin_client.errors import ADK_ERROR_CODES

log = logging.getLogger("memadmin.api")


def refused_value(exc: DataError) -> str:
    """What a caller is told of a value the database refused (the API's 422, the MCP
    server's tool error): the first line of its message, which names the problem (its
    detail lines may quote stored rows)."""
    text = str(exc).strip()
    return f"The database refused a value: {text.splitlines()[0] if text else ''}"


# Status and code of each ADK error, from the table the client maps them back with.
ADK_ERRORS: dict[type[Exception], tuple[int, str]] = {
    cls: (status, code) for code, (status, cls) in ADK_ERROR_CODES.items()
}


class ApiError(Exception):
    """An answer other than success, raised anywhere below a view."""

    def __init__(
        self, status: int, code: str, detail: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail
        self.headers = headers or {}


def error_response(
    api: NinjaAPI,
    request: HttpRequest,
    status: int,
    code: str,
    detail: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    body: dict[str, Any] = {"detail": detail, "code": code}
    if errors is not None:
        body["errors"] = errors
    response = api.create_response(request, body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _where(loc) -> str:
    # ninja prefixes the source ("body", "query", "path"); the rest is the field path.
    return ".".join(str(part) for part in loc)


def _loc(loc) -> list[str]:
    loc = [str(part) for part in loc]
    # ninja reports ("body", <parameter name>, field...); the parameter name is ours.
    if len(loc) >= 2 and loc[0] == "body" and loc[1] == "body":
        del loc[1]
    return loc


def _summary(errors: list[dict[str, Any]]) -> str:
    shown = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"Invalid request: {shown}{more}."


def invalid_request(api: NinjaAPI, request: HttpRequest, errors: list[dict[str, Any]]):
    return error_response(api, request, 422, "invalid_request", _summary(errors), errors=errors)


def _validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": _loc(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type")}
        for e in exc.errors
    ]


def install(api: NinjaAPI) -> None:
    """Register the handlers on ``api`` (most specific exception class wins)."""

    def on_api_error(request, exc: ApiError):
        return error_response(api, request, exc.status, exc.code, exc.detail, headers=exc.headers)

    def on_validation(request, exc: ValidationError):
        return invalid_request(api, request, _validation_errors(exc))

    def on_http_error(request, exc: HttpError):
        # ninja's own, e.g. a body that is not JSON
        code = "bad_request" if exc.status_code == 400 else f"http_{exc.status_code}"
        return error_response(api, request, exc.status_code, code, str(exc))

    def on_not_found(request, exc):
        return error_response(api, request, 404, "not_found", str(exc) or "Not found.")

    def on_adk_error(request, exc):
        for cls in type(exc).__mro__:
            if cls in ADK_ERRORS:
                status, code = ADK_ERRORS[cls]
                return error_response(api, request, status, code, str(exc))
        raise exc  # pragma: no cover - registered only for ADK_ERRORS

    def on_invalid_input(request, exc):
        # The domain's ValueError/TypeError say what was wrong and what is allowed.
        return error_response(api, request, 422, "invalid_input", str(exc) or type(exc).__name__)

    def on_data_error(request, exc):
        # A value the database refused (the transaction rolled back: nothing written).
        log.warning("database refused a value on %s: %s", pseudonymous_path(request), exc)
        return error_response(api, request, 422, "invalid_input", refused_value(exc))

    def on_unexpected(request, exc):
        log.exception("API error on %s %s", request.method, pseudonymous_path(request))
        return error_response(
            api, request, 500, "internal_error", "Internal error; it has been logged."
        )

    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(Http404, on_not_found)
    for cls in ADK_ERRORS:
        api.add_exception_handler(cls, on_adk_error)
    api.add_exception_handler(ValueError, on_invalid_input)
    api.add_exception_handler(TypeError, on_invalid_input)
    api.add_exception_handler(DataError, on_data_error)
    api.add_exception_handler(Exception, on_unexpected)
