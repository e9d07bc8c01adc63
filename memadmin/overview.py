"""The overview: the numbers to measure first, and the charts.

A project-level page: it composes the memory domain's figures (records) with the
sweeper's daily roll-ups, so neither app imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.utils import timezone

from memadmin import charts
from memadmin.htmx import render_page
from memadmin.roles import viewer_required
from records.forms import POLICY_LABELS
from records.models import Policy
from records.selectors import (
    Spread,
    app_session_counts,
    evictions_per_day,
    first_counted_day,
    forgetting_rates,
    growth_per_week,
    per_user_histogram,
    policy_changes,
    session_event_spread,
    user_spread,
    users_pinned_over_cap,
)
from sweeper.selectors import size_history

EVICTION_DAYS = 30
GROWTH_WEEKS = 12


@dataclass(frozen=True)
class AppFigures:
    app_name: str
    max_records: int
    max_tokens: int
    records: Spread | None
    tokens: Spread | None
    over_cap: int
    pinned_over_cap: int  # users over the record cap on pinned records alone
    events: Spread | None
    sessions: int
    idle_sessions: int

    @property
    def users(self) -> int:
        return self.records.count if self.records else 0


@viewer_required
def overview(request):
    now = timezone.now()
    spreads = user_spread()
    events = session_event_spread()
    sessions = {s.app_name: s for s in app_session_counts(now)}
    policies = {p.app_name: p for p in Policy.objects.order_by("app_name")}
    pinned_over = users_pinned_over_cap()
    apps = sorted(set(spreads) | set(policies) | set(sessions))
    figures = []
    for app in apps:
        policy = policies.get(app) or Policy(app_name=app)
        spread = spreads.get(app, {})
        figures.append(
            AppFigures(
                app_name=app,
                max_records=policy.max_records,
                max_tokens=policy.max_tokens,
                records=spread.get("records"),
                tokens=spread.get("tokens"),
                over_cap=spread.get("over_cap", 0),
                pinned_over_cap=pinned_over.get(app, 0),
                events=events.get(app),
                sessions=sessions[app].total if app in sessions else 0,
                idle_sessions=sessions[app].idle if app in sessions else 0,
            )
        )
    selected = request.GET.get("app", "")
    if selected not in apps:  # default: the app with the most users
        selected = max(figures, key=lambda f: f.users).app_name if figures else ""
    context = {
        "figures": figures,
        "apps": apps,
        "selected": selected,
        **_charts(now, next((f for f in figures if f.app_name == selected), None)),
    }
    return render_page(request, "records/overview.html", "app-charts", context)


def _charts(now, app: AppFigures | None) -> dict:
    if app is None:
        return {"app_figures": None}
    name = app.app_name
    evictions = evictions_per_day(now, days=EVICTION_DAYS, app_name=name)
    rates = forgetting_rates(now, name, days=EVICTION_DAYS)
    sizes = size_history(now, name, days=EVICTION_DAYS)
    growth = growth_per_week(now, weeks=GROWTH_WEEKS, app_name=name)
    window = _Window(
        evictions["days"],
        _data_since(evictions, first_counted_day(name), sizes.first_measured()),
    )
    growth = [(w, n) for w, n in growth if window.since is None or w > window.since - WEEK]
    # Each chart marks the changes inside its own span (a mark outside would stretch it).
    growth_start = datetime.combine(growth[0][0], time.min, tzinfo=now.tzinfo)
    growth_marks = _policy_marks(name, min(growth_start, window.start(now)))
    marks = [m for m in growth_marks if m.at >= window.start(now)]
    growth_marks = [m for m in growth_marks if m.at >= growth_start]
    out = {
        "app_figures": app,
        "eviction_days": EVICTION_DAYS,
        "window": window,
        "evictions_chart": charts.evictions_per_day(
            window.cut(evictions["days"]),
            {r: window.cut(counts) for r, counts in evictions["series"].items()},
            marks,
        ),
        "evictions_total": sum(sum(v) for v in evictions["series"].values()),
        "forgetting_chart": charts.forgetting_rates(
            window.cut(rates.days),
            window.cut(rates.regret_per_1000_searches),
            window.cut(rates.corrections_per_1000_sessions),
            {k: window.cut(v) for k, v in rates.counts.items()},
            marks,
        ),
        "forgetting_totals": {k: sum(v) for k, v in rates.counts.items()},
        "sizes_chart": charts.sizes_against_caps(
            window.cut(sizes.days),
            {c: {s: window.cut(v) for s, v in stats.items()} for c, stats in sizes.sizes.items()},
            {c: window.cut(v) for c, v in sizes.caps.items()},
            marks,
        ),
        "growth": growth,
        "growth_weeks": GROWTH_WEEKS,
        "added_chart": charts.records_added_per_week(
            [w for w, _ in growth], [n for _, n in growth], growth_marks
        ),
        "records_chart": None,
        "tokens_chart": None,
    }
    if app.records:
        for column, cap, spread in (
            ("records", app.max_records, app.records),
            ("tokens", app.max_tokens, app.tokens),
        ):
            buckets = per_user_histogram(name, column, upper=max(spread.max, cap * 1.1), bins=30)
            out[f"{column}_chart"] = charts.per_user_against_cap(buckets, cap, what=column)
    return out


WEEK = timedelta(days=7)


@dataclass(frozen=True)
class _Window:
    """The days the time charts show: the last EVICTION_DAYS, cut to start where the
    app's data starts, so half a chart is never the absence of the system."""

    days: list[date]
    since: date | None  # the first day with data, when it is inside the window

    def cut(self, values: list) -> list:
        if self.since is None:
            return values
        return values[self.days.index(self.since) :]

    def start(self, now: datetime) -> datetime:
        first = self.since or self.days[0]
        return datetime.combine(first, time.min, tzinfo=now.tzinfo)


def _data_since(evictions: dict, *firsts: date | None) -> date | None:
    """The first day with any data in the window; None when the whole window has some
    (or none has: then every chart says so itself)."""
    days = evictions["days"]
    evicted = [days[i] for i in range(len(days)) if any(s[i] for s in evictions["series"].values())]
    candidates = [d for d in (*firsts, *evicted[:1]) if d is not None]
    if not candidates:
        return None
    first = max(min(candidates), days[0])
    return first if first > days[0] else None


def _policy_marks(app_name: str, since: datetime) -> list[charts.PolicyMark]:
    return [
        charts.PolicyMark(
            at=change.at,
            version=change.version,
            summary="; ".join(
                f"{POLICY_LABELS.get(f, f)} {before} → {after}"
                for f, before, after in change.changes
            )
            or "no value changed",
        )
        for change in policy_changes(app_name, since)
    ]
