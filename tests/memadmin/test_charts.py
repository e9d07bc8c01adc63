"""Charts are built from plain data; nothing to draw gives None, not an empty chart.

Counts sit on integer axes, every eviction reason has its own colour and a legend, rates
name their denominators, and policy changes are marked on time axes."""

from datetime import UTC, date, datetime

import pytest

from memadmin import charts
from records.selectors.overview import EVICTION_REASONS

DAYS = [date(2026, 6, 1), date(2026, 6, 2), date(2026, 6, 3)]
MARK = charts.PolicyMark(datetime(2026, 6, 2, 14, 0, tzinfo=UTC), 4, "record cap 500 → 300")


def test_histogram_bars_span_whole_numbers_and_the_cap_label_sits_above_them():
    figure = charts.per_user_against_cap([(0, 9, 3), (10, 19, 0), (20, 29, 2)], 25, what="records")
    (bars,) = figure["data"]
    assert bars["type"] == "bar" and list(bars["y"]) == [3, 0, 2]
    assert list(bars["x"]) == [4.5, 14.5, 24.5] and list(bars["width"]) == [10, 10, 10]
    (line,) = figure["layout"]["shapes"]
    assert (line["x0"], line["x1"], line["line"]["dash"]) == (25, 25, "dash")
    (label,) = figure["layout"]["annotations"]
    assert label["text"] == "cap 25"
    # in the margin above the plotting area (paper y 1, anchored at its bottom): no bar
    # reaches it
    assert (label["yref"], label["y"], label["yanchor"]) == ("paper", 1, "bottom")
    assert figure["layout"]["yaxis"]["dtick"] == 1 and figure["layout"]["xaxis"]["tickformat"]


def test_single_value_bins_are_centred_on_their_whole_number():
    figure = charts.per_user_against_cap([(0, 0, 1), (1, 1, 2), (2, 2, 1)], 2, what="records")
    assert list(figure["data"][0]["x"]) == [0, 1, 2]  # not 0.5, 1.5, 2.5


@pytest.mark.parametrize(
    ("largest", "step"),
    [(0, 1), (1, 1), (6, 1), (7, 2), (12, 2), (13, 5), (40, 10), (204, 50), (1250, 500)],
)
def test_count_axes_tick_only_on_whole_numbers(largest, step):
    axis = charts.count_axis(largest)
    assert (axis["dtick"], axis["tick0"], axis["rangemode"]) == (step, 0, "tozero")
    assert isinstance(axis["dtick"], int) and largest / axis["dtick"] <= 6


def test_evictions_are_stacked_by_reason_with_a_stable_colour_and_a_legend():
    days = DAYS[:2]
    figure = charts.evictions_per_day(days, {"expired": [1, 0], "token_cap": [0, 4]})
    assert [t["name"] for t in figure["data"]] == ["expired (TTL)", "token cap"]
    assert [t["marker"]["color"] for t in figure["data"]] == [
        charts.REASON_COLOURS["expired"],
        charts.REASON_COLOURS["token_cap"],
    ]
    assert list(figure["data"][0]["x"]) == ["2026-06-01", "2026-06-02"]
    assert figure["layout"]["barmode"] == "stack" and figure["layout"]["showlegend"] is True
    assert figure["layout"]["yaxis"]["dtick"] == 1  # 4 at most on a day
    # one reason alone still has its legend (plotly hides a lone trace's by default)
    alone = charts.evictions_per_day(days, {"superseded": [2, 0]})
    assert alone["layout"]["showlegend"] is True and alone["data"][0]["showlegend"] is True


def test_every_eviction_reason_has_its_own_colour_and_words():
    assert set(EVICTION_REASONS) <= set(charts.REASON_COLOURS) & set(charts.REASON_LABELS)
    colours = [charts.REASON_COLOURS[r] for r in EVICTION_REASONS]
    assert len(set(colours)) == len(colours)


