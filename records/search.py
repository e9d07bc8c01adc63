"""Search: the user's unexpired records sharing a word with the query, ranked by BM25
(with ``MEMADMIN_EMBEDDER`` set, fused with the nearest vectors: ``records.embeddings``).

The tokenizer, the stop words and the ranking are ``records.search_text`` (pure, one for
both databases); each database here only finds the candidates, the user's records
sharing a query token. Search hits are touches (``records.touches``), and a query that
matches a recently evicted record counts as a regret (``records.feedback``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import psycopg
from asgiref.sync import sync_to_async
from django.db import connection

from memadmin import counters

from . import access_log, aio, embeddings, feedback, later, one_trip, policy_sql, search_text
from . import policy as pure
from .ids import check_scope
from .models import MemoryRecord, UserMemoryStats
from .policies import policy_for
from .storable import storable_text
from .touches import buffering, record_search, record_touches

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10

# The tokenizer and the ranking are records.search_text (pure, one for both databases);
# each database only finds the candidates: the user's records sharing a query token.


def query_terms(query: str) -> list[str]:
    """The meaningful words of a query (folded, deduplicated, at most MAX_QUERY_WORDS)."""
    return search_text.query_words(query)


class Found(NamedTuple):
    records: list[MemoryRecord]
    regret: bool  # the query matches a recently evicted record (``feedback``)
    term_hashes: list[str]  # the query's, keyed (``access_log.query_hashes``)


def search(
    app_name: str, user_id: str, query: str, now: datetime, *, limit: int = SEARCH_LIMIT
) -> list[MemoryRecord]:
    """Unexpired records sharing a token with the query, most relevant first (BM25)."""
    return find(app_name, user_id, query, now, limit=limit).records


def find(
    app_name: str, user_id: str, query: str, now: datetime, *, limit: int = SEARCH_LIMIT
) -> Found:
    """``search``, and whether the query is a regret hit, in one statement (plus one
    primary-key read of the ``limit`` records returned)."""
    ask = _ask(app_name, user_id, query, now)
    if ask is None:
        return Found([], False, [])
    if connection.vendor == "postgresql":
        rows = _candidates_postgres(ask)
    else:
        rows = _candidates_sqlite(ask)
    hybrid = embeddings.enabled()
    regret, ids = _ranked(ask, rows, limit, hybrid)
    if hybrid:  # MEMADMIN_EMBEDDER: fused with the nearest vectors (records.embeddings)
        ids = embeddings.hybrid(app_name, user_id, query, now, ids, limit)
        return Found(_records(ids), regret, ask.hashes)
    held = _held(rows, ids)
    return Found(_records(ids) if held is None else held, regret, ask.hashes)


def answers_in_loop() -> bool:
    """Whether ``afind`` and the note after it run on the event loop itself: on
    PostgreSQL, with the touch buffer (the note is then handed to ``records.later``) and
    no embedder (the embedder is a plain callable)."""
    return connection.vendor == "postgresql" and buffering() and not embeddings.enabled()


# Up to this many candidates ``afind`` ranks them on the event loop (about 2 ms of Python
# at 1,000); more are ranked in a thread, so the loop's other coroutines are not held up.
RANK_ON_LOOP = 1_000


async def afind(
    app_name: str, user_id: str, query: str, now: datetime, *, limit: int = SEARCH_LIMIT
) -> Found:
    """``find`` for a coroutine: where ``answers_in_loop``, its statements are awaited on
    a connection of ``records.aio`` (taken for the search, given back after), no thread;
    elsewhere ``find`` runs in Django's thread (``sync_to_async``)."""
    if not answers_in_loop():
        return await sync_to_async(find)(app_name, user_id, query, now, limit=limit)
    ask = _ask(app_name, user_id, query, now)
    if ask is None:
        return Found([], False, [])
    sql, params = _postgres_statement(ask)

    async def read(conn) -> tuple[bool, list[MemoryRecord]]:
        async with conn.cursor() as cursor:
            with aio.statement():
                rows = await one_trip.aexecute_prepared(
                    cursor, _PLANNER, sql, _PLANNER_BACK, params
                )
            if len(rows) <= RANK_ON_LOOP:
                regret, ids = _ranked(ask, rows, limit, False)
            else:  # milliseconds of Python: other coroutines of the loop run meanwhile
                regret, ids = await asyncio.to_thread(_ranked, ask, rows, limit, False)
            held = _held(rows, ids)
            if held is None:
                with aio.statement():
                    await cursor.execute(_RECORDS_SQL, [ids])
                    rows = await cursor.fetchall()
                held = _in_order(ids, rows)
        return regret, held

    regret, held = await aio.read(read)
    return Found(held, regret, ask.hashes)


