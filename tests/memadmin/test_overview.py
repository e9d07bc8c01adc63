"""The overview: the article's first measurements and the charts, in constant queries.

Each chart states the question it answers, counts sit on integer axes, rates name their
denominators, policy changes are marked on every time axis, and the window starts where
the data does."""

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from records import feedback
from records.models import PolicyVersion
from records.policies import policy_for, update_policy
from sweeper.metrics import rollup_day
from sweeper.models import DailyMetric
from tests.records.rows import make_eviction, make_records, make_session

pytestmark = pytest.mark.django_db


def figure(response, element_id):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no figure {element_id}"
    return json.loads(match.group(1))


def test_overview_shows_spreads_against_caps_and_draws_charts(login):
    policy_for("pharmacy")
    update_policy("pharmacy", {"max_records": 100})
    for i, n in enumerate([10, 20, 150]):
        make_records("pharmacy", f"u{i}", n)
    make_session("pharmacy", events=[{"id": "e"}] * 4)
    make_eviction("record_cap", timezone.now(), app="pharmacy")
    make_eviction("erasure", timezone.now(), app="pharmacy")  # never drawn as an eviction
    response = login("ops").get(reverse("records:overview"))
    assert response.status_code == 200
    (row,) = response.context["figures"]
    assert (row.app_name, row.users, row.max_records, row.over_cap) == ("pharmacy", 3, 100, 1)
    assert (row.records.p50, row.records.max) == (20, 150)
    assert row.events.p99 == 4
    assert response.context["selected"] == "pharmacy"

    records_chart = figure(response, "records-figure")
    assert records_chart["layout"]["shapes"][0]["x0"] == 100  # the cap line
    assert sum(records_chart["data"][0]["y"]) == 3  # every user in some bucket
    assert records_chart["layout"]["yaxis"]["dtick"] == 1  # 3 users: no tick at half a user
    evictions = figure(response, "evictions-figure")
    assert [trace["name"] for trace in evictions["data"]] == ["record cap"]
    assert evictions["layout"]["showlegend"] is True  # a legend even for a single reason
    assert "erasure" not in json.dumps(evictions)
    content = response.content.decode()
    for question in (
        "How many records does each user keep?",
        "How many tokens does each user keep?",
        "Why were records evicted, day by day?",
    ):
        assert question in content
    assert 'data-figure="tokens-figure"' in content
    assert "vendor/plotly.min.js" in content and "js/charts.js" in content


def test_overview_warns_of_users_whose_pins_alone_exceed_the_cap(login):
    update_policy("pharmacy", {"max_records": 5})
    make_records("pharmacy", "over", 6, pinned=True)  # pins alone over the cap
    make_records("pharmacy", "at", 5, pinned=True)  # at the cap: not over
    make_records("pharmacy", "mixed", 3, pinned=True)
    make_records("pharmacy", "mixed", 9)  # over the cap, but enforcement can fix it
    update_policy("travel", {"max_records": 50})
    make_records("travel", "t", 6, pinned=True)
    response = login("support").get(reverse("records:overview"))
    rows = {f.app_name: f for f in response.context["figures"]}
    assert (rows["pharmacy"].pinned_over_cap, rows["travel"].pinned_over_cap) == (1, 0)
    content = response.content.decode()
    assert "1 user has more pinned records than the cap of 5" in content
    assert "travel:</strong>" not in content
    assert reverse("records:users") + "?sort=pinned" in content


def test_overview_with_no_data_says_so(login):
    response = login("compliance").get(reverse("records:overview"))
    assert response.status_code == 200
    assert b"No apps yet" in response.content
    assert b"data-figure" not in response.content


def test_app_picker_swaps_only_the_charts(login):
    make_records("pharmacy", "a", 3)
    make_records("travel", "b", 4)
    response = login("ops").get(
        reverse("records:overview"), {"app": "travel"}, headers={"HX-Request": "true"}
    )
    content = response.content.decode()
    assert "<nav" not in content and 'id="app-charts"' in content
    assert "travel, cap 500" in content and "pharmacy" not in content
    assert response.context["selected"] == "travel"


