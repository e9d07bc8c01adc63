"""An asynchronous PostgreSQL connection per event loop, for the agent's search.

``EvictingMemoryService.search_memory`` is awaited by the agent's event loop. Through
Django it must hop to a thread (``sync_to_async``) and back: on a 2 ms search the hop
cost 0.5–0.9 ms (two wake-ups across threads and cold caches after each), more than
the ranking. With this connection the loop awaits the statement itself, no thread.

One connection per running loop, opened on first use with Django's settings for the
default database (its adapters, so rows decode as the ORM's do; its time zone), in
autocommit, with client-side binding as Django's own (``records.one_trip``). psycopg
serialises a connection's statements, as the single thread of ``sync_to_async`` did.
A broken or closed connection is replaced on the next call, and a read that finds its
connection broken (the server restarted, an idle connection was cut) runs once more on a
new one (``read``). It sees what is
committed, as the thread's connection in autocommit did. Its statements count in the
same database metrics as Django's (``statement``), and OpenTelemetry's psycopg
instrumentation traces them as it does Django's.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql

from memadmin import counters

log = logging.getLogger(__name__)

_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, psycopg.AsyncConnection] = (
    weakref.WeakKeyDictionary()
)


async def connection() -> psycopg.AsyncConnection:
    """The running loop's connection, opened (or replaced) if need be."""
    loop = asyncio.get_running_loop()
    conn = _by_loop.get(loop)
    if conn is not None and not conn.closed and not conn.broken:
        return conn
    opened = await _connect()
    conn = _by_loop.get(loop)  # another task of the loop may have opened one meanwhile
    if conn is not None and not conn.closed and not conn.broken:
        await opened.close()
        return conn
    _by_loop[loop] = opened
    counters.count_database_connection(DEFAULT_DB_ALIAS, "postgresql")
    return opened


def statement():
    """Count and time one query string on the connection, as Django's are."""
    return counters.database_statement(DEFAULT_DB_ALIAS, "postgresql")


async def read[T](work: Callable[[psycopg.AsyncConnection], Awaitable[T]]) -> T:
    """``work`` on the running loop's connection; if that connection turns out broken,
    once more on a new one (a read can be repeated; the agent's turn does not fail for
    a connection the server dropped while it was idle)."""
    conn = await connection()
    try:
        return await work(conn)
    except psycopg.OperationalError:
        if not conn.broken:
            raise
        log.warning("the event loop's database connection was broken; read again on a new one")
        return await work(await connection())


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
        await conn.close()
        raise
    return conn


async def close() -> None:
    """Close the running loop's connection (a new one opens on the next call)."""
    conn = _by_loop.pop(asyncio.get_running_loop(), None)
    if conn is not None:
        await conn.close()


def close_all() -> None:
    """Close every loop's connection, from outside any loop (tests, shutdown). Closing
    awaits nothing: it only ends the libpq connection."""
    while _by_loop:
        _loop, conn = _by_loop.popitem()
        asyncio.run(conn.close())