class _Ask(NamedTuple):
    """A search's query, checked and tokenized, and its regret check as SQL."""

    app_name: str
    user_id: str
    query: str
    now: datetime
    terms: list
    hashes: list[str]
    regret_sql: str
    regret_params: list


def _ask(app_name: str, user_id: str, query: str, now: datetime) -> _Ask | None:
    """The search, checked and counted; None for a query with no meaningful word."""
    check_scope(app_name, user_id)
    if not isinstance(query, str):
        raise ValueError("query must be a string")
    # As stored text is (NUL and lone surrogates are U+FFFD there, which parts words):
    # a query holding one finds the words it parts in a record.
    query = storable_text(query)
    terms = search_text.query_terms(query)
    counters.count_search(app_name)
    if not terms:
        return None
    hashes = access_log.query_hashes(query)
    regret_sql, regret_params = feedback.regret_sql(app_name, user_id, hashes, now)
    return _Ask(app_name, user_id, query, now, terms, hashes, regret_sql, regret_params)


def _ranked(ask: _Ask, rows: list[tuple], limit: int, hybrid: bool) -> tuple[bool, list[int]]:
    """(regret, the ids of the best candidates, best first) from the statement's rows;
    with ``hybrid`` as many as fusion takes."""
    regret, records, mean_length = bool(rows[0][0]), rows[0][1] or 0, rows[0][2] or 0.0
    if rows[0][3] is None:  # no candidate: the one row the statement always returns
        return regret, []
    scope = search_text.Scope(records=records, mean_length=mean_length)
    words = frozenset(search_text.query_words(ask.query))
    depth = max(limit, embeddings.FUSION_DEPTH) if hybrid else limit
    return regret, search_text.rank_rows(ask.terms, words, rows, scope, depth, at=3)


def _held(rows: list[tuple], ids: list[int]) -> list[MemoryRecord] | None:
    """The records of ``ids`` built from the rows, when their whole rows came along
    (PostgreSQL, few candidates: no primary-key read); else None."""
    if not ids:
        return []
    if len(rows[0]) <= _FULL_AT or rows[0][_FULL_AT] is None:
        return None
    by_id = {r[3]: r for r in rows}
    return [_record_from_row(by_id[i][_FULL_AT:]) for i in ids]


def _records(ids: list[int]) -> list[MemoryRecord]:
    """The records of ``ids``, in that order (their ``RETURNED_FIELDS``)."""
    if not ids:
        return []
    if connection.vendor != "postgresql":
        by_id = MemoryRecord.objects.only(*RETURNED_FIELDS).in_bulk(ids)
        return [by_id[i] for i in ids if i in by_id]
    with connection.cursor() as cursor:
        cursor.execute(_RECORDS_SQL, [ids])
        return _in_order(ids, cursor.fetchall())


def _in_order(ids: list[int], rows: list[tuple]) -> list[MemoryRecord]:
    """Records from ``_RECORDS_SQL``'s rows, in the order of ``ids``."""
    by_id = {r.id: r for r in map(_record_from_row, rows)}
    return [by_id[i] for i in ids if i in by_id]


