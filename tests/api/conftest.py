import json

import httpx
import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from django.test.utils import override_settings
from django.utils import timezone

from api import keys

# The live server writes headers and body in separate sends; with Nagle's algorithm on,
# each keep-alive request then waits ~40 ms for the client's delayed ACK. Off, the
# remote-service tests run ten times faster.
WSGIRequestHandler.disable_nagle_algorithm = True

APP = "pharmacy-support"
OTHER_APP = "travel-concierge"
USER = "cust-0042"


@pytest.fixture
def api_key(db):
    """A fresh key for APP; returns its token."""
    return keys.create_key(APP, "test agent", timezone.now()).token


class Api:
    """The Django test client speaking JSON to /api/v1 with a bearer key."""

    def __init__(self, client, token):
        self.client, self.token = client, token

    def _headers(self, token):
        token = self.token if token is ... else token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def url(self, path, app=APP, user=USER):
        if path.startswith("/"):
            return f"/api/v1{path}"
        return f"/api/v1/apps/{app}/users/{user}/{path}"

    def call(self, method, path, body=None, *, token=..., raw=None, app=APP, user=USER, **query):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"headers": self._headers(token)}
        if data is not None:
            kwargs.update(data=data, content_type="application/json")
        if query:
            if method != "get":
                raise ValueError("query parameters only for GET here")
            kwargs["data"] = query
        return getattr(self.client, method)(self.url(path, app, user), **kwargs)

    def get(self, path, **kw):
        return self.call("get", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("post", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("delete", path, **kw)


@pytest.fixture
def api(client, api_key):
    return Api(client, api_key)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def close_executor_connections():
    """Close the connections in-process ADK services opened in asgiref's executor."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())


REMOTE_APPS = (APP, "pharmacy", "other", "no-such-app")


@pytest.fixture(scope="session")
def plain_http_settings():
    """The live server speaks plain HTTP on loopback; production's HTTPS redirect (on
    when DEBUG is off, as with DATABASE_URL) is read once, when the server starts."""
    with override_settings(SECURE_SSL_REDIRECT=False):
        yield


@pytest.fixture(scope="session")
def live_server(plain_http_settings, live_server):
    return live_server


# A live-server thread keeps its database connection while the client keeps the HTTP
# connection alive, and PostgreSQL will not drop the test database while connections
# are open: tests that do not close their clients use connections without keep-alive.
NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)


@pytest.fixture
def remote_client(live_server, transactional_db):
    """A memadmin_client talking to a live server on loopback, with a key per test app."""
    from memadmin_client import MemadminClient

    now = timezone.now()
    tokens = {app: keys.create_key(app, "remote test", now).token for app in REMOTE_APPS}
    return MemadminClient(live_server.url, tokens, backoff=0.01, limits=NO_KEEPALIVE)
