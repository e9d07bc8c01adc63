"""The pgvector path of hybrid search: the user's nearest vectors found by PostgreSQL.

Where the ``vector`` extension can be created, ``enable`` (migration 0022, or
``manage.py pgvector --enable`` on a database that got the extension later) adds a
``pgvector`` column of type ``vector`` beside each stored vector (``RecordEmbedding``)
and fills it. From then on:

- ``records.embeddings`` writes both forms of each vector (``insert``);
- ``nearest`` lets PostgreSQL rank the user's vectors (``<#>``, the negative inner
  product: vectors are unit length, so that is cosine) and reads only its best
  candidates (twice the results wanted, at least 20 more), with the few that have no
  ``pgvector`` value yet (written by a process that had not seen the column; the
  back-fill fills them);
- the ranking is then the exact one of ``records.vectors.nearest``, the same ids in the
  same order as without pgvector: the candidates are scored exactly in Python, and the
  result is taken when no vector left unread could reach it. pgvector sums in float32,
  so its score is within ``error_bound`` of the exact one; when the worst candidate's
  score plus that bound could still round into the top ``limit`` (a tie across the
  cut), a second statement reads every vector whose pgvector score is within the bound
  of the limit-th exact score, and those are scored too.

The scan is exact and per user (the caps bound it), not an approximate index: an HNSW
or IVFFlat index over every user's vectors would filter by user after the search and
miss records. Without the extension, or on SQLite, nothing here runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import DatabaseError, connection, transaction

from . import vectors

log = logging.getLogger(__name__)

TABLE = "records_recordembedding"
COLUMN = "pgvector"
# How many candidates PostgreSQL returns: twice the results wanted, and at least
# CANDIDATE_EXTRA more (so a near twin of the last result rarely forces a full read).
CANDIDATE_FACTOR = 2
CANDIDATE_EXTRA = 20
# Rows filled per statement by ``fill_missing``.
FILL_BATCH = 500
# Slack for the stored vectors' length (unit up to float32 rounding) and math.sumprod's
# own rounding, on top of the float32 sum's bound.
_NORM_SLACK = 1.01
_SUMPROD_SLACK = 1e-12

# Per database (its NAME): whether the column is there. Read once per process; a process
# started before ``enable`` keeps writing plain vectors, which ``nearest`` still reads
# and the back-fill fills.
_ENABLED: dict[str, bool] = {}


def _key() -> str:
    return str(connection.settings_dict.get("NAME") or "")


def available() -> bool:
    """Whether this database offers the ``vector`` extension (installed or not)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        return cursor.fetchone() is not None


def enabled() -> bool:
    """Whether the ``pgvector`` column exists (cached per process and database)."""
    if connection.vendor != "postgresql":
        return False
    key = _key()
    if key not in _ENABLED:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_attribute WHERE attrelid = %s::regclass"
                " AND attname = %s AND NOT attisdropped",
                [TABLE, COLUMN],
            )
            _ENABLED[key] = cursor.fetchone() is not None
    return _ENABLED[key]


def forget() -> None:
    """Read the column's presence again on next use (after ``enable``, and in tests)."""
    _ENABLED.clear()