# What a returned record carries: the fields of its ``MemoryEntry``
# (``memory_service.to_memory_entry``) and its scope. The rest (search tokens, event ids,
# summary sources, eviction metadata) is deferred, as with ``.only()``, and read if a
# caller asks for it: most of a row's bytes and decoding, for none of an entry.
RETURNED_FIELDS = (
    "id",
    "app_name",
    "user_id",
    "source_session_id",
    "content",
    "author",
    "role",
    "entry_timestamp",
    "created_at",
    "importance",
    "importance_source",
    "category",
    "pinned",
    "custom_metadata",
)
_RECORD_FIELDS = [MemoryRecord._meta.get_field(name) for name in RETURNED_FIELDS]
_RECORD_ATTNAMES = [f.attname for f in _RECORD_FIELDS]
_RECORD_CONVERTERS = [(i, f) for i, f in enumerate(_RECORD_FIELDS) if hasattr(f, "from_db_value")]
# PostgreSQL: the RETURNED_FIELDS of the records whose ids are the parameter.
_RECORDS_SQL = (
    f"SELECT {', '.join(f.column for f in _RECORD_FIELDS)} "  # noqa: S608 - the model's table and columns
    f"FROM {MemoryRecord._meta.db_table} WHERE id = ANY(%s)"
)

# The statement both databases run: the regret check, the user's totals
# (UserMemoryStats) and the candidates (id, search tokens, length, written at in
# microseconds, live, author), always at least one row (the candidate columns NULL when none).
# Only these few columns of every candidate: reading whole rows for hundreds of
# candidates to return ten cost ten times the rest of the search.
_STATEMENT = """
    SELECT one.regret, s.records, {mean_length}, c.*
    FROM (SELECT {regret} AS regret) AS one
    LEFT JOIN {stats} AS s ON s.app_name = %s AND s.user_id = %s
    LEFT JOIN (
        SELECT r.id, r.search_tokens, r.tokens, {written_at}, {live}, r.author
        FROM {table} AS r
        WHERE {match} AND r.app_name = %s AND r.user_id = %s
    ) AS c ON 1 = 1
"""
# On PostgreSQL, when there are at most FOLD_CANDIDATES candidates (most searches of a
# user of a few hundred records) their RETURNED_FIELDS come too (from column _FULL_AT): the
# ten returned are then built from them, without the second round trip of the
# primary-key read. The candidates are read once (the CTE), counted once (an InitPlan),
# and only when that count is small is each one's whole row read by primary key (a
# gated lateral: ``OFFSET 0`` keeps it a per-candidate lookup, never a join over the
# table). A window count over the whole rows (what this replaced) carried every
# candidate's whole row through a tuple store and a CASE per column however many there
# were: on the bench's data the statement's server time fell from 55 to 22 ms (median)
# at 50,000 records, thousands of candidates, and by 15% (mean) at 5,000.
_PG_STATEMENT = """
    WITH c AS MATERIALIZED (
        SELECT r.id, r.search_tokens, r.tokens, {written_at}, {live}, r.author
        FROM {table} AS r
        WHERE r.search_vector @@ %s::tsquery AND r.app_name = %s AND r.user_id = %s
    )
    SELECT one.regret, s.records, s.tokens::float8 / NULLIF(s.records, 0), c.*, f.*
    FROM (SELECT {regret} AS regret) AS one
    LEFT JOIN {stats} AS s ON s.app_name = %s AND s.user_id = %s
    LEFT JOIN c ON 1 = 1
    LEFT JOIN LATERAL (
        SELECT {full} FROM {table} AS w
        WHERE w.id = c.id AND (SELECT count(*) FROM c) <= {fold} OFFSET 0
    ) AS f ON true
"""
FOLD_CANDIDATES = 64
_FULL_AT = 9  # the first whole-row column of a candidate row
_PG_FULL = ", ".join(f"w.{f.column}" for f in _RECORD_FIELDS)


