"""Bearer-token authentication for the API, scoped to one app.

Only the ``Authorization`` header is read: a staff login cookie never authenticates
an API call, and the API sets no cookie. The key's app is checked against the path's
``app_name`` here, before any view runs, so no endpoint can forget the check.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone
from ninja.security.http import HttpAuthBase

from . import keys
from .errors import ApiError
from .models import ApiKey

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="memadmin"'}


def _unauthorized(code: str, detail: str) -> ApiError:
    return ApiError(401, code, detail, headers=CHALLENGE)


class AppApiKey(HttpAuthBase):
    """``Authorization: Bearer mma_…`` with a key of the app named in the path.

    ninja's ``HttpBearer`` returns None (a generic 401) for a missing or malformed
    header; this checks the header itself so each refusal says what is wrong.
    """

    openapi_scheme = "bearer"

    def __call__(self, request: HttpRequest) -> ApiKey:
        key = getattr(request, "_memadmin_api_key", None)
        if key is None:
            key = request._memadmin_api_key = self._check(request)
        return key

    def _check(self, request: HttpRequest) -> ApiKey:
        key = key_for_header(request.headers.get("Authorization"), timezone.now())
        app_name = (request.resolver_match.kwargs if request.resolver_match else {}).get("app_name")
        if app_name is not None:
            check_app(key, app_name)
        return key


def key_for_header(header: str | None, now) -> ApiKey:
    """The active key an ``Authorization: Bearer <key>`` header names; ApiError (401)
    saying what is wrong otherwise. The API and the MCP server both ask here."""
    if not header:
        raise _unauthorized(
            "unauthorized", "Missing API key: send the header 'Authorization: Bearer <key>'."
        )
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != AppApiKey.openapi_scheme or not token:
        raise _unauthorized("unauthorized", "The Authorization header must be 'Bearer <key>'.")
    try:
        return keys.authenticate(token, now)
    except keys.RevokedApiKey as exc:
        raise _unauthorized("revoked_key", str(exc)) from None
    except keys.InvalidApiKey as exc:
        raise _unauthorized(
            "invalid_key", f"{exc} Check the key, or ask ops to create one."
        ) from None


def check_app(key: ApiKey, app_name: str) -> None:
    """ApiError (403) unless ``key`` belongs to ``app_name``."""
    if app_name != key.app_name:
        raise ApiError(
            403,
            "wrong_app",
            f"This API key belongs to app {key.app_name!r}; it cannot be used for app "
            f"{app_name!r}.",
        )