def enable(conn=connection) -> bool:
    """Create the extension and the column where the extension exists, and fill the
    column of vectors stored before. Returns whether the pgvector path is on. Where the
    extension is missing, or cannot be created (privileges), nothing changes."""
    if conn.vendor != "postgresql":
        return False
    with conn.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return False
        try:
            with transaction.atomic(using=conn.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError as exc:
            log.warning("the vector extension exists but could not be created: %s", exc)
            return False
        cursor.execute(f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {COLUMN} vector")
    forget()
    fill_missing(conn)
    return True


def insert(records_table: str, pairs: Sequence[tuple[int, vectors.array]]):
    """``records.embeddings._store``'s insert of (record id, vector) pairs: the statement
    and its rows, with the ``pgvector`` form when enabled (decided once, for both)."""
    if enabled():
        sql = (
            f"INSERT INTO {TABLE} (record_id, dims, vector, {COLUMN}) "  # noqa: S608 - ours
            f"SELECT id, %s, %s, %s::real[]::vector FROM {records_table} WHERE id = %s "
            "ON CONFLICT (record_id) DO NOTHING"
        )
        return sql, [(len(v), vectors.to_bytes(v), v.tolist(), i) for i, v in pairs]
    sql = (
        f"INSERT INTO {TABLE} (record_id, dims, vector) "  # noqa: S608 - the models' tables
        f"SELECT id, %s, %s FROM {records_table} WHERE id = %s "
        "ON CONFLICT (record_id) DO NOTHING"
    )
    return sql, [(len(v), vectors.to_bytes(v), i) for i, v in pairs]


def fill_missing(conn=connection, batch: int = FILL_BATCH) -> int:
    """Give every stored vector without one its ``pgvector`` value, ``batch`` rows per
    statement, each committed. Returns how many were filled (0 when not enabled)."""
    if conn.vendor != "postgresql" or not enabled():
        return 0
    filled = 0
    while True:
        with transaction.atomic(using=conn.alias), conn.cursor() as cursor:
            cursor.execute(
                f"SELECT record_id, vector FROM {TABLE} "  # noqa: S608 - our table
                f"WHERE {COLUMN} IS NULL ORDER BY record_id LIMIT %s FOR UPDATE SKIP LOCKED",
                [batch],
            )
            rows = cursor.fetchall()
            if not rows:
                return filled
            cursor.executemany(
                f"UPDATE {TABLE} SET {COLUMN} = %s::real[]::vector "  # noqa: S608 - ours
                "WHERE record_id = %s",
                [(vectors.from_bytes(data).tolist(), rid) for rid, data in rows],
            )
            filled += len(rows)


def error_bound(dims: int) -> float:
    """How far pgvector's inner product of two stored (unit, float32) vectors may be
    from ``math.sumprod``'s: a float32 sum of ``dims`` products is within
    γ(dims) = dims·u / (1 - dims·u) of the sum of their magnitudes (u = 2⁻²⁴, whatever
    the order of the additions), which is at most the product of the lengths; twice
    that, for safety."""
    u = 2.0**-24
    gamma = dims * u / (1 - dims * u)
    return 2 * gamma * _NORM_SLACK**2 + _SUMPROD_SLACK


def nearest(live_sql: str, live_params: Sequence, query: vectors.array, limit: int):
    """``records.vectors.nearest`` of the user's vectors (the records ``live_sql``
    selects, one ``id`` column), with PostgreSQL choosing the candidates: the same ids
    in the same order."""
    if limit < 1:
        return []
    dims = len(query)
    fetch = max(limit * CANDIDATE_FACTOR, limit + CANDIDATE_EXTRA)
    numbers = query.tolist()
    mine = f"FROM {TABLE} WHERE record_id IN ({live_sql}) AND dims = %s"
    sql = (
        f"(SELECT record_id, vector, {COLUMN} <#> %s::real[]::vector AS d {mine} "
        f"AND {COLUMN} IS NOT NULL ORDER BY d LIMIT %s) "
        f"UNION ALL (SELECT record_id, vector, NULL {mine} AND {COLUMN} IS NULL)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [numbers, *live_params, dims, fetch, *live_params, dims])
        rows = cursor.fetchall()
        stored = {rid: data for rid, data, _ in rows}
        ranked = vectors.ranked(query, list(stored.items()))
        distances = [d for _, _, d in rows if d is not None]
        if len(distances) < fetch:  # every vector of the user was read
            return [rid for rid, _ in ranked[:limit]]
        # An unread vector's pgvector score is at most the worst candidate's, so its
        # exact score is at most that plus the bound.
        bound = error_bound(dims)
        kth = ranked[limit - 1][1]
        if kth > round(-max(distances) + bound, 9):
            return [rid for rid, _ in ranked[:limit]]
        # A tie across the cut (or scores closer than the bound): read every vector whose
        # exact score could round to at least the limit-th one's.
        # CASE: the distance only for vectors of the query's dimension (pgvector refuses
        # two dimensions), whatever order PostgreSQL gives the conditions.
        cursor.execute(
            f"SELECT record_id, vector {mine} AND CASE WHEN dims = %s "  # noqa: S608 - ours
            f"THEN {COLUMN} <#> %s::real[]::vector <= %s ELSE false END",
            [*live_params, dims, dims, numbers, -kth + bound + 1e-9],
        )
        stored.update(cursor.fetchall())
    return [rid for rid, _ in vectors.ranked(query, list(stored.items()))[:limit]]
