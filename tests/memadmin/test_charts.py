"""Charts are built from plain data; nothing to draw gives None, not an empty chart."""

from datetime import date

from memadmin import charts


def test_histogram_has_bars_per_bucket_and_the_cap_line():
    figure = charts.per_user_against_cap([(0, 9, 3), (10, 19, 0), (20, 29, 2)], 25, what="records")
    (bars,) = figure["data"]
    assert bars["type"] == "bar" and list(bars["y"]) == [3, 0, 2]
    assert list(bars["x"]) == [5, 15, 25] and list(bars["width"]) == [10, 10, 10]
    (line,) = figure["layout"]["shapes"]
    assert (line["x0"], line["x1"], line["line"]["dash"]) == (25, 25, "dash")
    assert figure["layout"]["annotations"][0]["text"] == "cap 25"


def test_evictions_are_stacked_by_reason_with_readable_names():
    days = [date(2026, 6, 1), date(2026, 6, 2)]
    figure = charts.evictions_per_day(days, {"expired": [1, 0], "token_cap": [0, 4]})
    assert [t["name"] for t in figure["data"]] == ["expired (TTL)", "token cap"]
    assert list(figure["data"][0]["x"]) == ["2026-06-01", "2026-06-02"]
    assert figure["layout"]["barmode"] == "stack"


def test_nothing_to_draw_is_none():
    assert charts.evictions_per_day([date(2026, 6, 1)], {"expired": [0]}) is None
    assert charts.evictions_per_day([date(2026, 6, 1)], {}) is None
    assert charts.per_user_against_cap([(0, 9, 0)], 5, what="tokens") is None


def test_forgot_rate_sits_on_a_second_axis_next_to_regret_hits_with_gaps_for_missing_days():
    days = [date(2026, 6, 1), date(2026, 6, 2), date(2026, 6, 3)]
    figure = charts.forgot_and_regret(days, [12.5, None, 0.0], [3, None, 0])
    bars, line = figure["data"]
    assert (bars["type"], bars["name"], list(bars["y"])) == ("bar", "regret hits", [3, None, 0])
    assert line["yaxis"] == "y2" and list(line["y"]) == [12.5, None, 0.0]
    assert figure["layout"]["yaxis2"]["overlaying"] == "y"
    assert charts.forgot_and_regret(days, [None] * 3, [None] * 3) is None


def test_sweeps_and_weekly_growth_from_rollups_draw_zeros_but_not_missing_data():
    days = [date(2026, 6, 1), date(2026, 6, 2)]
    assert list(charts.sweeps_per_day(days, [0, 1])["data"][0]["y"]) == [0, 1]
    assert charts.sweeps_per_day(days, [None, None]) is None
    weeks = [date(2026, 6, 1), date(2026, 6, 8)]
    figure = charts.records_added_per_week(weeks, [None, 40])
    assert list(figure["data"][0]["x"]) == ["2026-06-01", "2026-06-08"]
    assert list(figure["data"][0]["y"]) == [None, 40]
    assert charts.records_added_per_week(weeks, [None, None]) is None
