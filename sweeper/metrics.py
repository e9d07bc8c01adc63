"""Daily roll-ups for the charts, and the article's "measure today" numbers.

Everything here is counts and sizes: no memory content, no record ids, no user ids.
Erasure is a separate path and never appears in these figures.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Count, Sum

from memadmin.stats import percentile
from records import feedback
from records.models import AgentSession, DailyCounter, EvictionEvent, MemoryRecord, Policy
from records.policy import DEFAULTS

from .models import DailyMetric, Run, RunKind, RunStatus

ONE_DAY = timedelta(days=1)
ALL_APPS = ""  # app_name of metrics that are not per app
# Corrections reported per 1,000 sessions ingested that day (per app).
FORGOT_RATE = "forgot_per_1000_sessions"
# Real sweeps finished that day (ALL_APPS); written by every roll-up, even as 0.
SWEEPS_RUN = "sweeps_run"
# Sizes measured at roll-up time; only meaningful for the day they were taken.
SNAPSHOT_NAMES = frozenset(
    [f"{p}_{s}" for p in ("records", "tokens", "session_events") for s in ("p50", "p99", "max")]
    + ["users", "max_records", "max_tokens"]
)


@dataclass(frozen=True)
class Distribution:
    count: int
    p50: float
    p99: float
    max: float
    total: float

    @classmethod
    def of(cls, values: list[float]) -> Distribution:
        values = sorted(values)
        return cls(
            len(values),
            percentile(values, 0.5),
            percentile(values, 0.99),
            values[-1] if values else 0.0,
            float(sum(values)),
        )


@dataclass(frozen=True)
class AppMeasure:
    app_name: str
    records_per_user: Distribution
    tokens_per_user: Distribution
    session_events: Distribution
    added_last_7_days: int
    max_records: int
    max_tokens: int


def measure(now: datetime, app_name: str | None = None) -> list[AppMeasure]:
    """Records and tokens per user, growth per week, session events: per app, now."""
    per_user = MemoryRecord.objects.values("app_name", "user_id").annotate(
        n=Count("id"), t=Sum("tokens")
    )
    sessions = AgentSession.objects.values("app_name", "event_count")
    added = DailyCounter.objects.filter(
        name=feedback.RECORDS_ADDED, day__gt=(now - 7 * ONE_DAY).date()
    )
    if app_name:
        per_user = per_user.filter(app_name=app_name)
        sessions = sessions.filter(app_name=app_name)
        added = added.filter(app_name=app_name)
    records, tokens, events = defaultdict(list), defaultdict(list), defaultdict(list)
    for row in per_user.order_by():
        records[row["app_name"]].append(row["n"])
        tokens[row["app_name"]].append(row["t"] or 0)
    for row in sessions.order_by():
        events[row["app_name"]].append(row["event_count"])
    growth = dict(added.values("app_name").annotate(s=Sum("value")).values_list("app_name", "s"))
    caps = dict(Policy.objects.values_list("app_name", "max_records"))
    token_caps = dict(Policy.objects.values_list("app_name", "max_tokens"))
    apps = sorted(set(records) | set(events))
    return [
        AppMeasure(
            app_name=a,
            records_per_user=Distribution.of(records[a]),
            tokens_per_user=Distribution.of(tokens[a]),
            session_events=Distribution.of(events[a]),
            added_last_7_days=int(growth.get(a) or 0),
            max_records=caps.get(a, DEFAULTS.max_records),
            max_tokens=token_caps.get(a, DEFAULTS.max_tokens),
        )
        for a in apps
    ]


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + ONE_DAY


@transaction.atomic
def rollup_day(day: date, now: datetime) -> int:
    """Recompute the day's metrics (idempotent). Snapshots only for today."""
    start, end = _day_bounds(day)
    values: dict[tuple[str, str], float] = {}
    for row in (
        EvictionEvent.objects.filter(evicted_at__gte=start, evicted_at__lt=end)
        .values("app_name", "reason")
        .annotate(n=Count("id"))
        .order_by()
    ):
        values[row["app_name"], f"evictions_{row['reason']}"] = row["n"]
    # A day's evictions only grow, except when an erasure deletes the subject's events:
    # the count already rolled up stands, so an erasure never moves a chart (nor shows
    # that it happened).
    for app, name, value in DailyMetric.objects.filter(
        day=day, name__startswith="evictions_"
    ).values_list("app_name", "name", "value"):
        values[app, name] = max(values.get((app, name), 0), value)
    counters = defaultdict(dict)
    for app, name, value in DailyCounter.objects.filter(day=day).values_list(
        "app_name", "name", "value"
    ):
        values[app, name] = value
        counters[app][name] = value
    for app, c in counters.items():
        sessions = c.get(feedback.SESSIONS_INGESTED, 0)
        if sessions:
            values[app, FORGOT_RATE] = 1000 * c.get(feedback.CORRECTIONS, 0) / sessions
    values[ALL_APPS, SWEEPS_RUN] = Run.objects.filter(
        kind=RunKind.SWEEP,
        dry_run=False,
        status=RunStatus.DONE,
        finished_at__gte=start,
        finished_at__lt=end,
    ).count()
    if day == now.date():
        for m in measure(now):
            for prefix, dist in (
                ("records", m.records_per_user),
                ("tokens", m.tokens_per_user),
                ("session_events", m.session_events),
            ):
                for stat in ("p50", "p99", "max"):
                    values[m.app_name, f"{prefix}_{stat}"] = getattr(dist, stat)
            values[m.app_name, "users"] = m.records_per_user.count
            values[m.app_name, "max_records"] = m.max_records
            values[m.app_name, "max_tokens"] = m.max_tokens
    stale = DailyMetric.objects.filter(day=day)
    if day != now.date():  # a finished day keeps the snapshot taken on that day
        stale = stale.exclude(name__in=SNAPSHOT_NAMES)
    stale.delete()
    DailyMetric.objects.bulk_create(
        DailyMetric(day=day, app_name=app, name=name, value=float(v))
        for (app, name), v in values.items()
    )
    return len(values)
