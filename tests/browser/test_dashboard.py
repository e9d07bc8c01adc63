"""The dashboard in a real browser: htmx swaps in place, live previews, charts drawn."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memadmin.models import AuditEntry
from records.policies import policy_for, update_policy
from tests.records.rows import make_eviction, make_record, make_records

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_support_pins_a_record_in_place(log_in, live_server):
    record = make_record("pharmacy", "alice", content="Allergic to penicillin", importance=0.9)
    page = log_in("support", username="sam")
    page.goto(f"{live_server.url}/users/pharmacy/alice/")
    page.evaluate("window.notReloaded = true")
    row = page.locator(f"#record-{record.pk}")
    row.get_by_role("button", name="Pin").click()

    expect(row.locator(".badge.pinned")).to_have_text("pinned")
    expect(row.get_by_role("button", name="Unpin")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True  # the row was swapped, not the page
    record.refresh_from_db()
    assert record.pinned
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username) == ("record.pin", "sam")
    assert (entry.target, entry.before, entry.after) == (
        str(record.pk),
        {"pinned": False},
        {"pinned": True},
    )
    assert not page.js_errors


def test_ops_changes_a_what_if_value_and_the_victims_change(log_in, live_server):
    policy_for("pharmacy")
    make_records("pharmacy", "alice", 6, importance=0.8)
    make_record("pharmacy", "alice", importance=0.0, content="Asked about opening hours")
    page = log_in("ops")
    page.goto(f"{live_server.url}/users/pharmacy/alice/")
    verdict = page.locator("#preview .verdict")
    expect(verdict).to_contain_text("With the current policy, 0 records")

    page.fill("#id_max_records", "6")  # no submit: htmx previews as the value changes
    expect(verdict).to_contain_text("With these values, 1 record")
    expect(page.locator("#preview .victims tbody tr")).to_have_count(1)
    expect(page.locator("#preview .victims")).to_contain_text("Asked about opening hours")

    page.fill("#id_max_records", "4")
    expect(verdict).to_contain_text("With these values, 3 records")

    page.fill("#id_w_recency", "0.9")
    expect(page.locator("#preview .errors")).to_contain_text("Weights must sum to 1")
    assert not page.js_errors


def test_overview_charts_render_with_data(log_in, live_server):
    policy_for("pharmacy")
    update_policy("pharmacy", {"max_records": 20})
    for i, n in enumerate([3, 8, 15, 25]):
        make_records("pharmacy", f"user-{i}", n)
    now = timezone.now()
    for reason in ("record_cap", "record_cap", "expired"):
        make_eviction(reason, now, app="pharmacy")
    page = log_in("compliance")
    page.goto(f"{live_server.url}/overview/")
    for figure in ("records-figure", "tokens-figure", "evictions-figure"):
        chart = page.locator(f'[data-figure="{figure}"]')
        expect(chart.locator("svg.main-svg").first).to_be_visible()
    # the cap line and a bar per non-empty bucket are drawn
    records_chart = page.locator('[data-figure="records-figure"]')
    expect(records_chart.locator(".shapelayer path")).to_have_count(1)
    assert records_chart.locator(".bars path").count() >= 4
    # the cap's label sits above the plotting area, never over a bar
    label = records_chart.locator(".annotation", has_text="cap 20").bounding_box()
    plot = records_chart.locator(".nsewdrag").first.bounding_box()
    assert label["y"] + label["height"] <= plot["y"] + 1
    # no tick at half a user: every y tick is a whole number
    ticks = records_chart.locator(".ytick text").all_text_contents()
    assert ticks and all(t.replace(",", "").isdigit() for t in ticks)
    # each eviction reason has its legend entry, in its own colour
    evictions = page.locator('[data-figure="evictions-figure"]')
    expect(evictions.locator(".legend .traces")).to_have_count(2)
    expect(evictions.locator(".legend")).to_contain_text("record cap")
    expect(evictions.locator(".legend")).to_contain_text("expired (TTL)")
    assert not page.js_errors


def test_users_table_sorts_and_searches_without_reloading(log_in, live_server):
    make_records("pharmacy", "alice", 3)
    make_records("pharmacy", "bob", 9)
    make_records("travel", "carol", 5)
    page = log_in("support")
    page.goto(f"{live_server.url}/users/")
    page.evaluate("window.notReloaded = true")
    first_user = page.locator("#user-table tbody tr td:nth-child(2)").first
    expect(first_user).to_have_text("bob")  # most records first

    page.locator("#user-table thead").get_by_role("link", name="Records").click()
    expect(first_user).to_have_text("alice")  # the same column again: fewest first
    expect(page).to_have_url(f"{live_server.url}/users/?q=&sort=records&dir=asc")

    page.fill("#q", "car")
    expect(page.locator("#user-table tbody tr")).to_have_count(1)
    expect(first_user).to_have_text("carol")
    assert page.evaluate("window.notReloaded") is True
    first_user.get_by_role("link").click()
    expect(page.locator("h1")).to_contain_text("carol")