def _candidates_postgres(ask: _Ask) -> list[tuple]:
    """(regret, user's records, their mean length, then id, search tokens, length,
    written_at, live, author of a candidate) per candidate.

    The app's TTL (the model's default when the app has no policy row yet) is read in
    the same statement.

    The planner prices a many-lexeme tsquery match like any operator (a fraction of a
    microsecond; it is about 3 µs on a record's tokens), so for a user holding most of
    a small table it scanned every row and matched each, and with sequential scans off
    it read all the user's rows through the (app, user) btree and matched each (20 ms
    for the bench's 5,000 records; 1.1 ms at 500) where the (app, user, vector) GIN
    index answers in 1.5 ms (0.3 ms). So for this statement sequential scans are off
    and operators are priced 100 times higher (``_PLANNER``: ``SET LOCAL``, in the same
    query string and so the same round trip, then back to the default, so an enclosing
    transaction keeps its settings); its other operators are a few index lookups. Priced
    so, a plan can pass ``jit_above_cost``, and compiling it took 0.8 s: JIT is off for
    the statement too. Only with client-side binding (Django's default), where a query
    string may hold several statements; there it is prepared once per connection
    (``one_trip.execute_prepared``): not parsed nor planned again.
    """
    sql, params = _postgres_statement(ask)
    with connection.cursor() as cursor:
        if not isinstance(cursor.cursor, psycopg.ClientCursor):  # server-side binding
            cursor.execute(sql, params)
            return cursor.fetchall()
        return one_trip.execute_prepared(cursor, _PLANNER, sql, _PLANNER_BACK, params)


def _postgres_statement(ask: _Ask) -> tuple[str, list]:
    """``_candidates_postgres``'s statement and its parameters."""
    sql = _PG_STATEMENT.format(
        regret=ask.regret_sql,
        stats=UserMemoryStats._meta.db_table,
        written_at="(extract(epoch FROM COALESCE(r.entry_timestamp, r.created_at))"
        " * 1000000)::int8",
        live=policy_sql.live_sql("r.", policy_sql.PG_APP_TTL_CUTOFF),
        table=MemoryRecord._meta.db_table,
        full=_PG_FULL,
        fold=FOLD_CANDIDATES,
    )
    params = [
        ask.now,
        ask.app_name,
        pure.DEFAULTS.ttl.days,
        " | ".join(_tsquery_lexeme(t.token) for t in ask.terms),
        ask.app_name,
        ask.user_id,
        *ask.regret_params,
        ask.app_name,
        ask.user_id,
    ]
    return sql, params


# The planner settings of the ranked statement (see ``_candidates_postgres``).
_PLANNER = (
    "SET LOCAL enable_seqscan = off",
    "SET LOCAL cpu_operator_cost = 0.25",
    "SET LOCAL jit = off",
    "SET LOCAL plan_cache_mode = force_generic_plan",
)
_PLANNER_BACK = (
    "SET LOCAL enable_seqscan TO DEFAULT",
    "SET LOCAL cpu_operator_cost TO DEFAULT",
    "SET LOCAL jit TO DEFAULT",
    "SET LOCAL plan_cache_mode TO DEFAULT",
)


def _record_from_row(values: tuple) -> MemoryRecord:
    """A record from its ``RETURNED_FIELDS`` columns, in that order."""
    values = list(values)
    for i, model_field in _RECORD_CONVERTERS:
        values[i] = model_field.from_db_value(values[i], None, connection)
    return MemoryRecord.from_db(connection.alias, _RECORD_ATTNAMES, values)


