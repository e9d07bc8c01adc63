"""API v1: the NinjaAPI, its authentication, body limits and routes.

Mounted at ``/api/v1/`` (``memadmin.urls``). The OpenAPI document is served at
``/api/v1/openapi.json`` and browsable at ``/api/v1/docs`` (Swagger UI from ninja's
bundled static files, no CDN).
"""

from __future__ import annotations

import json
import math
import time
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.base import SessionBase
from django.urls import URLPattern, URLResolver, path, re_path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.parser import Parser

from . import errors, openapi
from .auth import AppApiKey
from .routes import artifacts, corrections, memory, sessions
from .validation import RequestValidators

BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class SessionStore(SessionBase):
    """A session that is always empty and never stored."""

    def load(self):
        return {}

    def exists(self, session_key):
        return False

    def save(self, must_create=False):
        pass

    def delete(self, session_key=None):
        pass

    def create(self):
        pass


class PreParsedJson(Parser):
    """Returns the body ``prepare_request`` parsed (with its own error messages)."""

    def parse_body(self, request):
        return request._memadmin_json


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def _finite(text: str) -> float:
    """A JSON number as a float; one too large for a float (1e400) is refused like
    Infinity, not stored as it (the database refuses infinite JSON numbers)."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is too large (numbers must be finite)")
    return value


def _without_staff_session(request) -> None:
    """The API authenticates by key alone. Forget the staff login cookie, so an API call
    can neither be authenticated by it nor refresh it (SESSION_SAVE_EVERY_REQUEST)."""
    request.COOKIES.pop(settings.SESSION_COOKIE_NAME, None)
    request.session = SessionStore()  # empty and untouched: the middleware saves nothing
    request.user = AnonymousUser()


def prepare_request(run):
    """Before anything else (the staff session already dropped: ``_api_view``, around
    every API view): refuse bodies over the limit (413)
    before reading them; check the key (401/403); then refuse bodies that are not JSON
    (400) and query parameters or JSON the document does not allow (422), each with a
    message saying what was wrong."""

    @wraps(run)
    def wrapper(request, *args, **kwargs):
        limit = settings.MEMADMIN_API_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return errors.error_response(
                api,
                request,
                413,
                "payload_too_large",
                f"The request body is {length} bytes; at most {limit} are allowed "
                "(MEMADMIN_API_MAX_BODY_BYTES).",
            )
        try:
            AUTH(request)  # remembered on the request: ninja's own check reuses it
        except errors.ApiError as exc:
            return errors.error_response(
                api, request, exc.status, exc.code, exc.detail, headers=exc.headers
            )
        operation = run.__self__  # ninja's Operation, whose run() this wraps
        problems = validators.query_errors(operation, request.GET)
        if problems:
            return errors.invalid_request(api, request, problems)
        request._memadmin_json = None
        if request.method in BODY_METHODS and request.body:
            try:
                body = json.loads(request.body, parse_constant=_no_constants, parse_float=_finite)
            except (ValueError, RecursionError) as exc:
                return errors.error_response(
                    api, request, 400, "invalid_json", f"The request body is not JSON: {exc}."
                )
            problems = validators.body_errors(operation, body)
            if problems:
                return errors.invalid_request(api, request, problems)
            request._memadmin_json = body
        return run(request, *args, **kwargs)

    return wrapper


class Api(NinjaAPI):
    """ninja's API, whose document also states the rules enforced elsewhere."""

    def get_openapi_schema(self, *args, **kwargs):
        document = super().get_openapi_schema(*args, **kwargs)
        return openapi.state_the_rules(document, time.time())


AUTH = AppApiKey()
api = Api(
    title="memadmin API",
    version="1",
    description=(
        "Long-term memory, sessions and artifacts for ADK agents in other processes. "
        "Every path names the app; the API key (`Authorization: Bearer <key>`) must "
        "belong to that app. Errors are JSON `{detail, code}`. Python agents: the "
        "`memadmin_client` package has ADK's session, memory and artifact services over "
        "this API."
    ),
    urls_namespace="api-v1",
    auth=AUTH,
    parser=PreParsedJson(),
    docs_decorator=login_not_required,
)
validators = RequestValidators(api)
api.add_decorator(prepare_request, mode="view")
errors.install(api)

USER = "/apps/{app_name}/users/{user_id}"
api.add_router(USER, memory.router)
api.add_router(USER, sessions.router)
api.add_router("/apps/{app_name}", sessions.app_router)
api.add_router(USER, artifacts.router)
api.add_router(USER, corrections.router)


def _public(patterns):
    """Token auth, not the staff login: every API view exempt from LoginRequired, and
    answering as an API view (``_api_view``)."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            _public(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            pattern.callback = login_not_required(_api_view(pattern.callback))
    return patterns


def _api_view(view):
    """Every answer under /api/v1/, ninja's own included (its 405, which names no
    operation and so skips ``prepare_request``): the staff cookie is neither read nor
    refreshed, and a 405 is JSON ``{detail, code}`` with its ``Allow`` header."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        _without_staff_session(request)
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            allowed = response.get("Allow", "")
            return errors.error_response(
                api,
                request,
                405,
                "method_not_allowed",
                # Not the path: it names the user, and the agent may log this message.
                f"{request.method} is not allowed on this endpoint; allowed: {allowed}.",
                headers={"Allow": allowed},
            )
        return response

    return wrapper


@csrf_exempt  # token auth, like every API view: no cookie, so no CSRF
def not_found(request, rest=""):
    """Any other path under /api/v1/: JSON like every other API answer, not a page."""
    return errors.error_response(
        api,
        request,
        404,
        "not_found",
        # Not the path: it may name a user, and the agent may log this message.
        "No API endpoint at this path; see /api/v1/docs for the endpoints.",
    )


def urls():
    patterns, app_name, namespace = api.urls
    # ninja's root view answers with an HTML 404; ours says where the docs are. The
    # name stays: ninja reverses it to find the API's prefix.
    patterns = [
        path("", not_found, name="api-root") if getattr(p, "name", None) == "api-root" else p
        for p in patterns
    ]
    patterns.append(re_path(r"^(?P<rest>[\s\S]*)$", not_found, name="not-found"))
    return _public(patterns), app_name, namespace