def test_overview_has_no_inline_script_or_style(login):
    make_records("pharmacy", "a", 3)
    content = login("ops").get(reverse("records:overview")).content.decode()
    scripts = re.findall(r"<script(?P<attrs>[^>]*)>", content)
    assert scripts and all("src=" in a or 'type="application/json"' in a for a in scripts)
    assert " style=" not in content and " onclick=" not in content and "hx-on" not in content


def test_overview_query_count_does_not_grow_with_users(login):
    client = login("ops")

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse("records:overview")).status_code == 200
        return len(ctx.captured_queries)

    for i in range(5):
        make_records("pharmacy", f"u{i}", i + 1)
        make_session("pharmacy", f"u{i}")
    small = count()
    for i in range(5, 80):
        make_records("pharmacy", f"u{i}", 2)
        make_session("pharmacy", f"u{i}")
        make_eviction("expired", timezone.now(), user=f"u{i}")
    assert count() == small


def test_forgetting_is_drawn_as_rates_over_their_denominators(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    yesterday = now - timedelta(days=1)
    for _ in range(4):
        feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, yesterday)
    feedback.bump("pharmacy", feedback.SEARCHES, yesterday, 40)
    feedback.bump("pharmacy", feedback.REGRET_HITS, yesterday, 2)
    feedback.report_correction("pharmacy", "a", yesterday)
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, now - timedelta(days=5))
    feedback.bump("travel", feedback.REGRET_HITS, yesterday, 50)  # another app: not drawn

    response = login("ops").get(reverse("records:overview"), {"app": "pharmacy"})
    assert response.status_code == 200
    regret, corrections = figure(response, "forgetting-figure")["data"]
    assert regret["name"] == "regret hits per 1,000 searches"
    assert corrections["name"] == "corrections per 1,000 sessions"
    # 2 hits in 40 searches; 1 correction in 4 sessions; today has neither: a gap
    assert regret["y"][-2:] == [50.0, None] and corrections["y"][-2:] == [250.0, None]
    assert regret["customdata"][-2] == [2, 40] and corrections["customdata"][-2] == [1, 4]
    assert regret["y"][0] is None  # sessions but no searches that day: no regret rate
    assert corrections["y"][0] == 0.0
    content = response.content.decode()
    assert "(2 of 40 searches)" in content and "(1 in 5 sessions)" in content
    assert "Did eviction forget something people needed?" in content


def test_time_charts_start_where_the_data_does_and_say_so(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    start = now - timedelta(days=3)
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, start)
    feedback.bump("pharmacy", feedback.SEARCHES, now)
    make_eviction("expired", now - timedelta(days=1), app="pharmacy")
    response = login("ops").get(reverse("records:overview"))
    evictions = figure(response, "evictions-figure")
    assert evictions["data"][0]["x"][0] == start.date().isoformat()
    assert len(evictions["data"][0]["x"]) == 4  # three days ago to today, not 30 days
    assert len(figure(response, "forgetting-figure")["data"][0]["x"]) == 4
    content = response.content.decode()
    assert f"The pharmacy data starts on {start.date():%Y-%m-%d}" in content
    assert f"since {start.date():%Y-%m-%d}" in content


def test_a_full_window_of_data_is_not_cut(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, now - timedelta(days=90))
    make_eviction("expired", now, app="pharmacy")
    response = login("ops").get(reverse("records:overview"))
    assert len(figure(response, "evictions-figure")["data"][0]["x"]) == 30
    assert "data starts on" not in response.content.decode()


