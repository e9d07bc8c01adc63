"""The erasure list in Chromium: finding by user id and downloading a receipt are POSTs."""

import pytest
from playwright.sync_api import expect

from erasure import jobs
from erasure.models import ErasureAuditEntry

from ..erasure.helpers import USER, erase, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_compliance_finds_a_request_and_downloads_its_receipt(log_in, live_server):
    done = erase("pharmacy")
    other = submit("pharmacy", user="someone-else")
    page = log_in("compliance", username="carol")
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(live_server.url + "/erasure/")
    assert page.locator("#requests tbody tr").count() == 2

    page.fill("input[name=user]", USER)
    page.click("button:has-text('Find')")
    page.locator("text=Matched by keyed hash").wait_for()
    rows = page.locator("#requests tbody tr")
    assert rows.count() == 1 and rows.first.locator(f"a:has-text('#{done.pk}')").count() == 1
    assert page.locator(f"a:has-text('#{other.pk}')").count() == 0
    assert page.url == live_server.url + "/erasure/"
    assert not [url for url in requested if USER in url]  # never in an address

    with page.expect_download() as download:
        page.click("#requests button:has-text('download')")
    assert download.value.suggested_filename == f"erasure-{done.pk}-receipt.json"
    assert USER not in download.value.path().read_text()
    assert ErasureAuditEntry.objects.filter(
        request=done, action="receipt_downloaded", actor="carol"
    ).exists()
    assert page.js_errors == []


def test_the_subject_row_drops_the_user_id_once_verified_without_a_reload(log_in, live_server):
    req = submit("pharmacy")
    page = log_in("compliance")
    page.goto(f"{live_server.url}/erasure/{req.pk}/")
    subject = page.locator("#request-summary tr", has_text="Subject")
    expect(subject).to_contain_text(USER)
    page.evaluate("window.notReloaded = true")

    jobs.run(req.pk)  # no worker here: the job runs in this process; the page polls

    expect(page.locator("#progress")).to_contain_text("Status: verified")
    expect(subject).to_contain_text("user id cleared after verification")
    expect(subject).not_to_contain_text(USER)
    assert page.evaluate("window.notReloaded") is True
    assert page.js_errors == []
