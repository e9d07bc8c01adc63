"""DjangoSessionService's connection care outside the request cycle: a connection that
died while the agent was idle is replaced before the next call; one that dies between
calls in a burst fails that one call, and is replaced straight after (PostgreSQL)."""

import math

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connection

from records import session_service
from records.session_service import DjangoSessionService, run_db

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
]

APP, USER = "pharmacy", "alice"


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _terminate(pid: int) -> None:
    try:
        with connection.cursor() as cursor:  # another thread, so another connection
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        connection.close()


async def _kill_the_executors_connection() -> int:
    pid = await run_db(_backend_pid)
    await sync_to_async(_terminate, thread_sensitive=False)(pid)
    return pid


@pytest.fixture
def service(close_executor_connections):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    return DjangoSessionService()


async def test_a_connection_that_died_while_idle_is_replaced_first(service, monkeypatch):
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    old = await _kill_the_executors_connection()
    monkeypatch.setattr(session_service, "_last_call_end", -math.inf)  # idle for long
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.id == "s1"
    assert await run_db(_backend_pid) != old


async def test_one_that_dies_in_a_burst_fails_one_call_and_is_replaced_after_it(
    service, monkeypatch
):
    await service.create_session(app_name=APP, user_id=USER, session_id="s1")
    monkeypatch.setattr(session_service, "HEALTH_CHECK_AFTER_IDLE", math.inf)  # never idle
    await _kill_the_executors_connection()
    with pytest.raises(OperationalError):
        await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    got = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None and got.id == "s1"
