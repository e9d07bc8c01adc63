"""PostgreSQL: an ingest's planned statements as server-side functions, whose plans the
server keeps instead of planning the statement again on every ingest.

Django sends literal SQL (client-side binding), so PostgreSQL plans every statement on
every call. For the one-user victim selection (``records.victims.victims_query``:
expired, superseded and cap victims in one statement) that was ~1.1-1.4 ms of planning
against ~1 ms of execution at 500 records, and ~0.2 ms for the eviction
(``records.store``). A PL/pgSQL function caches the plans of its statements per
connection, and works behind a transaction pooler (PgBouncer), where named prepared
statements do not. Each function's body is the statement's own SQL with its named
parameters as the function's arguments, so every rule keeps one definition; the
function's name carries a hash of that body, so a changed statement gets a function of
its own (an older one is left for the processes of the older version, until
``manage.py server_functions --drop``: ``drop_unused``), and so does a change of the
result's column types.

The plans are generic (``plan_cache_mode = force_generic_plan`` on the function
alone): with the default mode the server kept planning the selection on every call
(the user and the cutoff are parameters); the generic plan reads the user's records by
the same index.

The functions are created on first use in a connection, outside any transaction
(their creation commits at once, so no rolled-back ingest can take them away); a
caller inside a transaction on a connection that has not checked yet, or a database
role that may not create functions, sends the literal statements, which do the same
(``tests/records/test_server_functions.py``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DatabaseError, connection, transaction

log = logging.getLogger(__name__)

_PARAM = re.compile(r"%\((\w+)\)s")
_CREATE_LOCK = 0x6D656D76  # an advisory lock key: creators of the functions queue on it
_DIGEST = 16  # hex digits of the statement's digest in its function's name
_READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"


@dataclass(frozen=True)
class Statement:
    """A statement with named parameters (``%(name)s``) of the given SQL types.

    ``build`` returns (sql, example parameters); the text must not depend on the
    values. ``returns``: the result's column types, or None to take them from the
    statement (a SELECT). ``volatile``: the statement writes."""

    key: str
    build: Callable[[], tuple[str, dict]]
    types: dict[str, str]
    returns: tuple[str, ...] | None = None
    volatile: bool = False


_STATEMENTS: dict[str, Statement] = {}

# psycopg connection -> {statement key: the function's call with the statement's named
# parameters}; empty when the functions cannot be used there.
_ready: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register(statement: Statement) -> None:
    # PostgreSQL cuts a longer name to 63 bytes, and the function would never be found.
    longest = len(f"memadmin_{statement.key}_") + _DIGEST
    if longest > 63 or not statement.key.isidentifier() or not statement.key.islower():
        raise ValueError(f"statement key {statement.key!r}: lower-case, at most 37 letters")
    _STATEMENTS[statement.key] = statement


def _shape(sql: str) -> tuple[list[str], str]:
    """(parameter names in order of first use, the body with $n for each)."""
    names = list(dict.fromkeys(_PARAM.findall(sql)))
    body = _PARAM.sub(lambda m: f"${names.index(m.group(1)) + 1}", sql)
    return names, body


def ensure() -> bool:
    """Make sure this connection can call the functions (creating those the database
    lacks). Only outside a transaction: returns False, and changes nothing, inside one."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    raw = connection.connection
    if raw in _ready:
        return bool(_ready[raw])
    if connection.in_atomic_block:
        return False
    calls: dict[str, str] = {}
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_READ_COMMITTED)  # see _exists
            for statement in _STATEMENTS.values():
                calls[statement.key] = _ensure_one(cursor, statement)
    except DatabaseError as error:  # e.g. no CREATE on the schema: the literal statements
        log.warning("ingest statements without server-side functions: %s", error)
        _ready[raw] = {}
        return False
    _ready[raw] = calls
    return True


@dataclass(frozen=True)
class _Function:
    """A statement's function as this version of the code defines it."""

    name: str
    arguments: str
    returns: tuple[str, ...]
    body: str
    call: str


def _function(cursor, statement: Statement) -> _Function:
    sql, values = statement.build()
    names, body = _shape(sql)
    if set(names) != set(statement.types):
        raise RuntimeError(f"{statement.key}: parameters {names} are not {list(statement.types)}")
    arguments = ", ".join(statement.types[n] for n in names)
    # The result's types as the tables give them today (a migration that changes a
    # column's type gets a new function, not one whose declared result no longer fits).
    returns = statement.returns or _types(cursor, sql, values)
    kind = f"{statement.key}|{returns}|{statement.volatile}|{arguments}"
    digest = hashlib.sha256(f"{kind}|{body}".encode()).hexdigest()
    name = f"memadmin_{statement.key}_{digest[:_DIGEST]}"
    values = ", ".join(f"%({n})s::{statement.types[n]}" for n in names)
    call = f"SELECT * FROM {name}({values})"  # noqa: S608 - our function
    return _Function(name, arguments, returns, body, call)


