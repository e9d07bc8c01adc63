"""The backtest's chart: current vs candidate per day, policy changes marked."""

from __future__ import annotations

import plotly.graph_objects as go

from memadmin.charts import BAR, REGRET, _layout, figure_data


def current_vs_candidate(report: dict) -> dict | None:
    """Lines of evictions and regret per day, solid for the policy that ran and dashed
    for the candidate; a dotted vertical line at each policy change."""
    days = [d["day"] for d in report["days"]]
    if not days:
        return None
    fig = go.Figure()
    for side, dash in (("current", "solid"), ("candidate", "dash")):
        for figure, colour in (("evictions", BAR), ("regret", REGRET)):
            fig.add_scatter(
                x=days,
                y=[d[side][figure] for d in report["days"]],
                mode="lines+markers",
                name=f"{figure}, {side}",
                line={"dash": dash, "color": colour},
            )
    for change in report["policy_changes"]:
        at = change["at"]
        fig.add_shape(
            type="line", x0=at, x1=at, yref="paper", y0=0, y1=1, line={"dash": "dot", "width": 1}
        )
        fig.add_annotation(
            x=at, yref="paper", y=1, text=f"v{change['version']}", showarrow=False, yanchor="bottom"
        )
    _layout(fig, x_title="day", y_title="per day")
    return figure_data(fig)
