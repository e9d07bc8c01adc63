"""The overview's numbers: what the article says to measure first, all set-based SQL.

Records and tokens per user (p50/p99/max against the caps), growth per week, session
event counts at p99, evictions per day by reason. Nothing here loops over records in
Python; every function is one query whatever the number of records.

Where the ORM cannot express a query (percentiles, aggregates of aggregates), SQL is
composed from ORM-compiled subqueries and quoted identifiers named in this module;
every value travels as a parameter (hence the S608 exemptions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import connection
from django.db.models import Count, Min, QuerySet
from django.db.models.functions import TruncDate

from memadmin.stats import interpolate

from .. import feedback
from .. import policy as pure
from ..models import (
    AgentSession,
    DailyCounter,
    EvictionEvent,
    EvictionReason,
    Policy,
    UserMemoryStats,
)

PERCENTILES = (50, 99)
DEFAULT_MAX_RECORDS = pure.DEFAULTS.max_records
DEFAULT_MAX_TOKENS = pure.DEFAULTS.max_tokens

# Eviction only, named one by one: erasure is a different process with its own figures,
# and a reason added later for it must never leak into eviction charts.
EVICTION_REASONS = (
    pure.EXPIRED,
    pure.RECORD_CAP,
    pure.TOKEN_CAP,
    EvictionReason.MANUAL.value,
    EvictionReason.SUMMARISED.value,
    EvictionReason.SUPERSEDED.value,
)


def eviction_reasons() -> tuple[str, ...]:
    return EVICTION_REASONS


@dataclass(frozen=True)
class Spread:
    count: int
    p50: float
    p99: float
    max: float


def _sql(queryset: QuerySet) -> tuple[str, tuple]:
    sql, params = queryset.order_by().query.sql_with_params()
    return sql, tuple(params)


def spread_by_group(queryset: QuerySet, group: str, columns: list[str]) -> dict[str, dict]:
    """p50, p99 and max of each column of ``queryset`` (a values() query), per group.

    {group value: {column: Spread}}. Percentiles interpolate linearly between the two
    nearest values (PostgreSQL's percentile_cont). PostgreSQL computes them natively;
    elsewhere (SQLite) window functions pick the two neighbours and Python
    interpolates. One query either way.
    """
    inner, params = _sql(queryset)
    q = connection.ops.quote_name
    g = q(group)
    if connection.vendor == "postgresql":
        selects = []
        for c in columns:
            selects += [
                f"percentile_cont({p / 100}) WITHIN GROUP (ORDER BY {q(c)})" for p in PERCENTILES
            ]
            selects.append(f"MAX({q(c)})")
        sql = (
            f"SELECT {g}, COUNT(*), {', '.join(selects)} FROM ({inner}) AS s "  # noqa: S608
            f"GROUP BY {g} ORDER BY {g}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        out = {}
        width = len(PERCENTILES) + 1
        for row in rows:
            key, count, values = row[0], row[1], row[2:]
            out[key] = {
                c: Spread(count, *(float(v) for v in values[i * width : (i + 1) * width]))
                for i, c in enumerate(columns)
            }
        return out

    # Portable: rank each column within its group, keep the two neighbours of each
    # percentile's position (integer division = floor for these non-negative values).
    ranks = ", ".join(
        f"ROW_NUMBER() OVER (PARTITION BY {g} ORDER BY {q(c)}) - 1 AS {q('r_' + c)}"
        for c in columns
    )
    picks = []
    for c in columns:
        for p in PERCENTILES:
            k = f"({p} * (n_ - 1)) / 100"
            picks.append(f"MAX(CASE WHEN {q('r_' + c)} = {k} THEN {q(c)} END)")
            picks.append(f"MAX(CASE WHEN {q('r_' + c)} = {k} + 1 THEN {q(c)} END)")
        picks.append(f"MAX({q(c)})")
    sql = (
        f"WITH s AS ({inner}), "  # noqa: S608
        f"r AS (SELECT s.*, {ranks}, COUNT(*) OVER (PARTITION BY {g}) AS n_ FROM s) "
        f"SELECT {g}, MAX(n_), {', '.join(picks)} FROM r GROUP BY {g} ORDER BY {g}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    out = {}
    width = 2 * len(PERCENTILES) + 1
    for row in rows:
        key, count, values = row[0], row[1], row[2:]
        out[key] = {}
        for i, c in enumerate(columns):
            chunk = values[i * width : (i + 1) * width]
            pcts = [
                _interpolate(p, count, chunk[2 * j], chunk[2 * j + 1])
                for j, p in enumerate(PERCENTILES)
            ]
            out[key][c] = Spread(count, *pcts, float(chunk[-1]))
    return out


def _interpolate(percent: int, count: int, low, high) -> float:
    # The position as the SQL above computes it (its floor picked ``low``).
    return interpolate(low, high, percent * (count - 1) / 100)


def _per_user(app_name: str | None = None) -> QuerySet:
    """(app, user, records, tokens): the trigger-kept totals, one row per user, so the
    overview's figures cost a pass over users rather than over every record."""
    qs = UserMemoryStats.objects.all()
    if app_name:
        qs = qs.filter(app_name=app_name)
    return qs.values("app_name", "user_id", "records", "tokens")


def user_spread() -> dict[str, dict]:
    """Per app: records and tokens per user, and how many users are over a cap."""
    spreads = spread_by_group(
        _per_user().values("app_name", "records", "tokens"), "app_name", ["records", "tokens"]
    )
    over = users_over_caps()
    return {app: {**columns, "over_cap": over.get(app, 0)} for app, columns in spreads.items()}


def users_over_caps() -> dict[str, int]:
    """Per app: users above their app's record or token cap (before enforcement)."""
    inner, params = _sql(_per_user().values("app_name", "records", "tokens"))
    table = connection.ops.quote_name(Policy._meta.db_table)
    sql = (
        f"SELECT s.app_name, COUNT(*) FROM ({inner}) AS s LEFT JOIN {table} AS p "  # noqa: S608
        f"ON p.app_name = s.app_name "
        f"WHERE s.records > COALESCE(p.max_records, %s) OR s.tokens > COALESCE(p.max_tokens, %s) "
        f"GROUP BY s.app_name"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, DEFAULT_MAX_RECORDS, DEFAULT_MAX_TOKENS))
        return dict(cursor.fetchall())


