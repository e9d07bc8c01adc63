"""Several statements in one round trip to PostgreSQL.

With client-side binding (psycopg's ``ClientCursor``, Django's default) one query string
may hold several statements: PostgreSQL runs them in order (as one transaction when none
is open) and psycopg keeps one result per statement. The hot paths send a lock and the
read after it, or a planner setting and the statement it is for, this way instead of
paying a round trip for each.
"""

from __future__ import annotations

import hashlib
import logging
import re
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime

import psycopg

log = logging.getLogger(__name__)


def execute(cursor, statements: Sequence[str], params: Sequence | Mapping) -> list[list[tuple]]:
    """Run ``statements`` as one query string (``params`` for all of them, in order or
    by name) and return the rows of each ([] for one that returns none, as a SET)."""
    cursor.execute(";\n".join(statements), params)
    results = []
    while True:
        results.append(cursor.fetchall() if cursor.description is not None else [])
        if not cursor.nextset():
            break
    if len(results) != len(statements):
        raise RuntimeError(f"{len(statements)} statements gave {len(results)} results")
    return results


def execute_prepared(
    cursor, before: Sequence[str], sql: str, after: Sequence[str], params: Sequence
) -> list[tuple]:
    """The rows of ``sql`` run as ``execute(cursor, [*before, sql, *after], params)``
    would, with ``sql`` a prepared statement of the connection: PREPARE on its first
    use there, in the same round trip, then only EXECUTE, which PostgreSQL neither
    parses nor plans again (with ``plan_cache_mode = force_generic_plan`` in ``before``;
    planning took as long as running a search at 500 records). ``params`` (positional,
    all for ``sql``) give its parameter types (``_pg_type``). A prepared statement
    outlives a rolled-back transaction.

    Prepared statements belong to the server's connection. When the server says one is
    missing or already there, ours is not the connection we prepared on (a pooler in
    transaction mode, or ``DISCARD ALL``): the process stops preparing (logged once) and
    runs the plain statement, at once when no transaction is open (else the caller's
    transaction has failed, as for any error, and the next statement is plain).
    """
    plain = [*before, sql, *after]
    if not _preparing:
        return execute(cursor, plain, params)[len(before)]
    statements = _prepared_statements(cursor.cursor.connection, before, sql, params)
    try:
        results = execute(cursor, [*statements, *after], params)
    except Exception as exc:
        if not _stop_preparing(exc) or cursor.db.in_atomic_block:
            raise
        return execute(cursor, plain, params)[len(before)]
    return results[len(statements) - 1]


async def aexecute(cursor, statements: Sequence[str], params: Sequence | Mapping) -> list[list]:
    """``execute`` on an asynchronous client-side-binding cursor
    (``psycopg.AsyncClientCursor``)."""
    await cursor.execute(";\n".join(statements), params)
    results = []
    while True:
        results.append(await cursor.fetchall() if cursor.description is not None else [])
        if not cursor.nextset():
            break
    if len(results) != len(statements):
        raise RuntimeError(f"{len(statements)} statements gave {len(results)} results")
    return results


async def aexecute_prepared(
    cursor, before: Sequence[str], sql: str, after: Sequence[str], params: Sequence
) -> list[tuple]:
    """``execute_prepared`` on an asynchronous client-side-binding cursor of a
    connection in autocommit (``records.aio``): a failed query string's implicit
    transaction is gone with it, so the plain statement is always retried at once."""
    plain = [*before, sql, *after]
    if not _preparing:
        return (await aexecute(cursor, plain, params))[len(before)]
    statements = _prepared_statements(cursor.connection, before, sql, params)
    try:
        results = await aexecute(cursor, [*statements, *after], params)
    except Exception as exc:
        if not _stop_preparing(exc):
            raise
        return (await aexecute(cursor, plain, params))[len(before)]
    return results[len(statements) - 1]


def _prepared_statements(
    connection, before: Sequence[str], sql: str, params: Sequence
) -> list[str]:
    """``before``, then PREPARE ``sql`` if ``connection`` (a psycopg connection) has not
    got it yet, then its EXECUTE. The name is a hash of the text and parameter types,
    kept per (text, types): hashing the text on every call cost more than the lookup."""
    types = tuple(_pg_type(value) for value in params)
    name = _names.get((sql, types))
    if name is None:
        if len(_names) >= 1000:  # never expected: the texts are the code's own
            _names.clear()
        digest = hashlib.blake2b(f"{sql}\0{list(types)}".encode(), digest_size=8).hexdigest()
        name = _names[(sql, types)] = "memadmin_" + digest
    names = _prepared.setdefault(connection, set())
    statements = list(before)
    if name not in names:
        statements.append(f"PREPARE {name}({', '.join(types)}) AS {_numbered(sql)}")
    statements.append(f"EXECUTE {name}({', '.join(['%s'] * len(params))})")
    names.add(name)  # before running: a PREPARE that ran stays, whatever fails after it
    return statements


def _stop_preparing(exc: BaseException) -> bool:
    """Whether ``exc`` (psycopg's, or Django's wrapping it) says the server connection is
    not the one we prepared on; if so, stop preparing in this process (logged once)."""
    global _preparing
    if not isinstance(exc, _NOT_OURS) and not isinstance(exc.__cause__, _NOT_OURS):
        return False
    if _preparing:
        log.warning("prepared statements off: the server connection is not the one prepared")
    _preparing = False
    return True


_NOT_OURS = (psycopg.errors.InvalidSqlStatementName, psycopg.errors.DuplicatePreparedStatement)
_preparing = True

# Per psycopg connection (a new one after a reconnect): the statements prepared on it.
_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# (text, parameter types) -> statement name; the texts are the code's own, a handful.
_names: dict[tuple[str, tuple[str, ...]], str] = {}


def _numbered(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders as ``$1``, ``$2``... (``%%`` kept)."""
    count = 0

    def number(match: re.Match) -> str:
        nonlocal count
        if match.group() == "%%":
            return "%%"
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, sql)


_PLACEHOLDER = re.compile(r"%[%s]")  # linear; the text is ours, never user input


def _pg_type(value: object) -> str:
    """The PostgreSQL type of a parameter, as a prepared statement declares it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int4" if -(2**31) <= value < 2**31 else "int8"
    if isinstance(value, float):
        return "float8"
    if isinstance(value, datetime):
        return "timestamptz"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "text[]"
    raise TypeError(f"no prepared-statement type for a {type(value).__name__} parameter")
