"""Every chart of the dashboard, built from plain data (lists, dicts) with plotly.

Each function returns the figure as a JSON-ready dict; pages embed it with
``{{ figure|json_script:"id" }}`` and ``static/js/charts.js`` draws it, so no page
needs inline script. Functions return None when there is nothing to draw, so a
page shows a sentence instead of an empty chart.

Each chart answers one question (its title on the page says which). Counts sit on
integer axes; rates carry their denominator in their name; every time axis marks the
policy changes in its window (``PolicyMark``), so ops see what a change did.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import plotly.graph_objects as go
from plotly.subplots import make_subplots

# One colour per eviction reason, always the same, in the order the stack is drawn.
REASON_LABELS = {
    "expired": "expired (TTL)",
    "record_cap": "record cap",
    "token_cap": "token cap",
    "manual": "manual",
    "summarised": "summarised",
    "superseded": "superseded",
}
REASON_COLOURS = {
    "expired": "#98a2b3",
    "record_cap": "#2f5bd3",
    "token_cap": "#7a5af8",
    "manual": "#f79009",
    "summarised": "#12b76a",
    "superseded": "#0e9384",
}
OTHER_REASON = "#667085"
BAR = "#2f5bd3"
CAP = "#b42318"
REGRET = "#f79009"
FORGOT = "#b42318"
POLICY = "#475467"
# Per-user sizes over time: the median, the 99th percentile and the largest user.
SIZE_LINES = (
    ("p50", "median user", "#84adff"),
    ("p99", "99th percentile", "#2f5bd3"),
    ("max", "largest user", "#101828"),
)


@dataclass(frozen=True)
class PolicyMark:
    """A policy change to mark on time axes: when, which version, what changed."""

    at: datetime
    version: int
    summary: str  # "record cap 500 → 300", for the hover text


def figure_data(fig: go.Figure) -> dict:
    """The figure as plain JSON types (plotly's own encoder handles dates and numpy)."""
    return json.loads(fig.to_json())


# The top margin holds, from the plot up: the labels of policy changes and of the cap
# (one line), then the legend.
TOP, BOTTOM, LABEL_ROW = 64, 48, 18


def _layout(fig: go.Figure, *, x_title: str, y_title: str, height: int = 300) -> None:
    plot_height = height - TOP - BOTTOM
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 64, "r": 16, "t": TOP, "b": BOTTOM},
        # above the labels' row, so a policy change near the left never hides under it
        legend={"orientation": "h", "y": 1 + LABEL_ROW / plot_height, "yanchor": "bottom", "x": 0},
        xaxis_title=x_title,
        yaxis_title=y_title,
        bargap=0.1,
    )


def count_axis(largest: float) -> dict:
    """A y axis for whole counts: from zero, ticks on integers only (1, 2, 5, 10, 20, ...
    apart, at most about six of them), so no tick ever reads half a user."""
    step, factors = 1.0, (2, 2.5, 2)
    i = 0
    while largest > 6 * step:
        step *= factors[i % 3]
        i += 1
    return {"rangemode": "tozero", "tick0": 0, "dtick": int(step), "tickformat": ",d"}


def _iso(days: Sequence[date]) -> list[str]:
    return [d.isoformat() for d in days]


def _label_above(fig: go.Figure, x, text: str, **style) -> None:
    """A label at ``x`` in the top margin, above the plotting area: never over a bar."""
    fig.add_annotation(
        x=x, xref="x", y=1, yref="paper", yanchor="bottom", showarrow=False, text=text, **style
    )


def _mark_policy_changes(fig: go.Figure, marks: Sequence[PolicyMark], **where) -> None:
    """A dotted line at each policy change, labelled with its version above the plot;
    hovering the label says what changed."""
    for mark in marks:
        fig.add_vline(
            x=mark.at.isoformat(),
            line_color=POLICY,
            line_dash="dot",
            line_width=1,
            **where,
        )
        _label_above(
            fig,
            mark.at.isoformat(),
            f"policy v{mark.version}",
            hovertext=f"policy v{mark.version}: {mark.summary}",
            font={"size": 10, "color": POLICY},
        )


def evictions_per_day(
    days: Sequence[date],
    series: Mapping[str, Sequence[int]],
    marks: Sequence[PolicyMark] = (),
) -> dict | None:
    """Why were records evicted, day by day? Stacked bars, one colour per reason, with a
    legend even when only one reason occurred. Eviction reasons only."""
    if not any(any(counts) for counts in series.values()):
        return None
    x = _iso(days)
    fig = go.Figure()
    for reason, counts in series.items():
        label = REASON_LABELS.get(reason, reason)
        fig.add_bar(
            x=x,
            y=list(counts),
            name=label,
            marker_color=REASON_COLOURS.get(reason, OTHER_REASON),
            showlegend=True,
            hovertemplate=f"%{{x}}: %{{y:,d}} {label}<extra></extra>",
        )
    daily_totals = [sum(day) for day in zip(*series.values(), strict=True)]
    fig.update_layout(barmode="stack", showlegend=True)
    _layout(fig, x_title="day", y_title="records evicted")
    fig.update_layout(yaxis=count_axis(max(daily_totals)))
    _mark_policy_changes(fig, marks)
    return figure_data(fig)


