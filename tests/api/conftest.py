import json

import pytest
from django.utils import timezone

from api import keys

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
