"""Fast, deterministic loading of memory records for the benchmarks (PostgreSQL).

A million records through the ORM would take longer than the benchmarks, so records
are generated in the database: one INSERT ... SELECT per chunk of users, with text
from ``bench.corpus`` (importance, pins and tokens decided by the shipped rules, as
ingest would) and ages, hits and last access drawn from a hash of (user, position).
Rows land in the real table with its real indexes (GIN full-text, dedupe key), then
the table is analysed, as autovacuum would after a load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from records import rules as pure_rules
from records.models import MemoryRecord
from records.search_text import index_tokens
from records.tokens import count_tokens

from . import corpus

TABLE = MemoryRecord._meta.db_table
CORPUS_SIZE = 20_000


@dataclass(frozen=True)
class UserSpec:
    user_id: str
    records: int
    expired: int = 0  # the first ``expired`` records are older than the TTL (365 days)


def _corpus_rows(seed: int, size: int) -> tuple[list, ...]:
    texts = corpus.texts(size, seed)
    contents, importance, pinned, category, rule, tokens = [], [], [], [], [], []
    search_tokens = []
    for text in texts:
        d = pure_rules.decide(text, pure_rules.DEFAULT_RULES)
        contents.append(text)
        importance.append(d.importance if d.importance is not None else 0.2)
        pinned.append(d.pinned)
        category.append(d.category)
        rule.append(d.rule)
        tokens.append(count_tokens(text))
        search_tokens.append(index_tokens(text, "user"))  # the author the insert writes
    return contents, importance, pinned, category, rule, tokens, search_tokens


def _hash(salt: str) -> str:
    """A uniform [0, 1) number from (user, position, salt): deterministic, no setseed."""
    return (
        f"(('x' || substr(md5(u.user_id || ':' || g || '{salt}'), 1, 8))::bit(32)::bigint"
        " / 4294967296.0)"
    )


def load_records(
    app_name: str,
    users: Sequence[UserSpec],
    now: datetime,
    *,
    seed: int = 1,
    corpus_size: int = CORPUS_SIZE,
    chunk_rows: int = 200_000,
    half_life_days: float = 30.0,
) -> int:
    """Insert the users' records; returns how many rows were written."""
    rows = _corpus_rows(seed, corpus_size)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_corpus")
        cursor.execute(
            """
            CREATE TEMP TABLE bench_corpus AS
            SELECT (ord - 1)::int AS i, content, importance, pinned, category, rule, tokens,
                   search_tokens
            FROM unnest(%s::text[], %s::float8[], %s::bool[], %s::text[], %s::text[], %s::int[],
                        %s::text[])
                 WITH ORDINALITY AS c(content, importance, pinned, category, rule, tokens,
                                      search_tokens, ord)
            """,
            list(rows),
        )
        cursor.execute("ALTER TABLE bench_corpus ADD PRIMARY KEY (i)")
        written = 0
        chunk: list[UserSpec] = []
        rows = 0
        for spec in [*users, None]:
            if spec is not None:
                chunk.append(spec)
                rows += spec.records
            if chunk and (spec is None or rows >= chunk_rows):
                written += _insert_chunk(cursor, app_name, chunk, now, corpus_size, half_life_days)
                chunk, rows = [], 0
        cursor.execute(f"ANALYZE {TABLE}")
    return written


def _insert_chunk(cursor, app_name, chunk, now, corpus_size, half_life_days) -> int:
    age = f"CASE WHEN g < u.expired THEN 366 + {_hash('e')} * 60 ELSE {_hash('a')} * 330 END"
    cursor.execute(
        f"""
        WITH u AS (
            SELECT * FROM unnest(%(users)s::text[], %(counts)s::int[], %(expired)s::int[])
                   AS u(user_id, n, expired)
        ),
        r AS (
            SELECT u.user_id, g,
                   %(now)s::timestamptz - make_interval(secs => ({age}) * 86400) AS created,
                   {_hash("h")} AS h_hit, {_hash("k")} AS h_hits, {_hash("l")} AS h_last,
                   floor({_hash("c")} * %(k)s)::int AS ci
            FROM u, generate_series(0, u.n - 1) AS g
        )
        INSERT INTO {TABLE} (
            app_name, user_id, source_session_id, source_event_ids, dedupe_key, content,
            author, entry_timestamp, created_at, last_accessed_at, hits, importance,
            importance_source, importance_rule, category, pinned, tokens, is_summary,
            summary_sources, custom_metadata, search_tokens)
        SELECT %(app)s, r.user_id, 'sess-' || (r.g / 20), jsonb_build_array('ev-' || r.g),
               md5(%(app)s || r.user_id || ':' || r.g), c.content, 'user', r.created,
               r.created,
               CASE WHEN r.h_hit < 0.4
                    THEN r.created + (%(now)s::timestamptz - r.created) * r.h_last
                    ELSE r.created - make_interval(secs => %(hl)s) END,
               CASE WHEN r.h_hit < 0.4 THEN 1 + floor(power(r.h_hits, 3) * 60)::int ELSE 0 END,
               c.importance, CASE WHEN c.rule = '' THEN 'default' ELSE 'rule' END, c.rule,
               c.category, c.pinned, c.tokens, false, '[]'::jsonb, '{{}}'::jsonb,
               c.search_tokens
        FROM r JOIN bench_corpus c ON c.i = r.ci
        """,
        {
            "users": [s.user_id for s in chunk],
            "counts": [s.records for s in chunk],
            "expired": [s.expired for s in chunk],
            "now": now,
            "k": corpus_size,
            "app": app_name,
            "hl": half_life_days * 86400,
        },
    )
    return cursor.rowcount


def reset_data() -> None:
    """Empty every memadmin table (records, sessions, runs, ...), keep staff accounts."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT tablename FROM pg_tables WHERE schemaname = 'public'
              AND (tablename LIKE 'records\\_%%' OR tablename LIKE 'sweeper\\_%%')
            """
        )
        tables = [row[0] for row in cursor.fetchall()]
        if tables:
            cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    from records import touches

    client = touches.redis_client()
    if client is not None:
        keys = list(client.scan_iter(match=f"{touches.PREFIX}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])


def vacuum_analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {TABLE}")
