"""The overview: the article's first measurements and the charts, in constant queries."""

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from records import feedback
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
    evictions = figure(response, "evictions-figure")
    assert [trace["name"] for trace in evictions["data"]] == ["record cap"]
    assert "erasure" not in json.dumps(evictions)
    content = response.content.decode()
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


def test_rollup_charts_show_the_forgot_rate_regret_hits_sweeps_and_weekly_growth(login):
    now = timezone.now()
    make_records("pharmacy", "a", 3)
    yesterday = now - timedelta(days=1)
    for _ in range(4):
        feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, yesterday)
    feedback.bump("pharmacy", feedback.RECORDS_ADDED, yesterday, 7)
    feedback.bump("pharmacy", feedback.REGRET_HITS, yesterday, 2)
    feedback.report_correction("pharmacy", "a", yesterday)
    feedback.bump("travel", feedback.REGRET_HITS, yesterday, 50)  # another app: not drawn
    rollup_day(yesterday.date(), now)
    rollup_day(now.date(), now)
    # a figure another process might roll up one day: never drawn in these charts
    DailyMetric.objects.create(day=now.date(), app_name="pharmacy", name="erasures", value=9)

    response = login("ops").get(reverse("records:overview"), {"app": "pharmacy"})
    assert response.status_code == 200
    forgot = figure(response, "forgot-figure")
    regret, rate = forgot["data"]
    assert regret["y"][-2:] == [2, 0] and rate["y"][-2:] == [250.0, None]
    assert regret["y"][0] is None  # a day without a roll-up is a gap, not a zero
    sweeps = figure(response, "sweeps-figure")
    assert sweeps["data"][0]["y"][-2:] == [0, 0]
    growth = figure(response, "growth-figure")
    assert sum(v for v in growth["data"][0]["y"] if v) == 7
    content = response.content.decode()
    assert "erasure" not in json.dumps([forgot, sweeps, growth])
    assert "No daily roll-ups" not in content
    assert "Eviction only" in content  # the live eviction chart stays


def test_without_rollups_the_overview_says_so_plainly(login):
    make_records("pharmacy", "a", 3)
    response = login("support").get(reverse("records:overview"))
    content = response.content.decode()
    for element in ("forgot-figure", "sweeps-figure", "growth-figure"):
        assert f'id="{element}"' not in content
    assert "No daily roll-ups in the last 30 days yet, so no forgot-something rate" in content
    assert "No daily roll-ups in the last 30 days yet, so no sweep counts" in content
    assert "No records added in the last 12 weeks" in content  # made directly, not ingested
    assert 'id="records-figure"' in content  # the live charts are still there
