"""Every chart of the dashboard, built from plain data (lists, dicts) with plotly.

Each function returns the figure as a JSON-ready dict; pages embed it with
``{{ figure|json_script:"id" }}`` and ``static/js/charts.js`` draws it, so no page
needs inline script. Functions return None when there is nothing to draw, so a
page shows a sentence instead of an empty chart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date

import plotly.graph_objects as go

REASON_LABELS = {
    "expired": "expired (TTL)",
    "record_cap": "record cap",
    "token_cap": "token cap",
    "manual": "manual",
    "summarised": "summarised",
}
REASON_COLOURS = {
    "expired": "#98a2b3",
    "record_cap": "#2f5bd3",
    "token_cap": "#7a5af8",
    "manual": "#f79009",
    "summarised": "#12b76a",
}
BAR = "#2f5bd3"
CAP = "#b42318"
REGRET = "#f79009"
FORGOT = "#b42318"
SWEEPS = "#12b76a"


def _layout(fig: go.Figure, *, x_title: str, y_title: str) -> None:
    fig.update_layout(
        template="plotly_white",
        height=300,
        margin={"l": 56, "r": 16, "t": 24, "b": 48},
        legend={"orientation": "h", "y": 1.12, "x": 0},
        xaxis_title=x_title,
        yaxis_title=y_title,
        bargap=0.1,
    )


def figure_data(fig: go.Figure) -> dict:
    """The figure as plain JSON types (plotly's own encoder handles dates and numpy)."""
    return json.loads(fig.to_json())


def evictions_per_day(days: Sequence[date], series: Mapping[str, Sequence[int]]) -> dict | None:
    """Stacked bars: evictions per day, one colour per reason. Eviction reasons only."""
    if not any(any(counts) for counts in series.values()):
        return None
    x = [d.isoformat() for d in days]
    fig = go.Figure()
    for reason, counts in series.items():
        fig.add_bar(
            x=x,
            y=list(counts),
            name=REASON_LABELS.get(reason, reason),
            marker_color=REASON_COLOURS.get(reason),
        )
    fig.update_layout(barmode="stack")
    _layout(fig, x_title="day", y_title="records evicted")
    return figure_data(fig)


def per_user_against_cap(
    buckets: Sequence[tuple[int, int, int]], cap: int, *, what: str
) -> dict | None:
    """Histogram of users by records (or tokens) per user, with the cap as a red line.

    ``buckets`` are (low, high, users) with equal widths, as the selector returns them.
    """
    if not any(users for *_, users in buckets):
        return None
    fig = go.Figure()
    fig.add_bar(
        x=[(low + high + 1) / 2 for low, high, _ in buckets],
        y=[users for *_, users in buckets],
        width=[high - low + 1 for low, high, _ in buckets],
        customdata=[[low, high] for low, high, _ in buckets],
        hovertemplate=f"%{{customdata[0]}}–%{{customdata[1]}} {what}: %{{y}} users<extra></extra>",
        marker_color=BAR,
        name="users",
        showlegend=False,
    )
    fig.add_vline(
        x=cap,
        line_color=CAP,
        line_dash="dash",
        line_width=2,
        annotation_text=f"cap {cap:,}",
        annotation_font_color=CAP,
        annotation_position="top right",
    )
    _layout(fig, x_title=f"{what} per user", y_title="users")
    return figure_data(fig)


def _iso(days: Sequence[date]) -> list[str]:
    return [d.isoformat() for d in days]


def forgot_and_regret(
    days: Sequence[date],
    forgot_rate: Sequence[float | None],
    regret_hits: Sequence[int | None],
) -> dict | None:
    """Regret hits per day (bars) and the forgot-something rate (line, right axis).

    None marks a day without a roll-up (a gap, not a zero). None when no day has one.
    """
    if all(v is None for v in (*forgot_rate, *regret_hits)):
        return None
    x = _iso(days)
    fig = go.Figure()
    fig.add_bar(
        x=x,
        y=list(regret_hits),
        name="regret hits",
        marker_color=REGRET,
        hovertemplate="%{x}: %{y} regret hits<extra></extra>",
    )
    fig.add_scatter(
        x=x,
        y=list(forgot_rate),
        name="corrections per 1,000 sessions",
        yaxis="y2",
        mode="lines+markers",
        line={"color": FORGOT, "width": 2},
        connectgaps=False,
        hovertemplate="%{x}: %{y:.1f} per 1,000 sessions<extra></extra>",
    )
    _layout(fig, x_title="day", y_title="regret hits")
    fig.update_layout(
        margin={"l": 56, "r": 64, "t": 24, "b": 48},
        yaxis={"rangemode": "tozero"},
        yaxis2={
            "title": {"text": "per 1,000 sessions"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
    )
    return figure_data(fig)


def sweeps_per_day(days: Sequence[date], sweeps: Sequence[int | None]) -> dict | None:
    """Real sweeps finished per day. None when no day has a roll-up."""
    if all(v is None for v in sweeps):
        return None
    fig = go.Figure()
    fig.add_bar(x=_iso(days), y=list(sweeps), name="sweeps", marker_color=SWEEPS)
    _layout(fig, x_title="day", y_title="sweeps run")
    fig.update_layout(yaxis={"rangemode": "tozero", "dtick": 1})
    return figure_data(fig)


def records_added_per_week(weeks: Sequence[date], added: Sequence[int | None]) -> dict | None:
    """Records added per week (Monday first). None when no week added any."""
    if not any(added):
        return None
    fig = go.Figure()
    fig.add_bar(
        x=_iso(weeks),
        y=list(added),
        name="records added",
        marker_color=BAR,
        hovertemplate="week of %{x}: %{y} records added<extra></extra>",
    )
    _layout(fig, x_title="week of", y_title="records added")
    return figure_data(fig)