def _ensure_one(cursor, statement: Statement) -> str:
    f = _function(cursor, statement)
    if not _exists(cursor, f.name):
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CREATE_LOCK])
        if not _exists(cursor, f.name):  # another connection may have made it meanwhile
            columns = ", ".join(f"o{i} {t}" for i, t in enumerate(f.returns))
            cursor.execute(
                f"""CREATE FUNCTION {f.name}({f.arguments}) RETURNS TABLE ({columns})
                LANGUAGE plpgsql {"VOLATILE" if statement.volatile else "STABLE"}
                SET plan_cache_mode = force_generic_plan
                AS $memadmin$ BEGIN RETURN QUERY {f.body}; END $memadmin$"""
            )
    return f.call


def unused() -> list[str]:
    """The signatures of the statements' functions in the schema that this version of
    the code does not call: made by earlier versions (a changed statement gets a
    function of its own, and the old one stays). Only functions named as ours are
    (``memadmin_<key>_<digest>`` for a registered key), never the stats triggers'."""
    if connection.vendor != "postgresql":
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        current = {_function(cursor, s).name for s in _STATEMENTS.values()}
        cursor.execute(
            "SELECT proname, oid::regprocedure::text FROM pg_proc"  # noqa: S608 - ours
            f" WHERE pronamespace = {_SCHEMA}"
            " AND starts_with(proname, 'memadmin_') ORDER BY proname"
        )
        found = cursor.fetchall()
    return [signature for name, signature in found if name not in current and _ours(name)]


def _ours(name: str) -> bool:
    """Whether ``name`` is a statement function's (``memadmin_<key>_<hex digest>``)."""
    return any(
        _is_digest(name.removeprefix(prefix))
        for prefix in (f"memadmin_{key}_" for key in _STATEMENTS)
        if name.startswith(prefix)
    )


def _is_digest(text: str) -> bool:
    return len(text) == _DIGEST and all(c in "0123456789abcdef" for c in text)


def drop_unused() -> list[str]:
    """Drop the functions ``unused`` lists, under the creators' lock; returns them.
    Only once no process of an earlier version runs: one still calling a dropped
    function fails its ingest."""
    outermost = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if outermost:  # only a transaction's first statement may set it
            cursor.execute(_READ_COMMITTED)
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CREATE_LOCK])
        dropped = unused()
        for signature in dropped:
            cursor.execute(f"DROP FUNCTION IF EXISTS {signature}")  # from pg_proc
    return dropped


def _exists(cursor, name: str) -> bool:
    """Whether the function is in the schema ``CREATE FUNCTION`` would make it in.

    Read from ``pg_proc`` by the statement's own snapshot, which sees a function another
    connection committed while this one waited for the lock. ``to_regprocedure`` (what
    this used) looks in the backend's catalog cache, which a transaction that waited on
    an advisory lock has not refreshed: it said "missing", and the CREATE failed as a
    duplicate (two processes' first ingests at once), leaving that connection on the
    literal statements. The name holds a digest of the arguments, so it is the signature.
    Each statement's own snapshot needs READ COMMITTED, which ``ensure`` sets for its
    transaction whatever the connection's default.
    """
    cursor.execute(
        "SELECT EXISTS (SELECT FROM pg_proc"  # noqa: S608 - ours
        f" WHERE proname = %s AND pronamespace = {_SCHEMA})",
        [name],
    )
    return cursor.fetchone()[0]


# The schema CREATE FUNCTION makes a function in (a name, not an identifier: a cast to
# regnamespace would fold the case of "MySchema"); none, so nothing, if it is NULL.
_SCHEMA = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"


def _types(cursor, sql: str, values: dict) -> tuple[str, ...]:
    """The result's column types, as the statement itself gives them."""
    cursor.execute(f"SELECT * FROM ({sql}) AS v LIMIT 0", values)  # noqa: S608 - our SQL
    oids = [d.type_code for d in cursor.description]
    cursor.execute("SELECT oid, format_type(oid, NULL) FROM pg_type WHERE oid = ANY(%s)", [oids])
    names = dict(cursor.fetchall())
    return tuple(names[oid] for oid in oids)


def call(key: str) -> str | None:
    """The call of statement ``key``'s function (named parameters as the statement's),
    when this connection has it (``ensure``); None: send the statement itself."""
    if connection.vendor != "postgresql" or connection.connection is None:
        return None
    return _ready.get(connection.connection, {}).get(key)
