"""Search: the user's unexpired records sharing a word with the query, ranked by BM25.

The tokenizer, the stop words and the ranking are ``records.search_text`` (pure, one for
both databases); each database here only finds the candidates, the user's records
sharing a query token. Search hits are touches (``records.touches``), and a query that
matches a recently evicted record counts as a regret (``records.feedback``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from django.db import connection

from memadmin import counters

from . import feedback, policy_sql, search_text
from . import policy as pure
from .ids import check_scope
from .models import MemoryRecord, UserMemoryStats
from .policies import policy_for
from .touches import record_touches

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10

# The tokenizer and the ranking are records.search_text (pure, one for both databases);
# each database only finds the candidates: the user's records sharing a query token.


def query_terms(query: str) -> list[str]:
    """The meaningful words of a query (folded, deduplicated, at most MAX_QUERY_WORDS)."""
    return search_text.query_words(query)


def search(
    app_name: str, user_id: str, query: str, now: datetime, *, limit: int = SEARCH_LIMIT
) -> list[MemoryRecord]:
    """Unexpired records sharing a token with the query, most relevant first (BM25)."""
    check_scope(app_name, user_id)
    if not isinstance(query, str):
        raise ValueError("query must be a string")
    terms = search_text.query_terms(query.replace("\x00", ""))
    counters.count_search(app_name)
    if not terms:
        return []
    if connection.vendor == "postgresql":
        rows = _candidates_postgres(app_name, user_id, terms, now)
    else:
        rows = _candidates_sqlite(app_name, user_id, terms, now)
    if not rows:
        return []
    scope = search_text.Scope(records=rows[0][5] or 0, mean_length=rows[0][6] or 0.0)
    candidates = [
        search_text.Candidate(r[0], search_text.term_counts(r[1], terms), r[2], r[3], r[4])
        for r in rows
    ]
    ids = search_text.rank(terms, candidates, scope, limit)
    if connection.vendor == "postgresql":
        by_id = {r[0]: r for r in rows}
        return [_record_from_row(by_id[i][7:]) for i in ids]
    by_id = MemoryRecord.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


_RECORD_FIELDS = MemoryRecord._meta.concrete_fields
_DATETIME_FIELDS = {
    i for i, f in enumerate(_RECORD_FIELDS) if f.get_internal_type() == "DateTimeField"
}
_RECORD_CONVERTERS = [(i, f) for i, f in enumerate(_RECORD_FIELDS) if hasattr(f, "from_db_value")]


def _candidates_postgres(app_name, user_id, terms, now) -> list[tuple]:
    """(id, search tokens, length, written_at, live, user's records, their mean length,
    then every column of the record).

    One statement, one round trip (search is on every turn): the app's TTL (the model's
    default when the app has no policy row yet) and the user's totals (UserMemoryStats)
    are read in it. Datetime columns come as text: parsing them for every candidate
    cost more than the rest; only the records returned are parsed (``_record_from_row``).
    """
    table = MemoryRecord._meta.db_table
    columns = ", ".join(
        f"r.{f.column}::text" if i in _DATETIME_FIELDS else f"r.{f.column}"
        for i, f in enumerate(_RECORD_FIELDS)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT r.id, r.search_tokens, r.tokens,
                   (extract(epoch FROM COALESCE(r.entry_timestamp, r.created_at))
                    * 1000000)::int8,
                   {policy_sql.live_sql("r.", policy_sql.PG_APP_TTL_CUTOFF)},
                   s.records, s.tokens::float8 / NULLIF(s.records, 0),
                   {columns}
            FROM {table} AS r
            LEFT JOIN {UserMemoryStats._meta.db_table} AS s
              ON s.app_name = %s AND s.user_id = %s
            WHERE r.app_name = %s AND r.user_id = %s AND r.search_vector @@ %s::tsquery
            """,  # noqa: S608 - table names are the models'; values are parameters
            [
                now,
                app_name,
                pure.DEFAULTS.ttl.days,
                app_name,
                user_id,
                app_name,
                user_id,
                " | ".join(_tsquery_lexeme(t.token) for t in terms),
            ],
        )
        return cursor.fetchall()


def _record_from_row(values: tuple) -> MemoryRecord:
    """A record from its columns as ``_candidates_postgres`` selects them."""
    values = list(values)
    for i in _DATETIME_FIELDS:
        if values[i] is not None:
            values[i] = datetime.fromisoformat(values[i]).astimezone(UTC)
    for i, model_field in _RECORD_CONVERTERS:
        values[i] = model_field.from_db_value(values[i], None, connection)
    return MemoryRecord.from_db(connection.alias, [f.attname for f in _RECORD_FIELDS], values)


def _tsquery_lexeme(token: str) -> str:
    """A lexeme quoted for tsquery input, taken verbatim (no parser, no stemming)."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _candidates_sqlite(app_name, user_id, terms, now) -> list[tuple]:
    """The same rows as ``_candidates_postgres``."""
    table = MemoryRecord._meta.db_table
    fts = f"{table}_fts"
    cutoff = pure.ttl_cutoff(now, policy_for(app_name).params())
    match = " OR ".join('"' + t.token.replace('"', '""') + '"' for t in terms)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT r.id, r.search_tokens, r.tokens,
                   COALESCE(r.entry_timestamp, r.created_at), {policy_sql.live_sql("r.", "%s")},
                   s.records, CAST(s.tokens AS REAL) / NULLIF(s.records, 0)
            FROM {table} AS r
            LEFT JOIN {UserMemoryStats._meta.db_table} AS s
              ON s.app_name = %s AND s.user_id = %s
            WHERE r.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)
              AND r.app_name = %s AND r.user_id = %s
            """,  # noqa: S608 - table names are the models'; values are parameters
            [
                connection.ops.adapt_datetimefield_value(cutoff),
                app_name,
                user_id,
                match,
                app_name,
                user_id,
            ],
        )
        return [
            (r[0], r[1], r[2], _microseconds(r[3]), bool(r[4]), r[5], r[6])
            for r in cursor.fetchall()
        ]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _microseconds(stored: str) -> int:
    """A datetime as SQLite stores it (UTC text), in microseconds since the epoch."""
    moment = datetime.fromisoformat(stored)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def note_regret(app_name: str, user_id: str, query: str, now: datetime) -> bool:
    """Count the search, and a regret hit if the query matches a recently evicted record
    (the searches are the regret rate's denominator). Never raises."""
    try:
        regret = feedback.is_regret(app_name, user_id, query_terms(query), now)
        feedback.bump_many(app_name, {feedback.SEARCHES: 1, feedback.REGRET_HITS: int(regret)}, now)
        return regret
    except Exception:
        log.exception("regret check failed; search result unaffected")
    return False


def touch(app_name: str, user_id: str, ids: Sequence[int], now: datetime) -> str:
    """Record that ``ids`` were returned. Never raises: a lost touch is only logged."""
    try:
        outcome = record_touches(app_name, user_id, ids, now)
    except Exception:
        log.exception("touch failed for %d records; search result unaffected", len(ids))
        outcome = "dropped"
    counters.count_touches(app_name, len(ids), outcome)
    return outcome