def test_policy_changes_are_marked_on_every_time_axis(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    policy_for("pharmacy")  # v1: the defaults, a start rather than a change
    update_policy("pharmacy", {"max_records": 300})
    feedback.bump("pharmacy", feedback.SEARCHES, now, 10)
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, now - timedelta(days=40), 1)
    feedback.bump("pharmacy", feedback.RECORDS_ADDED, now, 3)
    make_eviction("record_cap", now, app="pharmacy")
    rollup_day(now.date(), now)
    response = login("ops").get(reverse("records:overview"))
    for element in ("evictions-figure", "forgetting-figure", "sizes-figure", "growth-figure"):
        layout = figure(response, element)["layout"]
        marks = [a for a in layout["annotations"] if a["text"].startswith("policy")]
        assert [m["text"] for m in marks] == ["policy v2"], element
        assert marks[0]["hovertext"] == "policy v2: Max records per user 500 → 300"
        assert any(s["line"]["dash"] == "dot" for s in layout["shapes"]), element


def test_each_chart_marks_the_changes_inside_its_own_span(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    update_policy("pharmacy", {"max_records": 300})
    PolicyVersion.objects.filter(app_name="pharmacy", version=2).update(
        created_at=now - timedelta(days=50)
    )
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, now - timedelta(days=90))
    feedback.bump("pharmacy", feedback.RECORDS_ADDED, now, 3)
    make_eviction("record_cap", now, app="pharmacy")
    response = login("ops").get(reverse("records:overview"))
    growth = figure(response, "growth-figure")["layout"]  # twelve weeks: inside
    assert [a["text"] for a in growth["annotations"]] == ["policy v2"]
    evictions = figure(response, "evictions-figure")["layout"]  # thirty days: outside
    assert "annotations" not in evictions and "shapes" not in evictions


def test_sizes_over_time_stand_against_the_caps_in_force(login):
    now = timezone.now()
    update_policy("pharmacy", {"max_records": 100, "max_tokens": 5000})
    make_records("pharmacy", "a", 10)
    make_records("pharmacy", "b", 30)
    rollup_day(now.date(), now)
    # a figure another process might roll up one day: never drawn in these charts
    DailyMetric.objects.create(day=now.date(), app_name="pharmacy", name="erasures", value=9)
    response = login("ops").get(reverse("records:overview"), {"app": "pharmacy"})
    sizes = figure(response, "sizes-figure")
    by_name = {(t["name"], t.get("yaxis", "y")): t for t in sizes["data"]}
    assert by_name["largest user", "y"]["y"][-1] == 30
    assert by_name["median user", "y"]["y"][-1] == 20
    assert by_name["cap", "y"]["y"][-1] == 100 and by_name["cap", "y2"]["y"][-1] == 5000
    assert by_name["largest user", "y2"]["y"][-1] == 300  # 30 records of 10 tokens
    assert "erasure" not in json.dumps(sizes)
    content = response.content.decode()
    assert "Are users staying under the caps?" in content
    assert "Sweeps run per day" not in content


def test_weekly_growth_has_an_integer_axis(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    feedback.bump("pharmacy", feedback.RECORDS_ADDED, now, 7)
    response = login("ops").get(reverse("records:overview"))
    growth = figure(response, "growth-figure")
    assert sum(v for v in growth["data"][0]["y"] if v) == 7
    assert growth["layout"]["yaxis"]["dtick"] == 2 and growth["layout"]["yaxis"]["tick0"] == 0


def test_without_rollups_or_counters_the_overview_says_so_plainly(login):
    make_records("pharmacy", "a", 3)
    response = login("support").get(reverse("records:overview"))
    content = response.content.decode()
    for element in ("forgetting-figure", "sizes-figure", "growth-figure"):
        assert f'id="{element}"' not in content
    assert "No searches and no ingested sessions in the last 30 days" in content
    assert "No daily roll-ups in this window yet, so no sizes over time" in content
    assert "No records added in the last 12 weeks" in content  # made directly, not ingested
    assert 'id="records-figure"' in content  # the live charts are still there