def per_user_against_cap(
    buckets: Sequence[tuple[int, int, int]], cap: int, *, what: str
) -> dict | None:
    """How many records (or tokens) does each user keep, against the cap? A histogram of
    users per bucket of whole numbers, the cap as a dashed line labelled above the bars.

    ``buckets`` are (low, high, users) with equal integer widths, as the selector returns
    them; each bar spans its whole numbers (low − ½ to high + ½), so ticks fall on them.
    """
    if not any(users for *_, users in buckets):
        return None
    fig = go.Figure()
    fig.add_bar(
        x=[(low + high) / 2 for low, high, _ in buckets],
        y=[users for *_, users in buckets],
        width=[high - low + 1 for low, high, _ in buckets],
        customdata=[[low, high] for low, high, _ in buckets],
        hovertemplate=(
            f"%{{customdata[0]:,d}}–%{{customdata[1]:,d}} {what}: %{{y:,d}} users<extra></extra>"
        ),
        marker_color=BAR,
        name="users",
        showlegend=False,
    )
    fig.add_vline(x=cap, line_color=CAP, line_dash="dash", line_width=2)
    _label_above(fig, cap, f"cap {cap:,}", font={"color": CAP})
    _layout(fig, x_title=f"{what} per user", y_title="users")
    fig.update_layout(
        yaxis=count_axis(max(users for *_, users in buckets)),
        xaxis={"tickformat": ",d", "rangemode": "tozero"},
    )
    return figure_data(fig)


def forgetting_rates(
    days: Sequence[date],
    regret_per_1000_searches: Sequence[float | None],
    corrections_per_1000_sessions: Sequence[float | None],
    counts: Mapping[str, Sequence[int]],
    marks: Sequence[PolicyMark] = (),
) -> dict | None:
    """Did eviction forget something people needed? Two rates on one axis, each over its
    own denominator: regret hits per 1,000 searches, corrections per 1,000 sessions.

    None marks a day without its denominator (a gap, not a zero). ``counts`` holds the
    day's raw numbers ("regret_hits", "searches", "corrections", "sessions") for the hover.
    """
    if all(v is None for v in (*regret_per_1000_searches, *corrections_per_1000_sessions)):
        return None
    x = _iso(days)
    fig = go.Figure()
    # (rate, its name, colour, the counts behind it, the word between them in the hover)
    for rate, what, colour, (part, whole), joint in (
        (regret_per_1000_searches, "regret hits", REGRET, ("regret_hits", "searches"), "of"),
        (corrections_per_1000_sessions, "corrections", FORGOT, ("corrections", "sessions"), "in"),
    ):
        fig.add_scatter(
            x=x,
            y=list(rate),
            name=f"{what} per 1,000 {whole}",
            mode="lines+markers",
            line={"color": colour, "width": 2},
            connectgaps=False,
            customdata=list(zip(counts[part], counts[whole], strict=True)),
            hovertemplate=(
                f"%{{x}}: %{{y:.1f}} per 1,000 {whole} "
                f"(%{{customdata[0]:,d}} {joint} %{{customdata[1]:,d}})<extra></extra>"
            ),
        )
    _layout(fig, x_title="day", y_title="per 1,000")
    fig.update_layout(showlegend=True, yaxis={"rangemode": "tozero"})
    _mark_policy_changes(fig, marks)
    return figure_data(fig)


def sizes_against_caps(
    days: Sequence[date],
    sizes: Mapping[str, Mapping[str, Sequence[float | None]]],
    caps: Mapping[str, Sequence[float | None]],
    marks: Sequence[PolicyMark] = (),
) -> dict | None:
    """Are users staying under the caps? Records and tokens per user over time (median,
    99th percentile, largest user), each against the cap in force that day.

    ``sizes`` is {"records"|"tokens": {"p50"|"p99"|"max": [value per day]}}, ``caps``
    {"records"|"tokens": [cap per day]}; None is a day without a measurement (a gap).
    """
    if all(v is None for column in sizes.values() for s in column.values() for v in s):
        return None
    x = _iso(days)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
    )
    for row, column in enumerate(("records", "tokens"), start=1):
        for stat, label, colour in SIZE_LINES:
            fig.add_scatter(
                x=x,
                y=list(sizes[column][stat]),
                name=label,
                legendgroup=stat,
                showlegend=row == 1,
                mode="lines+markers",
                line={"color": colour, "width": 2},
                connectgaps=False,
                hovertemplate=f"%{{x}}: {label} %{{y:,.0f}} {column}<extra></extra>",
                row=row,
                col=1,
            )
        fig.add_scatter(
            x=x,
            y=list(caps[column]),
            name="cap",
            legendgroup="cap",
            showlegend=row == 1,
            mode="lines",
            line={"color": CAP, "width": 2, "dash": "dash", "shape": "hv"},
            connectgaps=False,
            hovertemplate=f"%{{x}}: cap %{{y:,d}} {column}<extra></extra>",
            row=row,
            col=1,
        )
        fig.update_yaxes(
            title_text=f"{column} per user", rangemode="tozero", tickformat=",d", row=row, col=1
        )
    _layout(fig, x_title="", y_title="records per user", height=460)
    fig.update_layout(showlegend=True)
    fig.update_xaxes(title_text="day", row=2, col=1)
    _mark_policy_changes(fig, marks, row="all", col=1)
    return figure_data(fig)


def records_added_per_week(
    weeks: Sequence[date], added: Sequence[int | None], marks: Sequence[PolicyMark] = ()
) -> dict | None:
    """How fast is memory growing? Records added per week (Monday first). None when no
    week added any."""
    if not any(added):
        return None
    fig = go.Figure()
    fig.add_bar(
        x=_iso(weeks),
        y=list(added),
        name="records added",
        marker_color=BAR,
        hovertemplate="week of %{x}: %{y:,d} records added<extra></extra>",
    )
    _layout(fig, x_title="week of", y_title="records added")
    fig.update_layout(yaxis=count_axis(max(v or 0 for v in added)))
    _mark_policy_changes(fig, marks)
    return figure_data(fig)
