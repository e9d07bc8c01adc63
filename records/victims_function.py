"""PostgreSQL: one user's victim selection through a server-side function, whose plan
the server keeps instead of planning the statement again on every ingest.

Django sends literal SQL (client-side binding), so PostgreSQL plans the one-user
selection (``records.victims.victims_query``: expired, superseded and cap victims in
one statement) on every call: ~1.1-1.4 ms of planning against ~1 ms of execution at
500 records. A PL/pgSQL function caches the plans of its statements per connection,
and works behind a transaction pooler (PgBouncer), where named prepared statements do
not. Its body is ``victims_query``'s own SQL with the named parameters as the
function's arguments, so the rule keeps one definition (``records.policy_sql``); the
function's name carries a hash of that body, so a changed query gets a function of its
own (an older one is left unused).

The plan is generic (``plan_cache_mode = force_generic_plan`` on the function alone):
with the default mode the server kept planning for each call (the user and the cutoff
are parameters); the generic plan reads the user's records by the same index.

The function is created on first use in a connection, outside any transaction (its
creation commits at once, so no rolled-back ingest can take it away); a caller inside
a transaction, or a database role that may not create functions, gets the literal
statement, which returns the same rows (``tests/records/test_victims_function.py``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import weakref
from datetime import UTC, datetime

from django.db import DatabaseError, connection, transaction

from . import policy as pure
from . import policy_sql
from .victims import victims_query

log = logging.getLogger(__name__)

# The SQL type of each named parameter of the one-user selection.
_TYPES = {
    "app": "text",
    "user": "text",
    "now": "timestamptz",
    "cutoff": "timestamptz",
    "hl": "float8",
    "sat": "float8",
    "wr": "float8",
    "wf": "float8",
    "wi": "float8",
    "dhl": "float8",
    "sup": "boolean",
    "maxr": "bigint",
    "maxt": "bigint",
}
_PARAM = re.compile(r"%\((\w+)\)s")
_CREATE_LOCK = 0x6D656D76  # an advisory lock key: creators of the function queue on it

# psycopg connection -> the function's call (named parameters), or "" when it cannot be
# used there.
_ready: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shape(sql: str) -> tuple[list[str], str]:
    """(parameter names in order of first use, the body with $n for each)."""
    names = list(dict.fromkeys(_PARAM.findall(sql)))
    body = _PARAM.sub(lambda m: f"${names.index(m.group(1)) + 1}", sql)
    return names, body


def _name(names: list[str], body: str) -> str:
    digest = hashlib.sha256(("|".join(_TYPES[n] for n in names) + "\n" + body).encode()).hexdigest()
    return f"memadmin_victims_{digest[:16]}"


def ensure() -> bool:
    """Make sure this connection can call the function (creating it if the database has
    none). Only outside a transaction: returns False, and changes nothing, inside one."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    raw = connection.connection
    if raw in _ready:
        return bool(_ready[raw])
    if connection.in_atomic_block:
        return False
    # The statement's text does not depend on the values (they are parameters).
    sql, values = victims_query("", [""], datetime.now(UTC), pure.PolicyParams())
    names, body = _shape(sql)
    name = _name(names, body)
    signature = f"{name}({', '.join(_TYPES[n] for n in names)})"
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [signature])
            if not cursor.fetchone()[0]:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CREATE_LOCK])
                cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [signature])
                if not cursor.fetchone()[0]:
                    _create(cursor, name, names, body, sql, values)
    except DatabaseError as error:  # e.g. no CREATE on the schema: the literal statement
        log.warning("victim selection without a server-side function: %s", error)
        _ready[raw] = ""
        return False
    if set(names) != set(values):
        raise RuntimeError("the victims' parameters are not the base parameters and the user")
    arguments = ", ".join(f"%({n})s::{_TYPES[n]}" for n in names)
    _ready[raw] = f"SELECT * FROM {name}({arguments})"  # noqa: S608 - our function
    return True


def _create(cursor, name: str, names: list[str], body: str, sql: str, values: dict) -> None:
    # The result's column types, as the statement itself gives them.
    cursor.execute(f"SELECT * FROM ({sql}) AS v LIMIT 0", values)  # noqa: S608 - our SQL
    oids = [d.type_code for d in cursor.description]
    cursor.execute("SELECT oid, format_type(oid, NULL) FROM pg_type WHERE oid = ANY(%s)", [oids])
    types = dict(cursor.fetchall())
    columns = ", ".join(f"o{i} {types[oid]}" for i, oid in enumerate(oids))
    arguments = ", ".join(_TYPES[n] for n in names)
    cursor.execute(
        f"""CREATE FUNCTION {name}({arguments}) RETURNS TABLE ({columns})
        LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan
        AS $memadmin$ BEGIN RETURN QUERY {body}; END $memadmin$"""
    )


def one_user_query(
    app_name: str, user_id: str, now: datetime, params: pure.PolicyParams
) -> tuple[str, dict]:
    """``victims_query`` for one user: the function's call when this connection has it
    (``ensure``), else the statement itself. The same rows, in the same order."""
    raw = connection.connection if connection.vendor == "postgresql" else None
    call = _ready.get(raw) if raw is not None else None
    if not call:
        return victims_query(app_name, [user_id], now, params)
    values = policy_sql.base_params(app_name, now, params)
    values["user"] = user_id
    return call, values
