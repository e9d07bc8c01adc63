"""A real ``manage.py mcp`` process on this run's database, driven by the SDK's client.

The HTTP server is started once per module (the keys it checks are per test, in the
database); a stdio server is started by the client itself, per session, as a desktop
client starts it.
"""

import os
import signal
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from django.utils import timezone
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from api import keys
from records import touches

from ..conftest import subprocess_database_url, wait_until

ROOT = Path(__file__).resolve().parents[2]
APP = "pharmacy-support"
OTHER_APP = "travel-concierge"
USER = "cust-0042"
TRANSPORTS = ["stdio", "http"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def server_env(secret_key: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DATABASE_URL"] = subprocess_database_url()
    env["SECRET_KEY"] = secret_key
    env["PYTHONPATH"] = str(ROOT)
    env.pop("MEMADMIN_API_KEY", None)
    return env


@dataclass(frozen=True)
class HttpServer:
    url: str
    log: Path  # what the server wrote to stdout and stderr


@pytest.fixture(scope="module")
def http_server(mcp_http_server):
    """The base URL of ``manage.py mcp --transport http`` on a free port."""
    return mcp_http_server.url


@pytest.fixture(scope="module")
def mcp_http_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """``manage.py mcp --transport http`` on a free port: its URL and its log."""
    from django.conf import settings

    with django_db_blocker.unblock():
        env = server_env(settings.SECRET_KEY)
    port = free_port()
    log_path = tmp_path_factory.mktemp("mcp") / "server.log"
    log = log_path.open("w+")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "mcp", "--transport", "http", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(lambda: accepts(port) or server.poll() is not None, timeout=120)
        assert server.poll() is None, log_path.read_text()
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", log_path)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


@pytest.fixture(autouse=True)
def no_touches_left_behind():
    """The server buffers its searches' touches (Redis): none may reach a later test."""
    yield
    client = touches.redis_client()
    if client is not None:
        for key in client.scan_iter(match=f"{touches.PREFIX}:*"):
            client.delete(key)


@pytest.fixture
def api_key(transactional_db):
    return keys.create_key(APP, "mcp agent", timezone.now()).token


@pytest.fixture
def other_key(transactional_db):
    return keys.create_key(OTHER_APP, "another app's agent", timezone.now()).token


@pytest.fixture
def connect(request, settings):
    """connect(transport, token, mode="auto") -> an async context manager: a connected
    SDK ``Client``."""

    @asynccontextmanager
    async def connect(transport: str, token: str, mode: str = "auto"):
        if transport == "stdio":
            env = server_env(settings.SECRET_KEY) | {"MEMADMIN_API_KEY": token}
            params = StdioServerParameters(
                command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT)
            )
            async with Client(params, mode=mode) as client:
                yield client
            return
        url = request.getfixturevalue("http_server")
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            yield client

    return connect