def users_pinned_over_cap() -> dict[str, int]:
    """Per app: users whose pinned records alone exceed the record cap. Pins are never
    evicted, so for them the cap cannot hold; the pin rules or the cap need a look."""
    stats = connection.ops.quote_name(UserMemoryStats._meta.db_table)
    table = connection.ops.quote_name(Policy._meta.db_table)
    sql = (
        f"SELECT s.app_name, COUNT(*) FROM {stats} AS s LEFT JOIN {table} AS p "  # noqa: S608
        f"ON p.app_name = s.app_name WHERE s.pinned > COALESCE(p.max_records, %s) "
        f"GROUP BY s.app_name"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (DEFAULT_MAX_RECORDS,))
        return dict(cursor.fetchall())


def session_event_spread() -> dict[str, Spread]:
    """Per app: events per session (p50/p99/max)."""
    spreads = spread_by_group(
        AgentSession.objects.values("app_name", "event_count"), "app_name", ["event_count"]
    )
    return {app: columns["event_count"] for app, columns in spreads.items()}


def per_user_histogram(
    app_name: str, column: str, *, upper: float, bins: int = 30
) -> list[tuple[int, int, int]]:
    """Users per bucket of records (or tokens) per user: [(low, high, users), ...].

    ``upper`` is the largest value to cover (the max or the cap, whichever is higher);
    buckets are equal integer widths from 0.
    """
    if column not in ("records", "tokens"):
        raise ValueError(f"No per-user histogram of {column!r}; use records or tokens.")
    width = max(1, math.ceil((upper + 1) / bins))
    inner, params = _sql(_per_user(app_name).values(column))
    c = connection.ops.quote_name(column)
    sql = (
        f"SELECT CAST({c} AS BIGINT) / %s AS b, COUNT(*) FROM ({inner}) AS s "  # noqa: S608
        f"GROUP BY b ORDER BY b"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (width, *params))  # width comes first in the text
        counts = {int(b): n for b, n in cursor.fetchall()}
    last = max([*counts, math.ceil((upper + 1) / width) - 1], default=0)
    return [(b * width, (b + 1) * width - 1, counts.get(b, 0)) for b in range(last + 1)]


