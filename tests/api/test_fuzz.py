"""Schema-driven fuzzing of the API from its own OpenAPI document (schemathesis).

Every operation gets generated requests, valid and invalid; no answer may be a 5xx, and
every answer must match what the document promises (status, content type, schema), and
a request without the key must be refused. The example count per operation is
MEMADMIN_FUZZ_EXAMPLES: small by default so the suite stays fast; raise it locally:

    MEMADMIN_FUZZ_EXAMPLES=300 MEMADMIN_FUZZ_COVERAGE=1 \
        make test PYTEST_ARGS=tests/api/test_fuzz.py
"""

import os
from urllib.parse import unquote

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test.utils import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings

from api import keys

from .conftest import APP

EXAMPLES = int(os.environ.get("MEMADMIN_FUZZ_EXAMPLES", "12"))
# The default run draws the same examples every time (a CI run cannot fail on a case no
# earlier run saw, and a failure reproduces); setting the count explores anew each run.
DETERMINISTIC = "MEMADMIN_FUZZ_EXAMPLES" not in os.environ
# The coverage phase (boundary values, each field missing or mistyped) adds a minute or
# more over the ADK schemas: off by default, MEMADMIN_FUZZ_COVERAGE=1 for a long run.
COVERAGE = os.environ.get("MEMADMIN_FUZZ_COVERAGE", "") not in ("", "0")

CONFIG = schemathesis.Config.from_dict(
    {
        # A key belongs to one app: fuzz inside it (other apps are 403, tested apart).
        "parameters": {"path.app_name": APP},
        "generation": {
            "max-examples": EXAMPLES,
            "mode": "all",
            "database": "none",
            "deterministic": DETERMINISTIC,
        },
        # A request valid by the document must be accepted (ST202): the document states
        # what the server enforces (api.openapi). Rules that tie two values together,
        # which a schema cannot say, are kept by `keep_rules_across_fields` below.
        "checks": {"positive_data_acceptance": {"enabled": True}},
        "phases": {"coverage": {"enabled": COVERAGE}},
    }
)

# In-process WSGI: no server to start. The HTTPS redirect (on when DEBUG is off) is
# read once, when the middleware is built.
with override_settings(SECURE_SSL_REDIRECT=False):
    APP_UNDER_TEST = get_wsgi_application()

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", APP_UNDER_TEST, config=CONFIG)


@schema.hook
def filter_query(context, query):
    """Skip queries holding an object or a one-item list: form-encoded into a query
    string they are just text, which a string parameter rightly accepts (repeated
    parameters, lists of two or more, are still tried). Skip floats too: JSON Schema's
    integer takes 2.0, which a query string writes as "2.0", and an integer query
    parameter is written in digits (docs/http-api.md)."""
    return query is None or not any(
        isinstance(v, dict | float) or (isinstance(v, list) and len(v) == 1) for v in query.values()
    )


def _events(body):
    if not isinstance(body, dict):
        return []
    found = [body["event"]] if isinstance(body.get("event"), dict) else []
    found += body.get("events") or []
    session = body.get("session")
    if isinstance(session, dict):
        found += session.get("events") or []
    return [e for e in found if isinstance(e, dict)]


def keep_rules_across_fields(case):
    """Keep the rules that tie one value to another, which the document states in words:
    a session sent to memory belongs to the path's app and user; an artifact whose name
    lacks "user:" belongs to a session, so it needs one. ADK's ``requestedAuthConfigs``
    are OpenAPI security schemes its own schema leaves open: none are generated. Only
    for valid (positive) cases; invalid ones stay as generated."""
    if not case.meta or not case.meta.generation.mode.is_positive:
        return
    path, body = case.operation.path, case.body
    if path.endswith("/memory/sessions") and isinstance(body, dict):
        session = body.get("session")
        if isinstance(session, dict):
            for camel, snake, param in (
                ("appName", "app_name", "app_name"),
                ("userId", "user_id", "user_id"),
            ):
                session.pop(snake, None)
                session[camel] = unquote(case.path_parameters[param])
    if "{filename}" in path:
        filename = unquote(case.path_parameters["filename"])
    else:
        filename = (case.query or {}).get("filename")
    if isinstance(filename, str) and not filename.startswith("user:"):
        case.query = {
            **(case.query or {}),
            "session_id": (case.query or {}).get("session_id") or "s1",
        }
    if (
        path.endswith("/artifacts")
        and case.method == "POST"
        and isinstance(body, dict)
        and not str(body.get("filename", "")).startswith("user:")
        and not body.get("sessionId")
    ):
        body.pop("session_id", None)
        body["sessionId"] = "s1"
    for event in _events(body):
        actions = event.get("actions")
        if isinstance(actions, dict):
            actions.pop("requestedAuthConfigs", None)
            actions.pop("requested_auth_configs", None)


@pytest.fixture
def authorization(db):
    """A key for APP; and, as Django's test client does, requests that leave the test's
    transaction (and its connection) open instead of closing it at the end."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        token = keys.create_key(APP, "schemathesis", timezone.now()).token
        yield {"Authorization": f"Bearer {token}"}
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@schema.parametrize()
# The key (and the database, rolled back after each operation) are meant to be shared
# by the examples; deep ADK schemas make some examples slow or large to generate.
@settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
def test_the_api_keeps_its_documented_promises(case, authorization):
    keep_rules_across_fields(case)
    case.call_and_validate(headers=authorization)
