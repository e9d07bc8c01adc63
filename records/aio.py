"""Asynchronous PostgreSQL connections for the agent's search, shared by event loops.

``EvictingMemoryService.search_memory`` is awaited by the agent's event loop. Through
Django it must hop to a thread (``sync_to_async``) and back: on a 2 ms search the hop
cost 0.5–0.9 ms (two wake-ups across threads and cold caches after each), more than
the ranking. With these connections the loop awaits the statement itself, no thread.

A process keeps a few idle connections (at most ``MAX_IDLE``), opened on demand with
Django's settings for the default database (its adapters, so rows decode as the ORM's
do; its time zone), in autocommit, with client-side binding as Django's own
(``records.one_trip``). A search takes one for itself and gives it back (``read``), so
searches of one loop run side by side, and a loop made for one call (ADK's
``Runner.run``, ``async_to_sync``) reuses what an earlier loop gave back instead of
connecting: a connection belongs to no loop, only to one task at a time. One that is
broken, closed or inside a transaction when given back is closed, not kept, as is one
whose read was cancelled (what the server got of it is unknown: a PREPARE, say); a read
that finds its connection broken (the server restarted, or closed an idle connection)
runs once more on a new one. Errors are Django's (``django.db.utils``), and the
statements count in the same database metrics as Django's (``statement``);
OpenTelemetry's psycopg instrumentation traces them as it does Django's. It sees what
is committed, as a connection of Django's in autocommit does.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Awaitable, Callable
from contextlib import contextmanager

import psycopg
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections
from psycopg import sql

from memadmin import counters

log = logging.getLogger(__name__)

MAX_IDLE = 4

_idle: list[psycopg.AsyncConnection] = []
_idle_lock = threading.Lock()


async def read[T](work: Callable[[psycopg.AsyncConnection], Awaitable[T]]) -> T:
    """``work`` on a connection of its own, given back after; if that connection turns
    out broken, once more on a new one (a read can be repeated: the agent's turn does
    not fail for a connection the server dropped while it was idle)."""
    with connections[DEFAULT_DB_ALIAS].wrap_database_errors:  # Django's error classes
        conn = await _take()
        try:
            try:
                return await work(conn)
            except (psycopg.OperationalError, OperationalError):  # raw, or from statement
                if not conn.broken:
                    raise
                log.warning("an idle database connection was broken; read again on a new one")
                _close(conn)
                conn = await _connect()
                return await work(conn)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                _close(conn)  # cancelled mid-read: what the server got of it is unknown
            raise
        finally:
            _give_back(conn)  # kept only if still fine


@contextmanager
def statement():
    """Count and time one query string on a connection of ``read``, its errors as
    Django's (so the metrics' error types are those of Django's statements)."""
    with (
        counters.database_statement(DEFAULT_DB_ALIAS, "postgresql"),
        connections[DEFAULT_DB_ALIAS].wrap_database_errors,
    ):
        yield


async def _take() -> psycopg.AsyncConnection:
    with _idle_lock:
        while _idle:
            conn = _idle.pop()
            if not conn.closed and not conn.broken:
                return conn
    return await _connect()


def _give_back(conn: psycopg.AsyncConnection) -> None:
    if not conn.closed and not conn.broken and _idle_now(conn):
        with _idle_lock:
            if len(_idle) < MAX_IDLE:
                _idle.append(conn)
                return
    _close(conn)


def _idle_now(conn: psycopg.AsyncConnection) -> bool:
    return conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def _connect() -> psycopg.AsyncConnection:
    wrapper = connections[DEFAULT_DB_ALIAS]
    if wrapper.vendor != "postgresql":
        raise RuntimeError("records.aio is for PostgreSQL")
    params = wrapper.get_connection_params()
    params.pop("cursor_factory", None)
    conn = await psycopg.AsyncConnection.connect(
        **params, autocommit=True, cursor_factory=psycopg.AsyncClientCursor
    )
    try:
        zone = wrapper.timezone_name
        if zone and conn.info.parameter_status("TimeZone") != zone:
            await conn.execute("SELECT set_config('TimeZone', %s, false)", [zone])
        role = wrapper.settings_dict.get("OPTIONS", {}).get("assume_role")
        if role:
            await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    except BaseException:
        _close(conn)
        raise
    counters.count_database_connection(DEFAULT_DB_ALIAS, "postgresql")
    return conn


def _close(conn: psycopg.AsyncConnection) -> None:
    """Close from any thread, with or without a loop: ``AsyncConnection.close`` awaits
    nothing but the end of the libpq connection, which this is."""
    conn.pgconn.finish()


def idle() -> int:
    """How many connections are kept idle now."""
    with _idle_lock:
        return len(_idle)


@atexit.register
def close_idle() -> None:
    """Close the idle connections (tests, shutdown); those in use close when given back
    only if the pool is full, so call this when no search is running."""
    with _idle_lock:
        kept, _idle[:] = list(_idle), []
    for conn in kept:
        _close(conn)
