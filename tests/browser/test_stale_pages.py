"""Pages stay consistent after an in-place change: what a change affects is reloaded
(htmx events or out-of-band swaps), without reloading the page."""

import pytest
from playwright.sync_api import expect

from records.models import MemoryRecord
from records.policies import policy_for, update_policy
from tests.records.rows import make_record

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def five_at_cap_three():
    """Five records at a cap of three: the two lowest unpinned scores would go."""
    policy_for("pharmacy")
    update_policy("pharmacy", {"max_records": 3})
    return {
        i: make_record("pharmacy", "alice", importance=i / 10, content=f"fact {i}")
        for i in (9, 7, 5, 3, 1)
    }


def not_reloaded(page):
    page.evaluate("window.notReloaded = true")
    return lambda: page.evaluate("window.notReloaded") is True


def ids_are_unique(page) -> bool:
    return page.evaluate(
        "() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id);"
        " return ids.length === new Set(ids).size; }"
    )


def test_a_pin_updates_the_pinned_count_the_other_rows_and_the_preview(
    log_in, live_server, five_at_cap_three
):
    records = five_at_cap_three
    page = log_in("support", "ops")
    page.goto(f"{live_server.url}/users/pharmacy/alice/")
    same_page = not_reloaded(page)
    pinned = page.locator("#user-summary div", has_text="Pinned").locator("strong")
    expect(pinned).to_have_text("0")
    fifth = page.locator(f"#record-{records[5].pk}")
    expect(fifth.locator(".badge.record_cap")).to_have_count(0)

    page.locator(f"#record-{records[1].pk}").get_by_role("button", name="Pin").click()

    expect(pinned).to_have_text("1")
    # the pinned record is kept, so the next lowest score now goes in its place
    expect(fifth.locator(".badge")).to_contain_text("would go")
    expect(page.locator("#preview .verdict")).to_contain_text("2 records")
    assert same_page() and ids_are_unique(page)
    assert not page.js_errors


def test_an_importance_change_reranks_the_other_rows(log_in, live_server, five_at_cap_three):
    records = five_at_cap_three
    page = log_in("support")
    page.goto(f"{live_server.url}/users/pharmacy/alice/")
    same_page = not_reloaded(page)
    top = page.locator(f"#record-{records[9].pk} td").first
    expect(top).to_have_text("1")

    row = page.locator(f"#record-{records[1].pk}")
    row.locator("summary", has_text="Importance").click()
    row.locator("input[name=importance]").fill("1")
    row.locator("input[name=reason]").fill("customer asked")
    row.get_by_role("button", name="Save").click()

    expect(page.locator(f"#record-{records[1].pk} td").first).to_have_text("1")
    expect(top).to_have_text("2")  # another row's rank, reloaded
    assert MemoryRecord.objects.get(pk=records[1].pk).importance == 1
    assert same_page() and ids_are_unique(page)


def test_what_if_swaps_one_preview_and_a_refused_value_replaces_the_old_error(
    log_in, live_server, five_at_cap_three
):
    page = log_in("ops")
    page.goto(f"{live_server.url}/users/pharmacy/alice/")
    page.fill("#id_w_recency", "0.9")
    expect(page.locator("#preview .errors")).to_contain_text("Weights must sum to 1")
    page.fill("#id_w_recency", page.locator("#id_w_recency").get_attribute("value"))
    page.fill("#id_max_records", "0")  # the browser would refuse it; the server explains
    expect(page.locator("#preview .errors")).to_contain_text("at least 1")
    expect(page.locator("#preview .errors")).not_to_contain_text("Weights")
    page.fill("#id_max_records", "4")
    expect(page.locator("#preview .verdict")).to_contain_text("With these values, 1 record")
    expect(page.locator("#preview .errors")).to_have_count(0)
    expect(page.locator("div#preview")).to_have_count(1)
    assert ids_are_unique(page)
