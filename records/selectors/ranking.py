"""One user's records ranked as the policy sees them (the user page), in the database:
live records best first with their rank and running tokens, then expired ones."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection
from django.utils.dateparse import parse_datetime

from .. import policy as pure
from .. import policy_sql
from ..models import MemoryRecord
from ..policy_sql import EXPIRED_SQL, LIVE_SQL

TABLE = MemoryRecord._meta.db_table


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
    params = policy_sql.base_params(app_name, now, p)
    params["user"] = user_id
    recency, frequency, importance, score = policy_sql.score_sql()
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
            WHERE {where} AND {LIVE_SQL}
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
            WHERE {where} AND {EXPIRED_SQL}
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
