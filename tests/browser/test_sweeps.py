"""The Sweeps page in a real browser: start a dry-run, watch its progress, open its report."""

import pytest
from playwright.sync_api import expect

from records.policies import update_policy
from sweeper.models import Run, RunStatus
from sweeper.tasks import run_inline
from tests.sweeper.helpers import make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_stray_messages():
    """The page queues the run for a worker; none runs here, so drop that message after."""
    from memadmin.celery import app

    yield
    app.control.purge()


def test_ops_starts_a_dry_run_sees_its_progress_and_opens_its_report(
    log_in, live_server, no_stray_messages
):
    update_policy("pharmacy", {"max_records": 1})
    make_session(
        "pharmacy", "alice", "s-idle", ["My name is Ana", "What time do you open?"], idle_days=9
    )
    page = log_in("ops")
    page.goto(f"{live_server.url}/sweeps/")
    page.get_by_role("button", name="Start dry-run").click()

    run = Run.objects.get()
    row = page.locator(f"#run-{run.pk}")
    expect(row).to_contain_text("dry-run")
    expect(row.locator(".badge")).to_contain_text(["dry-run", "queued"])
    expect(row.locator("progress")).to_be_visible()
    notice = page.locator("#run-notice")
    expect(notice).to_contain_text(f"#{run.pk} is queued")
    page.evaluate("window.notReloaded = true")

    # No worker here: run it in this process; the page's 2-second poll picks it up.
    assert run_inline(run).status == RunStatus.DONE
    expect(row.locator(".badge.status-done")).to_have_text("done")
    expect(row.locator("progress")).to_have_attribute("value", "1")
    expect(row).to_contain_text("records planned: 1")
    assert page.evaluate("window.notReloaded") is True  # swapped in place, not reloaded
    expect(page.locator("#run-table")).not_to_have_attribute("hx-trigger", "every 2s")
    expect(notice).to_contain_text(f"#{run.pk} is done")  # the notice follows the run
    expect(notice.get_by_role("link", name="open its report")).to_have_attribute(
        "href", f"/sweeps/{run.pk}/"
    )

    row.get_by_role("link", name=f"#{run.pk}").click()
    expect(page.locator("h1")).to_contain_text("Dry-run idle-session sweep")
    report = page.locator("#report-table")
    expect(report).to_contain_text("Session s-idle")
    expect(report.locator(".badge.record_cap")).to_have_count(1)
    expect(report).to_contain_text("new record from session s-idle")
    expect(page.get_by_role("button", name="Apply this plan…")).to_be_visible()
    assert not page.js_errors


def test_applying_a_plan_updates_the_reports_applied_column(log_in, live_server, no_stray_messages):
    from sweeper import runs
    from sweeper.models import RunKind

    update_policy("pharmacy", {"max_records": 1})
    make_session(
        "pharmacy", "alice", "s-idle", ["My name is Ana", "Do you open late?"], idle_days=9
    )
    plan = run_inline(
        runs.create_run(RunKind.SWEEP, app_name="pharmacy", dry_run=True, enqueue=False)
    )
    page = log_in("ops")
    page.goto(f"{live_server.url}/sweeps/{plan.pk}/")
    applied = page.locator("#report-summary tbody tr td").nth(5)
    expect(applied).to_have_text("0")
    page.evaluate("window.notReloaded = true")
    page.get_by_role("button", name="Apply this plan…").click()
    page.get_by_role("button", name="Apply: retire").click()
    expect(page.locator("#run-status")).to_contain_text("Applied by")
    application = Run.objects.get(kind=RunKind.APPLY)
    assert run_inline(application).status == RunStatus.DONE  # no worker here
    expect(page.locator("#run-status")).to_contain_text("done")
    expect(applied).not_to_have_text("0")  # the summary reloads with the report
    expect(page.locator("#report-table .badge", has_text="applied").first).to_be_visible()
    assert page.evaluate("window.notReloaded") is True
    assert not page.js_errors
