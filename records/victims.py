"""Victim selection in the database: the pure policy's answer without loading every record.

For each user over a cap, records are ranked by the blended score with a window
function, and a record is a victim while, before removing it, the user is still over
either cap:  n - k + 1 > max_records  or  s - t_k + tokens > max_tokens,  where n and s
are the user's live record count and tokens and t_k the running tokens of the k
lowest-scoring unpinned records. Evicting only ever lowers n and s, so this is exactly
the pure policy's loop. Users under both caps are filtered out by one aggregate before
anything is scored, so a pass over many users costs about one scan of their records.

The score and the live/expired predicates come from ``records.policy_sql``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from . import policy as pure
from . import policy_sql, server_functions
from .models import MemoryRecord
from .policy_sql import EXPIRED_SQL, LIVE_SQL, UNPINNED_LIVE_SQL

TABLE = MemoryRecord._meta.db_table


@dataclass(frozen=True, slots=True)
class SelectedVictim:
    id: int
    user_id: str
    reason: str
    tokens: int
    score: pure.Score
    dedupe_key: str
    session_id: str = ""
    superseded_by: int | None = None  # reason "superseded": the newer record's id


def _user_filter(user_ids: Sequence[str] | None, params: dict) -> str:
    if user_ids is None:
        return ""
    if len(user_ids) == 1:
        params["user"] = user_ids[0]
        return "AND user_id = %(user)s"
    if connection.vendor == "postgresql":
        params["users"] = list(user_ids)
        return "AND user_id = ANY(%(users)s)"
    names = []
    for i, user_id in enumerate(user_ids):
        params[f"u{i}"] = user_id
        names.append(f"%(u{i})s")
    return f"AND user_id IN ({', '.join(names)})"


def _expired_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    params = policy_sql.base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, score = policy_sql.score_sql()
    sql = f"""
        SELECT id, user_id, tokens, {recency} AS recency, {frequency} AS frequency,
               {importance} AS importance, {score} AS score, dedupe_key, source_session_id,
               'expired' AS reason, 0 AS k, CAST(NULL AS BIGINT) AS superseded_by, content
        FROM {TABLE}
        WHERE app_name = %(app)s {user_sql} AND {EXPIRED_SQL}
    """
    return sql, params


def _superseded_ids(user_sql: str) -> str:
    """(id, newer): every unpinned live record with a slot and the newest live record of
    that slot when it is not the newest itself (stated time, then id). Empty unless the
    policy supersedes (``sup``)."""
    return f"""
        SELECT id, newer FROM (
            SELECT id, pinned, row_number() OVER w AS rn, first_value(id) OVER w AS newer
            FROM {TABLE}
            WHERE app_name = %(app)s {user_sql} AND %(sup)s AND slot IS NOT NULL AND slot <> ''
              AND {LIVE_SQL}
            WINDOW w AS (PARTITION BY user_id, slot
                         ORDER BY COALESCE(entry_timestamp, created_at) DESC, id DESC)
        ) AS s WHERE rn > 1 AND NOT pinned"""


def _superseded_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    params = policy_sql.base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, score = policy_sql.score_sql("m")
    sql = f"""
        SELECT m.id, m.user_id, m.tokens, {recency} AS recency, {frequency} AS frequency,
               {importance} AS importance, {score} AS score, m.dedupe_key,
               m.source_session_id, 'superseded' AS reason, 0 AS k, s.newer AS superseded_by,
               m.content
        FROM ({_superseded_ids(user_sql)}) AS s
        JOIN {TABLE} m ON m.id = s.id
    """
    return sql, params


# The victims' own rows by primary key; OFFSET 0 keeps the planner from flattening the
# lookup into a hash join over the whole table.
_PG_VICTIM_ROWS = f"""CROSS JOIN LATERAL (
            SELECT last_accessed_at, hits, importance, due_at, dedupe_key, source_session_id,
                   content
            FROM {TABLE} WHERE id = r.id OFFSET 0) AS m"""


def _ranked_victims(recency: str, frequency: str, importance: str, victim_rows: str) -> str:
    """The end of both cap queries: the window over ``c`` (the ranked candidates, in the
    ``ranked`` CTE), then the rows still over a cap, with their terms and reason."""
    return f"""
            WINDOW w AS (PARTITION BY c.user_id
                         ORDER BY c.score, c.last_accessed_at, c.created_at, c.id
                         ROWS UNBOUNDED PRECEDING)
        )
        SELECT r.id, r.user_id, r.tokens, {recency} AS recency, {frequency} AS frequency,
               {importance} AS importance, r.score, m.dedupe_key, m.source_session_id,
               CASE WHEN totals.n - r.k + 1 > %(maxr)s THEN 'record_cap' ELSE 'token_cap' END
                 AS reason,
               r.k, CAST(NULL AS BIGINT) AS superseded_by, m.content
        FROM ranked r
        JOIN totals ON totals.user_id = r.user_id
        {victim_rows}
        WHERE totals.n - r.k + 1 > %(maxr)s OR totals.s - r.t + r.tokens > %(maxt)s
    """


def _cap_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    """Cap victims of every user over a cap, with their rank ``k``.

    Only what the ranking needs (id, user, tokens, score and the tie-breakers) goes
    through the sort and the window; the terms, dedupe key and session are read for the
    victims alone. Totals are one aggregate, not a materialised copy of the records.
    """
    if connection.vendor == "postgresql" and user_ids is not None and len(user_ids) == 1:
        return _pg_one_user_cap_sql(app_name, user_ids, now, p)
    params = policy_sql.base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    *_, score = policy_sql.score_sql()
    recency, frequency, importance, _ = policy_sql.score_sql("m")
    if connection.vendor == "postgresql":
        victim_rows = _PG_VICTIM_ROWS
    else:
        victim_rows = f"JOIN {TABLE} m ON m.id = r.id"
    sql = f"""
        WITH superseded AS ({_superseded_ids(user_sql)}),
        totals AS (
            SELECT user_id, count(*) AS n, sum(tokens) AS s
            FROM {TABLE}
            WHERE app_name = %(app)s {user_sql} AND {LIVE_SQL}
              AND id NOT IN (SELECT id FROM superseded)
            GROUP BY user_id
            HAVING count(*) > %(maxr)s OR sum(tokens) > %(maxt)s
        ),
        ranked AS (
            SELECT c.id, c.user_id, c.tokens, c.score,
                   row_number() OVER w AS k,
                   sum(c.tokens) OVER w AS t
            FROM (
                SELECT id, user_id, tokens, last_accessed_at, created_at, {score} AS score
                FROM {TABLE}
                WHERE app_name = %(app)s {user_sql} AND {UNPINNED_LIVE_SQL}
                  AND user_id IN (SELECT user_id FROM totals)
                  AND id NOT IN (SELECT id FROM superseded)
            ) AS c
{_ranked_victims(recency, frequency, importance, victim_rows)}"""
    return sql, params


def _pg_one_user_cap_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    """PostgreSQL, one user (enforcement after every write): only the lowest-ranked
    records that can be victims go through the sort (a top-N heap, not a sort of all of
    them) and the window; 100,000 records: 300 -> 125 ms. (Across many users the shared
    window above is faster than a ranking per user.)

    How many can be victims is bounded from the totals: the record cap needs n - max
    records; the token cap needs a prefix whose tokens cover the excess, and a prefix of
    length z + ceil(excess / m) does (z records of 0 tokens, m the smallest positive
    count). Victims are a prefix of the ranking and the ranking is a total order, so the
    first ``lim`` records ranked alone rank exactly as they do among all of them.
    """
    params = policy_sql.base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, _ = policy_sql.score_sql("m")
    unpinned = f"{UNPINNED_LIVE_SQL} AND id NOT IN (SELECT id FROM superseded)"
    min_positive = f"min(tokens) FILTER (WHERE {unpinned} AND tokens > 0)"
    # One user: an aggregate without GROUP BY, which the planner knows is one row (with
    # GROUP BY it guessed ~100 users, costed ~100 rankings and paid JIT compilation,
    # ~35 ms, on every ingest).
    sql = f"""
        WITH superseded AS ({_superseded_ids(user_sql)}),
        totals AS (
            SELECT %(user)s::text AS user_id, count(*) AS n, sum(tokens) AS s,
                   greatest(count(*) - %(maxr)s, CASE
                     WHEN sum(tokens) <= %(maxt)s THEN 0
                     WHEN {min_positive} IS NULL THEN count(*)
                     ELSE count(*) FILTER (WHERE {unpinned} AND tokens = 0)
                          + (sum(tokens) - %(maxt)s + {min_positive} - 1) / {min_positive}
                   END) AS lim
            FROM {TABLE}
            WHERE app_name = %(app)s {user_sql} AND {LIVE_SQL}
              AND id NOT IN (SELECT id FROM superseded)
            HAVING count(*) > %(maxr)s OR sum(tokens) > %(maxt)s
        ),
        ranked AS (
            SELECT c.id, c.user_id, c.tokens, c.score,
                   row_number() OVER w AS k,
                   sum(c.tokens) OVER w AS t
            FROM totals CROSS JOIN LATERAL (
                SELECT id, user_id, tokens, last_accessed_at, created_at,
                       {policy_sql.PG_ROUND_9.format(x="raw.x")} AS score
                FROM (
                    -- OFFSET 0: x is computed once per row, not once per use above.
                    SELECT id, user_id, tokens, last_accessed_at, created_at,
                           {policy_sql.pg_unrounded_score()} AS x
                    FROM {TABLE}
                    WHERE app_name = %(app)s AND user_id = totals.user_id AND {unpinned}
                    OFFSET 0
                ) AS raw
                ORDER BY score, last_accessed_at, created_at, id
                LIMIT totals.lim
            ) AS c
{_ranked_victims(recency, frequency, importance, _PG_VICTIM_ROWS)}"""
    return sql, params


def select_expired(
    app_name: str, user_ids: Sequence[str] | None, now: datetime, p: pure.PolicyParams
) -> list[SelectedVictim]:
    """Unpinned records older than the TTL."""
    sql, params = _expired_sql(app_name, user_ids, now, p)
    return _fetch(sql + " ORDER BY user_id, id", params)


def select_cap_victims(
    app_name: str, user_ids: Sequence[str] | None, now: datetime, p: pure.PolicyParams
) -> list[SelectedVictim]:
    """Lowest-scoring unpinned live records of every user over a cap, in eviction order."""
    sql, params = _cap_sql(app_name, user_ids, now, p)
    return _fetch(sql + " ORDER BY r.user_id, r.k", params)


@dataclass(frozen=True)
class VictimTotals:
    records: int
    users: int
    tokens: int
    by_reason: dict[str, int]


def count_victims(
    app_name: str, user_ids: Sequence[str] | None, now: datetime, p: pure.PolicyParams
) -> VictimTotals:
    """How many records (of how many users, how many tokens) the policy would evict.

    The same selection as select_victims, aggregated in the database, so previewing a
    policy change over a large app returns a handful of numbers, not every victim.
    """
    expired, superseded, capped, params = _parts(app_name, user_ids, now, p)
    sql = f"""
        SELECT v.reason, count(*), count(DISTINCT v.user_id), coalesce(sum(v.tokens), 0)
        FROM (SELECT reason, user_id, tokens FROM ({expired}) AS e
              UNION ALL
              SELECT reason, user_id, tokens FROM ({superseded}) AS s
              UNION ALL
              SELECT reason, user_id, tokens FROM ({capped}) AS c) AS v
        GROUP BY v.reason
    """
    users_sql = f"""
        SELECT count(DISTINCT v.user_id)
        FROM (SELECT user_id FROM ({expired}) AS e
              UNION ALL
              SELECT user_id FROM ({superseded}) AS s
              UNION ALL
              SELECT user_id FROM ({capped}) AS c) AS v
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        cursor.execute(users_sql, params)
        users = cursor.fetchone()[0]
    by_reason = {reason: n for reason, n, _, _ in rows}
    return VictimTotals(
        records=sum(by_reason.values()),
        users=users,
        tokens=int(sum(t for *_, t in rows)),
        by_reason=by_reason,
    )


def _fetch(sql: str, params: dict, contents: dict[int, str] | None = None) -> list[SelectedVictim]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return victims_from_rows(cursor.fetchall(), contents)


def victims_from_rows(rows, contents: dict[int, str] | None = None) -> list[SelectedVictim]:
    """The victims of ``victims_query``'s rows; with ``contents``, each victim's text is
    put there by id (eviction hashes its terms: ``records.store.evict``), never on the
    victim itself."""
    out = []
    for row in rows:
        id, user_id, tokens, recency, frequency, importance, score, key, session_id = row[:9]
        reason, superseded_by = row[9], row[11]
        if contents is not None:
            contents[id] = row[12]
        out.append(
            SelectedVictim(
                id=id,
                user_id=user_id,
                reason=reason,
                tokens=tokens,
                score=pure.Score(float(recency), float(frequency), importance, float(score)),
                dedupe_key=key or "",
                session_id=session_id or "",
                superseded_by=superseded_by,
            )
        )
    return out


def _parts(app_name, user_ids, now, p) -> tuple[str, str, str, dict]:
    """The expired, superseded and cap selections, which take the same named parameters
    (so one mapping serves their union)."""
    expired, params = _expired_sql(app_name, user_ids, now, p)
    superseded, superseded_params = _superseded_sql(app_name, user_ids, now, p)
    capped, cap_params = _cap_sql(app_name, user_ids, now, p)
    params.update(superseded_params)
    params.update(cap_params)
    return expired, superseded, capped, params


def select_victims(
    app_name: str,
    user_ids: Sequence[str] | None,
    now: datetime,
    p: pure.PolicyParams,
    contents: dict[int, str] | None = None,
) -> list[SelectedVictim]:
    """Expired records, then superseded ones, then cap victims, for one user, some users,
    or (None) every user; their texts go into ``contents`` when given.

    One statement (enforcement runs it on every ingest: a round trip saved counts); for
    one user, its server-side function when the connection has it.
    """
    if user_ids is not None and len(user_ids) == 1:
        sql, params = one_user_victims_query(app_name, user_ids[0], now, p)
    else:
        sql, params = victims_query(app_name, user_ids, now, p)
    return _fetch(sql, params, contents)


def victims_query(
    app_name: str, user_ids: Sequence[str] | None, now: datetime, p: pure.PolicyParams
) -> tuple[str, dict]:
    """``select_victims`` as one statement and its named parameters (an ingest on
    PostgreSQL sends it with its insert); ``victims_from_rows`` reads its rows."""
    expired, superseded, capped, params = _parts(app_name, user_ids, now, p)
    sql = f"""
        SELECT * FROM (
            SELECT e.*, 0 AS part_, e.id AS order_ FROM ({expired}) AS e
            UNION ALL
            SELECT s.*, 1 AS part_, s.id AS order_ FROM ({superseded}) AS s
            UNION ALL
            SELECT c.*, 2 AS part_, c.k AS order_ FROM ({capped}) AS c
        ) AS v
        ORDER BY v.part_, v.user_id, v.order_
    """
    return sql, params


# The one-user selection (what every ingest runs) as a server-side function: see
# records.server_functions. Its text does not depend on the values (they are parameters).
server_functions.register(
    server_functions.Statement(
        "victims",
        lambda: victims_query("", [""], datetime.now(UTC), pure.PolicyParams()),
        types={
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
        },
    )
)


def one_user_victims_query(
    app_name: str, user_id: str, now: datetime, p: pure.PolicyParams
) -> tuple[str, dict]:
    """``victims_query`` for one user: the call of its server-side function when this
    connection has it, else the statement itself. The same rows, in the same order."""
    call = server_functions.call("victims")
    if call is None:
        return victims_query(app_name, [user_id], now, p)
    params = policy_sql.base_params(app_name, now, p)
    params["user"] = user_id
    return call, params