def _tsquery_lexeme(token: str) -> str:
    """A lexeme quoted for tsquery input, taken verbatim (no parser, no stemming)."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _candidates_sqlite(ask: _Ask) -> list[tuple]:
    """The same rows as ``_candidates_postgres``."""
    app_name, user_id, terms, now = ask.app_name, ask.user_id, ask.terms, ask.now
    table = MemoryRecord._meta.db_table
    fts = f"{table}_fts"
    cutoff = pure.ttl_cutoff(now, policy_for(app_name).params())
    match = " OR ".join('"' + t.token.replace('"', '""') + '"' for t in terms)
    sql = _STATEMENT.format(
        regret=ask.regret_sql,
        stats=UserMemoryStats._meta.db_table,
        mean_length="CAST(s.tokens AS REAL) / NULLIF(s.records, 0)",
        written_at="COALESCE(r.entry_timestamp, r.created_at)",
        live=policy_sql.live_sql("r.", "%s"),
        table=table,
        full="",
        match=f"r.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                *ask.regret_params,
                app_name,
                user_id,
                connection.ops.adapt_datetimefield_value(cutoff),
                match,
                app_name,
                user_id,
            ],
        )
        rows = cursor.fetchall()
    if rows[0][3] is None:
        return rows
    return [(*r[:6], _microseconds(r[6]), bool(r[7]), r[8]) for r in rows]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _microseconds(stored: str) -> int:
    """A datetime as SQLite stores it (UTC text), in microseconds since the epoch."""
    moment = datetime.fromisoformat(stored)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def note_regret(app_name: str, user_id: str, query: str, now: datetime) -> bool:
    """Check the query for a regret hit and count the search (``count_search``). Never
    raises. ``find`` checks in its own statement; this is for searches made elsewhere."""
    try:
        regret = feedback.is_regret(app_name, user_id, query_terms(query), now)
    except Exception:
        log.exception("regret check failed; search result unaffected")
        return False
    count_search(app_name, regret, now)
    return regret


def count_search(app_name: str, regret: bool, now: datetime) -> None:
    """Count the search, and a regret hit (the searches are the regret rate's
    denominator). Never raises: a lost count must not fail a user's turn."""
    try:
        feedback.bump_many(app_name, _counts(regret), now)
    except Exception:
        log.exception("search counters failed; search result unaffected")


def _counts(regret: bool) -> dict[str, int]:
    return {feedback.SEARCHES: 1, feedback.REGRET_HITS: int(regret)}


def note_after_answer(app_name: str, user_id: str, found: Found, now: datetime) -> None:
    """``note``, off the caller's path where it is one Redis round trip: with the touch
    buffer it runs on the background thread (``records.later``), so the answer does not
    wait for it; without one it runs here, its database writes on the caller's
    connection (and, on SQLite, never beside the caller's own)."""
    if buffering():
        later.submit(note, app_name, user_id, found, now)
    else:
        note(app_name, user_id, found, now)


def note(app_name: str, user_id: str, found: Found, now: datetime) -> None:
    """A search's writes: touch what it returned, keep its access history entry, count
    it. With Redis all three are buffered in one round trip and flushed by the touch
    flush; otherwise (or when Redis fails) the history and counters are written here.
    Never raises: a lost write never fails a turn."""
    ids = [r.id for r in found.records]
    history = access_log.history_entry(found.term_hashes, ids, now)
    try:
        outcome, buffered = record_search(
            app_name, user_id, ids, now, history, _counts(found.regret)
        )
    except Exception:
        log.exception("touch failed for %d records; search result unaffected", len(ids))
        outcome, buffered = "dropped", False
    counters.count_touches(app_name, len(ids), outcome)
    if not buffered:
        access_log.note_search(app_name, user_id, found.term_hashes, ids, now)
        count_search(app_name, found.regret, now)


def touch(app_name: str, user_id: str, ids: Sequence[int], now: datetime) -> str:
    """Record that ``ids`` were returned. Never raises: a lost touch is only logged."""
    try:
        outcome = record_touches(app_name, user_id, ids, now)
    except Exception:
        log.exception("touch failed for %d records; search result unaffected", len(ids))
        outcome = "dropped"
    counters.count_touches(app_name, len(ids), outcome)
    return outcome