def test_nothing_to_draw_is_none():
    assert charts.evictions_per_day([date(2026, 6, 1)], {"expired": [0]}) is None
    assert charts.evictions_per_day([date(2026, 6, 1)], {}) is None
    assert charts.per_user_against_cap([(0, 9, 0)], 5, what="tokens") is None
    counts = {k: [0, 0, 0] for k in ("regret_hits", "searches", "corrections", "sessions")}
    assert charts.forgetting_rates(DAYS, [None] * 3, [None] * 3, counts) is None
    empty = {c: {s: [None] * 3 for s in ("p50", "p99", "max")} for c in ("records", "tokens")}
    caps = {"records": [None] * 3, "tokens": [None] * 3}
    assert charts.sizes_against_caps(DAYS, empty, caps) is None
    assert charts.records_added_per_week(DAYS, [None, 0, None]) is None


def test_forgetting_rates_share_one_axis_and_name_their_denominators():
    counts = {
        "regret_hits": [1, 0, 0],
        "searches": [200, 0, 50],
        "corrections": [0, 1, 0],
        "sessions": [10, 5, 0],
    }
    figure = charts.forgetting_rates(DAYS, [5.0, None, 0.0], [0.0, 200.0, None], counts, [MARK])
    regret, corrections = figure["data"]
    assert regret["name"] == "regret hits per 1,000 searches"
    assert corrections["name"] == "corrections per 1,000 sessions"
    assert list(regret["y"]) == [5.0, None, 0.0] and list(corrections["y"]) == [0.0, 200.0, None]
    assert "yaxis" not in regret and "yaxis" not in corrections  # no second axis
    assert [list(c) for c in regret["customdata"]] == [[1, 200], [0, 0], [0, 50]]
    assert figure["layout"]["yaxis"]["title"]["text"] == "per 1,000"


def test_sizes_against_caps_draw_records_and_tokens_each_with_its_cap():
    sizes = {
        "records": {"p50": [10, None, 12], "p99": [90, None, 95], "max": [120, None, 99]},
        "tokens": {"p50": [500, None, 600], "p99": [4000, None, 4100], "max": [6000, None, 5000]},
    }
    caps = {"records": [100, None, 100], "tokens": [5000, None, 5000]}
    figure = charts.sizes_against_caps(DAYS, sizes, caps, [MARK])
    traces = {(t["name"], t.get("yaxis", "y")): t for t in figure["data"]}
    assert list(traces["largest user", "y"]["y"]) == [120, None, 99]
    assert list(traces["cap", "y2"]["y"]) == [5000, None, 5000]
    assert traces["cap", "y"]["line"]["dash"] == "dash"
    # one legend entry per line, not one per panel
    assert sorted(t["name"] for t in figure["data"] if t["showlegend"]) == [
        "99th percentile",
        "cap",
        "largest user",
        "median user",
    ]
    # the policy change is marked on both panels
    dotted = [s for s in figure["layout"]["shapes"] if s["line"]["dash"] == "dot"]
    assert len(dotted) == 2


def test_policy_changes_are_marked_with_what_changed():
    figure = charts.evictions_per_day(DAYS, {"record_cap": [0, 3, 1]}, [MARK])
    (line,) = figure["layout"]["shapes"]
    assert line["x0"] == "2026-06-02T14:00:00+00:00" and line["line"]["dash"] == "dot"
    (label,) = figure["layout"]["annotations"]
    assert label["text"] == "policy v4"
    assert label["hovertext"] == "policy v4: record cap 500 → 300"


def test_weekly_growth_draws_zeros_but_not_missing_data():
    weeks = [date(2026, 6, 1), date(2026, 6, 8)]
    figure = charts.records_added_per_week(weeks, [None, 40])
    assert list(figure["data"][0]["x"]) == ["2026-06-01", "2026-06-08"]
    assert list(figure["data"][0]["y"]) == [None, 40]
    assert figure["layout"]["yaxis"]["dtick"] == 10
    assert charts.records_added_per_week(weeks, [None, None]) is None
