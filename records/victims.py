"""Victim selection in the database: the pure policy's answer without loading every record.

For each user over a cap, records are ranked by the blended score with a window
function, and a record is a victim while, before removing it, the user is still over
either cap:  n - k + 1 > max_records  or  s - t_k + tokens > max_tokens,  where n and s
are the user's live record count and tokens and t_k the running tokens of the k
lowest-scoring unpinned records. Evicting only ever lowers n and s, so this is exactly
the pure policy's loop. Users under both caps are filtered out by one aggregate before
anything is scored, so a pass over many users costs about one scan of their records.

PostgreSQL computes the score as a float expression (``date_part``, not ``extract``,
which returns numeric and is several times slower). SQLite calls database functions
registered from ``records.policy.score_terms``, so both rank exactly as Python does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from . import policy as pure
from .models import POLICY_RECORD_FIELDS, MemoryRecord

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


# --- SQLite: the policy's own arithmetic as database functions ----------------------


def _parse_sqlite_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _seconds_between(now: str, then: str) -> float:
    return (_parse_sqlite_datetime(now) - _parse_sqlite_datetime(then)).total_seconds()


def _sqlite_score(now, last, hits, importance, due, hl_hours, sat, wr, wf, wi, due_hl, term):
    params = _params_cache(hl_hours, sat, wr, wf, wi, due_hl)
    past_due = None if due is None else _seconds_between(now, due)
    s = pure.score_terms(_seconds_between(now, last), hits, importance, params, past_due)
    return {0: s.total, 1: s.recency, 2: s.frequency, 3: s.importance}[term]


_PARAMS: dict[tuple, pure.PolicyParams] = {}


def _params_cache(hl_hours, sat, wr, wf, wi, due_hl) -> pure.PolicyParams:
    key = (hl_hours, sat, wr, wf, wi, due_hl)
    params = _PARAMS.get(key)
    if params is None:
        from datetime import timedelta

        params = pure.PolicyParams(
            half_life=timedelta(hours=hl_hours),
            saturation_hits=int(sat),
            w_recency=wr,
            w_frequency=wf,
            w_importance=wi,
            past_due_half_life=timedelta(hours=due_hl),
        )
        if len(_PARAMS) > 256:
            _PARAMS.clear()
        _PARAMS[key] = params
    return params


@receiver(connection_created)
def register_sqlite_functions(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_function(
            "memadmin_score", 12, _sqlite_score, deterministic=True
        )


# --- the query -------------------------------------------------------------------------

# PostgreSQL raises "value out of range: underflow" where Python quietly gives 0.0, so
# the recency exponent is capped (0.5^60 is ~1e-18) and importance below 1e-15 counts as
# 0; with weights of 0 or at least 1e-6 (validated) no product can underflow, and the
# differences from Python's exact values vanish when scores are rounded to 1e-9.
# Every term is double precision, as in Python: a numeric literal (``ln(1.0 + hits)``)
# would make PostgreSQL compute the logarithm in numeric, several times slower. The
# score is rounded to 9 decimals in numeric (as Python's round) and then cast back to
# double precision: the cast keeps order and ties, and sorts far faster than numeric.
_PG_RECENCY = (
    "power(0.5::float8, least(60.0::float8, greatest(0.0::float8, date_part('epoch', "
    "%(now)s::timestamptz - {t}last_accessed_at)) / 3600.0::float8 / %(hl)s::float8))"
)
_PG_FREQUENCY = "least(1.0::float8, ln(1.0::float8 + {t}hits) / ln(1.0::float8 + %(sat)s::float8))"
# Past its due date, importance halves every past-due half-life (``dhl``, 0 = never).
_PG_IMPORTANCE = (
    "(CASE WHEN {t}importance < 1e-15 THEN 0.0::float8"
    " WHEN %(dhl)s::float8 > 0.0::float8 AND {t}due_at < %(now)s::timestamptz"
    " THEN {t}importance * power(0.5::float8, least(60.0::float8, date_part('epoch',"
    " %(now)s::timestamptz - {t}due_at) / 3600.0::float8 / %(dhl)s::float8))"
    " ELSE {t}importance END)"
)
_PG_RAW_SCORE = (
    "(%(wr)s::float8 * {recency} + %(wf)s::float8 * {frequency} + %(wi)s::float8 * {importance})"
)
_PG_SCORE = "round(" + _PG_RAW_SCORE + "::numeric, 9)::float8"

_SQLITE_ARGS = (
    "%(now)s, {t}last_accessed_at, {t}hits, {t}importance, {t}due_at,"
    " %(hl)s, %(sat)s, %(wr)s, %(wf)s, %(wi)s, %(dhl)s"
)


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


def _base_params(app_name: str, now: datetime, p: pure.PolicyParams) -> dict:
    ops = connection.ops
    return {
        "app": app_name,
        "now": now if connection.vendor == "postgresql" else ops.adapt_datetimefield_value(now),
        "cutoff": now - p.ttl
        if connection.vendor == "postgresql"
        else ops.adapt_datetimefield_value(now - p.ttl),
        "hl": p.half_life_hours,
        "sat": p.saturation_hits,
        "wr": p.w_recency,
        "wf": p.w_frequency,
        "wi": p.w_importance,
        "dhl": p.past_due_half_life_hours,
        "sup": p.supersede,
        "maxr": p.max_records,
        "maxt": p.max_tokens,
    }


def _score_sql(table_alias: str = "") -> tuple[str, str, str, str]:
    """SQL expressions of (recency, frequency, importance, score) over the columns of
    ``table_alias``; importance is the decayed one the score uses."""
    t = f"{table_alias}." if table_alias else ""
    if connection.vendor == "postgresql":
        terms = {
            "recency": _PG_RECENCY.format(t=t),
            "frequency": _PG_FREQUENCY.format(t=t),
            "importance": _PG_IMPORTANCE.format(t=t),
        }
        return (*terms.values(), _PG_SCORE.format(t=t, **terms))
    # Connections opened before this module was imported did not get the function yet.
    connection.ensure_connection()
    register_sqlite_functions(None, connection)
    args = _SQLITE_ARGS.format(t=t)
    return (
        f"memadmin_score({args}, 1)",
        f"memadmin_score({args}, 2)",
        f"memadmin_score({args}, 3)",
        f"memadmin_score({args}, 0)",
    )


def _expired_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    params = _base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, score = _score_sql()
    sql = f"""
        SELECT id, user_id, tokens, {recency} AS recency, {frequency} AS frequency,
               {importance} AS importance, {score} AS score, dedupe_key, source_session_id,
               'expired' AS reason, 0 AS k, CAST(NULL AS BIGINT) AS superseded_by
        FROM {TABLE}
        WHERE app_name = %(app)s {user_sql} AND NOT pinned AND created_at < %(cutoff)s
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
              AND (pinned OR created_at >= %(cutoff)s)
            WINDOW w AS (PARTITION BY user_id, slot
                         ORDER BY COALESCE(entry_timestamp, created_at) DESC, id DESC)
        ) AS s WHERE rn > 1 AND NOT pinned"""


def _superseded_sql(app_name, user_ids, now, p) -> tuple[str, dict]:
    params = _base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, score = _score_sql("m")
    sql = f"""
        SELECT m.id, m.user_id, m.tokens, {recency} AS recency, {frequency} AS frequency,
               {importance} AS importance, {score} AS score, m.dedupe_key,
               m.source_session_id, 'superseded' AS reason, 0 AS k, s.newer AS superseded_by
        FROM ({_superseded_ids(user_sql)}) AS s
        JOIN {TABLE} m ON m.id = s.id
    """
    return sql, params


# The score rounded to 9 decimals in double precision, from the unrounded ``x``: the
# same value as round(x::numeric, 9)::float8 (which converts x to 15 significant digits,
# then rounds half away from zero), and ~6x cheaper. The two can only disagree when x * 1e9
# lies within ~1e-6 of a half (conversion and product errors; |x| <= 1 as the weights sum
# to 1), so there the numeric rounding is used itself.
_PG_ROUND_9 = (
    "CASE WHEN abs({x} * 1e9::float8 - floor({x} * 1e9::float8) - 0.5::float8) < 1e-5::float8"
    " THEN round({x}::numeric, 9)::float8 ELSE round({x} * 1e9::float8) / 1e9::float8 END"
)


def _pg_unrounded_score() -> str:
    return _PG_RAW_SCORE.format(
        t="",
        recency=_PG_RECENCY.format(t=""),
        frequency=_PG_FREQUENCY.format(t=""),
        importance=_PG_IMPORTANCE.format(t=""),
    )


# The victims' own rows by primary key; OFFSET 0 keeps the planner from flattening the
# lookup into a hash join over the whole table.
_PG_VICTIM_ROWS = f"""CROSS JOIN LATERAL (
            SELECT last_accessed_at, hits, importance, due_at, dedupe_key, source_session_id
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
               r.k, CAST(NULL AS BIGINT) AS superseded_by
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
    params = _base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    *_, score = _score_sql()
    recency, frequency, importance, _ = _score_sql("m")
    if connection.vendor == "postgresql":
        victim_rows = _PG_VICTIM_ROWS
    else:
        victim_rows = f"JOIN {TABLE} m ON m.id = r.id"
    sql = f"""
        WITH superseded AS ({_superseded_ids(user_sql)}),
        totals AS (
            SELECT user_id, count(*) AS n, sum(tokens) AS s
            FROM {TABLE}
            WHERE app_name = %(app)s {user_sql} AND (pinned OR created_at >= %(cutoff)s)
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
                WHERE app_name = %(app)s {user_sql} AND NOT pinned
                  AND created_at >= %(cutoff)s
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
    params = _base_params(app_name, now, p)
    user_sql = _user_filter(user_ids, params)
    recency, frequency, importance, _ = _score_sql("m")
    unpinned = "NOT pinned AND created_at >= %(cutoff)s AND id NOT IN (SELECT id FROM superseded)"
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
            WHERE app_name = %(app)s {user_sql} AND (pinned OR created_at >= %(cutoff)s)
              AND id NOT IN (SELECT id FROM superseded)
            HAVING count(*) > %(maxr)s OR sum(tokens) > %(maxt)s
        ),
        ranked AS (
            SELECT c.id, c.user_id, c.tokens, c.score,
                   row_number() OVER w AS k,
                   sum(c.tokens) OVER w AS t
            FROM totals CROSS JOIN LATERAL (
                SELECT id, user_id, tokens, last_accessed_at, created_at,
                       {_PG_ROUND_9.format(x="raw.x")} AS score
                FROM (
                    -- OFFSET 0: x is computed once per row, not once per use above.
                    SELECT id, user_id, tokens, last_accessed_at, created_at,
                           {_pg_unrounded_score()} AS x
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


def _fetch(sql: str, params: dict) -> list[SelectedVictim]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = []
    for row in rows:
        id, user_id, tokens, recency, frequency, importance, score, key, session_id = row[:9]
        reason, superseded_by = row[9], row[11]
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
    app_name: str, user_ids: Sequence[str] | None, now: datetime, p: pure.PolicyParams
) -> list[SelectedVictim]:
    """Expired records, then superseded ones, then cap victims, for one user, some users,
    or (None) every user.

    One statement (enforcement runs it on every ingest: a round trip saved counts).
    """
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
    return _fetch(sql, params)


def select_victims_python(
    app_name: str, user_id: str, now: datetime, p: pure.PolicyParams
) -> list[pure.Victim]:
    """The article's approach: list every record into Python, score, sort (the baseline)."""
    records = [
        r.as_policy_record()
        for r in MemoryRecord.objects.filter(app_name=app_name, user_id=user_id)
        .order_by("id")
        .only(*POLICY_RECORD_FIELDS)
    ]
    return pure.HybridPolicy(p).victims(records, now)


# --- one user's records ranked as the policy sees them (the user page) -----------------


@dataclass(frozen=True, slots=True)
class RankedRow:
    record: pure.Record
    score: pure.Score
    expired: bool
    rank: int | None  # among live records, best first
    cumulative_tokens: int | None  # of this record and every better one


@dataclass(frozen=True, slots=True)
class RankSummary:
    records: int
    tokens: int
    pinned: int
    expired: int
    over_cap: int
    first_over_rank: int | None  # where the cap line is drawn


def _as_datetime(value):
    if isinstance(value, str):  # SQLite hands raw SQL datetimes back as text
        from django.utils.dateparse import parse_datetime

        parsed = parse_datetime(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return value


def rank_user(
    app_name: str,
    user_id: str,
    now: datetime,
    p: pure.PolicyParams,
    *,
    offset: int = 0,
    limit: int | None = None,
    record_id: int | None = None,
) -> tuple[list[RankedRow], RankSummary | None]:
    """A slice of the user's records, live ones best first then expired ones, with the
    summary of all of them; computed in the database, so a user's thousands of records
    are ranked without being loaded. ``record_id`` picks that one record's row instead.
    """
    params = _base_params(app_name, now, p)
    params["user"] = user_id
    recency, frequency, importance, score = _score_sql()
    columns = (
        f"id, created_at, last_accessed_at, hits, importance, pinned, tokens, due_at, "
        f"{recency} AS recency, {frequency} AS frequency, {importance} AS decayed,"
        f" {score} AS score"
    )
    where = "app_name = %(app)s AND user_id = %(user)s"
    pinned_int = "CASE WHEN pinned THEN 1 ELSE 0 END"
    sql = f"""
        WITH live AS (
            SELECT {columns} FROM {TABLE}
            WHERE {where} AND (pinned OR created_at >= %(cutoff)s)
        ),
        ranked AS (
            SELECT live.*, 0 AS part,
                   row_number() OVER w AS rnk, sum(tokens) OVER w AS cum
            FROM live
            WINDOW w AS (ORDER BY score DESC, last_accessed_at DESC, created_at DESC, id DESC
                         ROWS UNBOUNDED PRECEDING)
        ),
        everything AS (
            SELECT * FROM ranked
            UNION ALL
            SELECT {columns}, 1 AS part, NULL AS rnk, NULL AS cum FROM {TABLE}
            WHERE {where} AND NOT pinned AND created_at < %(cutoff)s
        ),
        summed AS (
            SELECT everything.*,
                   count(*) OVER () AS n_all,
                   sum(tokens) OVER () AS t_all,
                   sum({pinned_int}) OVER () AS p_all,
                   sum(part) OVER () AS e_all,
                   sum(CASE WHEN part = 0 AND (rnk > %(maxr)s OR cum > %(maxt)s)
                       THEN 1 ELSE 0 END) OVER () AS over_all,
                   min(CASE WHEN part = 0 AND (rnk > %(maxr)s OR cum > %(maxt)s)
                       THEN rnk END) OVER () AS first_over
            FROM everything
        )
        SELECT * FROM summed
    """
    if record_id is not None:
        sql += " WHERE id = %(record_id)s"
        params["record_id"] = record_id
    sql += " ORDER BY part, rnk, score DESC, id"
    if limit is not None:
        sql += " LIMIT %(limit)s OFFSET %(offset)s"
        params.update(limit=limit, offset=offset)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out, summary = [], None
    for row in rows:
        (
            id,
            created,
            accessed,
            hits,
            importance,
            pinned,
            tokens,
            due,
            rec,
            freq,
            decayed,
            total,
            part,
            rnk,
            cum,
            n_all,
            t_all,
            p_all,
            e_all,
            over_all,
            first_over,
        ) = row
        out.append(
            RankedRow(
                record=pure.Record(
                    id,
                    _as_datetime(created),
                    _as_datetime(accessed),
                    hits,
                    importance,
                    bool(pinned),
                    tokens,
                    _as_datetime(due),
                ),
                score=pure.Score(float(rec), float(freq), float(decayed), float(total)),
                expired=bool(part),
                rank=rnk,
                cumulative_tokens=None if cum is None else int(cum),
            )
        )
        summary = RankSummary(
            int(n_all),
            int(t_all or 0),
            int(p_all or 0),
            int(e_all or 0),
            int(over_all or 0),
            first_over,
        )
    return out, summary
