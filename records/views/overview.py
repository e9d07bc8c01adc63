"""The overview: the numbers to measure first, and the charts."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from memadmin import charts
from memadmin.htmx import render_page
from memadmin.roles import viewer_required

from ..models import Policy
from ..selectors import (
    Spread,
    app_session_counts,
    daily_rollups,
    evictions_per_day,
    growth_per_week,
    per_user_histogram,
    session_event_spread,
    user_spread,
    users_pinned_over_cap,
)

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
    evictions = evictions_per_day(now, days=EVICTION_DAYS, app_name=app.app_name)
    rollups = daily_rollups(now, app.app_name, days=EVICTION_DAYS)
    growth = growth_per_week(now, weeks=GROWTH_WEEKS, app_name=app.app_name)
    added = [n for _, n in growth]
    out = {
        "app_figures": app,
        "eviction_days": EVICTION_DAYS,
        "evictions_chart": charts.evictions_per_day(evictions["days"], evictions["series"]),
        "evictions_total": sum(sum(v) for v in evictions["series"].values()),
        "growth": growth,
        "growth_weeks": GROWTH_WEEKS,
        "rollups": rollups,
        "forgot_chart": charts.forgot_and_regret(
            rollups.days, rollups.forgot_rate, rollups.regret_hits
        ),
        "sweeps_chart": charts.sweeps_per_day(rollups.days, rollups.sweeps_run),
        "added_chart": charts.records_added_per_week([w for w, _ in growth], added),
        "records_chart": None,
        "tokens_chart": None,
    }
    if app.records:
        for column, cap, spread in (
            ("records", app.max_records, app.records),
            ("tokens", app.max_tokens, app.tokens),
        ):
            buckets = per_user_histogram(
                app.app_name, column, upper=max(spread.max, cap * 1.1), bins=30
            )
            out[f"{column}_chart"] = charts.per_user_against_cap(buckets, cap, what=column)
    return out