def growth_per_week(now: datetime, *, weeks: int = 12, app_name: str | None = None):
    """[(monday, records added that week)], oldest first: every record stored, including
    those evicted since. From the daily counters ingest bumps, so it reads a few dozen
    rows rather than the records table."""
    this_monday = now.date() - timedelta(days=now.weekday())
    first = this_monday - timedelta(weeks=weeks - 1)
    qs = DailyCounter.objects.filter(name=feedback.RECORDS_ADDED, day__gte=first)
    if app_name:
        qs = qs.filter(app_name=app_name)
    counts: dict[date, int] = {}
    for day, value in qs.values_list("day", "value"):
        monday = day - timedelta(days=day.weekday())
        counts[monday] = counts.get(monday, 0) + value
    return [
        (first + timedelta(weeks=i), counts.get(first + timedelta(weeks=i), 0))
        for i in range(weeks)
    ]


def evictions_per_day(now: datetime, *, days: int = 30, app_name: str | None = None) -> dict:
    """{"days": [date...], "series": {reason: [count per day]}} for the last ``days`` days.

    Only eviction reasons (EVICTION_REASONS): erasure is never counted here.
    """
    first = now.date() - timedelta(days=days - 1)
    qs = EvictionEvent.objects.filter(
        evicted_at__gte=datetime.combine(first, datetime.min.time(), tzinfo=now.tzinfo),
        reason__in=EVICTION_REASONS,
    )
    if app_name:
        qs = qs.filter(app_name=app_name)
    rows = (
        qs.annotate(day=TruncDate("evicted_at"))
        .values("day", "reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(day_list)}
    series: dict[str, list[int]] = {}
    for row in rows:
        day = _as_date(row["day"])
        if day in index:
            series.setdefault(row["reason"], [0] * days)[index[day]] += row["n"]
    ordered = {r: series[r] for r in EVICTION_REASONS if r in series}
    return {"days": day_list, "series": ordered}


def _as_date(value) -> date:
    return value.date() if isinstance(value, datetime) else value


# --- did eviction forget something? (the live daily counters) ---------------------------


@dataclass(frozen=True)
class ForgettingRates:
    """Per day, for one app: regret hits per 1,000 searches and corrections per 1,000
    sessions ingested, with the counts behind them. A rate is None on a day without its
    denominator (nothing to divide by: a gap, not a zero)."""

    days: list[date]
    regret_per_1000_searches: list[float | None]
    corrections_per_1000_sessions: list[float | None]
    counts: dict[str, list[int]]  # regret_hits, searches, corrections, sessions


FORGETTING_COUNTERS = {
    "regret_hits": feedback.REGRET_HITS,
    "searches": feedback.SEARCHES,
    "corrections": feedback.CORRECTIONS,
    "sessions": feedback.SESSIONS_INGESTED,
}


def _per_1000(part: int, whole: int) -> float | None:
    return 1000 * part / whole if whole else None


def forgetting_rates(now: datetime, app_name: str, *, days: int = 30) -> ForgettingRates:
    """The last ``days`` days from the counters ingest and search bump. One query."""
    first = now.date() - timedelta(days=days - 1)
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(day_list)}
    counts = {key: [0] * days for key in FORGETTING_COUNTERS}
    key_of = {name: key for key, name in FORGETTING_COUNTERS.items()}
    rows = DailyCounter.objects.filter(
        app_name=app_name, day__gte=first, day__lte=now.date(), name__in=list(key_of)
    ).values_list("day", "name", "value")
    for day, name, value in rows.order_by():
        counts[key_of[name]][index[_as_date(day)]] = int(value)
    return ForgettingRates(
        days=day_list,
        regret_per_1000_searches=[
            _per_1000(h, s) for h, s in zip(counts["regret_hits"], counts["searches"], strict=True)
        ],
        corrections_per_1000_sessions=[
            _per_1000(c, s) for c, s in zip(counts["corrections"], counts["sessions"], strict=True)
        ],
        counts=counts,
    )


def first_counted_day(app_name: str) -> date | None:
    """The first day the app's traffic was counted (an ingested session, a search, a
    regret hit, a correction): days before it would only chart the absence of the system.
    Records added are left out: they are counted on the day a record says it was written,
    which imported or back-dated records put long before any traffic. The counters table
    is small (apps × days × a few names), so this costs little."""
    first = DailyCounter.objects.filter(
        app_name=app_name, name__in=list(FORGETTING_COUNTERS.values())
    ).aggregate(d=Min("day"))["d"]
    return _as_date(first) if first is not None else None
