"""The Sweeps pages: runs with progress, starting runs, a dry-run's report, applying it."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memadmin.models import AuditEntry
from records.models import MemoryRecord
from records.policies import policy_for, update_policy
from sweeper import runs
from sweeper.models import ApplyStatus, EntryKind, PlanEntry, Run, RunKind, RunStatus
from sweeper.tasks import run_inline
from tests.records.rows import make_record

from .helpers import make_session

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
APP = "pharmacy"
SWEEPS = reverse("sweeper:sweeps")
START = reverse("sweeper:start")


def run_url(run):
    return reverse("sweeper:run", args=[run.pk])


def apply_url(run):
    return reverse("sweeper:apply", args=[run.pk])


def dry_run_start(**fields):
    data = {"mode": "dry_run", "dry-kind": "sweep", "dry-app": "", "dry-as_of": ""}
    data.update({f"dry-{k}": v for k, v in fields.items()})
    return data


@pytest.fixture
def plan():
    """A finished dry-run sweep: two idle sessions and, with a cap of 2, four victims:
    the three old notes and the question the sweep's own ingest would store."""
    update_policy(APP, {"max_records": 2})
    now = timezone.now()
    old = [
        MemoryRecord.objects.create(
            app_name=APP,
            user_id="u1",
            content=f"old note {i} <b>bold</b>",
            importance=0.1,
            tokens=2,
            created_at=now - timedelta(days=100),
            last_accessed_at=now - timedelta(days=100 + i),
        )
        for i in range(3)
    ]
    make_session(
        APP,
        "u1",
        "s1",
        ["My name is Ana", "Deliver to 4 Mill Lane", "What time do you open?"],
        idle_days=9,
    )
    make_session(APP, "u2", "s2", ["My name is Bo"], idle_days=9)
    run = run_inline(runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False))
    assert run.status == RunStatus.DONE
    run.old_records = old
    return run


def counts(run):
    entries = PlanEntry.objects.filter(run=run)
    return (
        entries.filter(kind=EntryKind.SESSION).count(),
        entries.filter(kind=EntryKind.RECORD).count(),
    )


# --- access ---------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_login(client, plan):
    for url in (SWEEPS, run_url(plan)):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    for url in (START, apply_url(plan)):
        response = client.post(url, {"step": "confirm", **dry_run_start()})
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert Run.objects.count() == 1 and not AuditEntry.objects.exists()


@pytest.mark.parametrize("role", ["support", "compliance"])
def test_every_role_may_look_but_only_ops_starts_or_applies(login, plan, role):
    client = login(role)
    assert client.get(SWEEPS).status_code == 200
    page = client.get(run_url(plan))
    assert page.status_code == 200
    assert "Applying a plan needs the ops role" in page.content.decode()
    assert b"Start dry-run" not in client.get(SWEEPS).content
    assert client.post(START, dry_run_start()).status_code == 403
    assert (
        client.post(START, {"mode": "real", "real-kind": "sweep", "step": "confirm"}).status_code
        == 403
    )
    assert client.post(apply_url(plan), {"step": "confirm"}).status_code == 403
    assert Run.objects.count() == 1  # the plan only
    assert not AuditEntry.objects.exists()


def test_staff_without_a_role_may_not_look(login, plan):
    client = login(username="nobody")
    assert client.get(SWEEPS).status_code == 403
    assert client.get(run_url(plan)).status_code == 403


# --- the list ---------------------------------------------------------------------------


def test_runs_are_listed_with_progress_bars_and_poll_only_while_something_runs(login):
    done = run_inline(runs.create_run(RunKind.ENFORCE, enqueue=False))
    client = login("support")
    content = client.get(SWEEPS).content.decode()
    assert f'id="run-{done.pk}"' in content and "<progress" in content
    assert 'hx-trigger="every 2s"' not in content  # nothing is running: no polling

    policy_for(APP)  # a run limited to an app needs an app memadmin knows
    running = runs.create_run(RunKind.SWEEP, dry_run=True, app_name=APP, enqueue=False)
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, total=4, done=1)
    response = client.get(SWEEPS, headers=HX)
    partial = response.content.decode()
    assert "<nav" not in partial and partial.lstrip().startswith('<div id="run-table"')
    assert 'hx-trigger="every 2s"' in partial
    assert '<progress value="1" max="4"' in partial and "1/4" in partial
    assert "dry-run" in partial and APP in partial

    Run.objects.filter(pk=running.pk).update(status=RunStatus.DONE, done=4)
    partial = client.get(SWEEPS, headers=HX).content.decode()
    assert 'hx-trigger="every 2s"' not in partial  # the poll that sees it finish stops
    assert '<progress value="4" max="4"' in partial


def test_the_list_pages_in_constant_queries(login):
    client = login("ops")

    def queries(n):
        Run.objects.all().delete()
        for _ in range(n):
            runs.create_run(RunKind.ENFORCE, enqueue=False)
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(SWEEPS).status_code == 200
        return len(ctx)

    assert queries(3) == queries(30)
    page = client.get(SWEEPS)
    assert len(page.context["page"].object_list) == 25 and "Older" in page.content.decode()


# --- starting runs ------------------------------------------------------------------------


def test_ops_starts_a_dry_run_and_it_is_queued_and_audited(login, make_user):
    policy_for(APP)
    client = login("ops", username="olga")
    response = client.post(START, dry_run_start(app=APP))
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{SWEEPS}?started={run.pk}"
    assert (run.kind, run.dry_run, run.status, run.app_name) == ("sweep", True, "queued", APP)
    assert run.requested_by.username == "olga"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username, entry.app_name, entry.target) == (
        "run.start",
        "olga",
        APP,
        str(run.pk),
    )
    assert entry.after["kind"] == "sweep" and entry.after["dry_run"] is True
    page = client.get(response["Location"]).content.decode()
    assert f"Dry-run idle-session sweep #{run.pk} is queued" in page
    assert f'id="run-{run.pk}"' in page and "waiting for a worker" in page
    assert 'hx-trigger="every 2s"' in page and f"started={run.pk}" in page


@pytest.mark.parametrize("started", ["abc", "-1", "9" * 30, "12345"])
def test_a_bad_or_unknown_started_run_shows_no_notice(login, started):
    client = login("ops")
    response = client.get(SWEEPS, {"started": started})
    assert response.status_code == 200 and 'id="run-notice"' not in response.content.decode()


def test_the_started_runs_notice_says_done_and_links_to_the_run(login):
    policy_for(APP)
    client = login("ops")
    run = runs.create_run("sweep", app_name=APP, dry_run=True, enqueue=False)
    run_inline(run)
    html = client.get(SWEEPS, {"started": run.pk}, headers={"HX-Request": "true"}).content
    html = html.decode()
    assert "is done" in html and f'href="/sweeps/{run.pk}/">open its report' in html
    assert 'hx-trigger="every 2s"' not in html  # nothing left to follow


def test_a_dry_run_can_look_ahead_but_not_back(login):
    client = login("ops")
    today = timezone.now().date()
    response = client.post(START, dry_run_start(kind="enforce", as_of=str(today + timedelta(30))))
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.kind == "enforce" and run.as_of.date() == today + timedelta(30)

    response = client.post(START, dry_run_start(as_of=str(today - timedelta(1))))
    assert response.status_code == 422
    assert "As of must be today or a later day" in response.content.decode()
    response = client.post(START, dry_run_start(app="no-such-app"))
    assert response.status_code == 422
    assert "Choose one of the listed apps" in response.content.decode()
    assert Run.objects.count() == 1 and AuditEntry.objects.count() == 1


def test_a_real_run_is_confirmed_before_it_starts(login):
    client = login("ops")
    data = {"mode": "real", "real-kind": "sweep", "real-app": "", "step": "review"}
    review = client.post(START, data)
    assert review.status_code == 200
    content = review.content.decode()
    assert "Retire every idle session of every app now" in content
    assert "cannot be undone" in content and 'value="confirm"' in content
    assert not Run.objects.exists() and not AuditEntry.objects.exists()

    response = client.post(START, {**data, "step": "confirm"})
    assert response.status_code == 302
    run = Run.objects.get()
    assert (run.kind, run.dry_run, run.status) == ("sweep", False, "queued")
    assert AuditEntry.objects.get().after["dry_run"] is False


# --- a dry-run's report ---------------------------------------------------------------------


def test_the_report_lists_sessions_and_victims_with_reasons_and_scores(login, plan):
    response = login("support").get(run_url(plan))
    assert response.status_code == 200
    content = response.content.decode()
    summary = response.context["summary"]
    assert (summary.sessions, summary.records) == counts(plan) == (2, 4)
    assert 'Session <code class="sid" title="s1">s1</code>' in content
    assert 'Session <code class="sid" title="s2">s2</code>' in content
    assert content.count('<tr class="group">') == 2  # u1 and u2
    rows = [r.entry for r in response.context["page"].object_list]
    assert [(e.user_id, e.kind) for e in rows][:2] == [("u1", "session"), ("u1", "record")]
    record = next(e for e in rows if e.record_id)
    assert f"{record.recency:.3f}" in content and f"{record.score:.3f}" in content
    assert "old note" in content and "&lt;b&gt;bold&lt;/b&gt;" in content  # text, escaped
    assert "<b>bold</b>" not in content
    assert 'hx-trigger="every 2s"' not in content


def test_the_report_filters_by_app_user_kind_reason_and_swaps_in_place(login, plan):
    client = login("ops")
    only_sessions = client.get(run_url(plan), {"kind": "session"})
    assert {r.entry.kind for r in only_sessions.context["page"].object_list} == {"session"}
    u2 = client.get(run_url(plan), {"user": "u2"}, headers=HX)
    assert {r.entry.user_id for r in u2.context["page"].object_list} == {"u2"}
    assert "<nav" not in u2.content.decode()
    caps = client.get(run_url(plan), {"reason": "record_cap", "app": APP})
    assert {r.entry.reason for r in caps.context["page"].object_list} == {"record_cap"}
    none = client.get(run_url(plan), {"app": "travel"})
    assert "Nothing matches these filters" in none.content.decode()


def test_an_invalid_report_filter_keeps_the_others_and_what_was_typed(login, plan):
    long = "u" * 257
    page = login("ops").get(run_url(plan), {"kind": "session", "user": long})
    assert {r.entry.kind for r in page.context["page"].object_list} == {"session"}
    html = page.content.decode()
    assert f'value="{long}"' in html and "That filter is not applied" in html


def test_the_report_pages_in_constant_queries(login):
    client = login("ops")
    plan = runs.create_run(RunKind.ENFORCE, dry_run=True, enqueue=False)
    Run.objects.filter(pk=plan.pk).update(status=RunStatus.DONE)

    def queries(n):
        PlanEntry.objects.all().delete()
        MemoryRecord.objects.all().delete()
        for i in range(n):
            record = make_record(APP, f"user-{i % 7}", content=f"note {i}")
            PlanEntry.objects.create(
                run=plan,
                kind=EntryKind.RECORD,
                app_name=APP if i % 2 else "travel",
                user_id=record.user_id,
                record_id=record.pk,
                reason="record_cap" if i % 3 else "expired",
                recency=0.1,
                frequency=0.2,
                importance=0.3,
                score=0.2,
                tokens=10,
            )
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse("sweeper:run", args=[plan.pk])).status_code == 200
        return len(ctx)

    assert queries(4) == queries(120)


# --- applying the plan ---------------------------------------------------------------------


def test_apply_is_confirmed_with_the_exact_counts_then_queued_and_audited(login, plan):
    client = login("ops", username="olga")
    review = client.post(apply_url(plan), {"step": "review"}, headers=HX)
    assert review.status_code == 200
    content = review.content.decode()
    assert content.lstrip().startswith('<div id="run-status"')
    assert re.search(
        r"retire <strong>2</strong> sessions and evict <strong>4</strong> records", content
    )
    assert "(1 of them created by ingesting those sessions)" in content
    assert "refused with a message" in content
    assert not Run.objects.filter(kind=RunKind.APPLY).exists()
    assert not AuditEntry.objects.exists()

    response = client.post(apply_url(plan), {"step": "confirm"})
    assert response.status_code == 302 and response["Location"] == run_url(plan)
    applying = Run.objects.get(kind=RunKind.APPLY)
    assert (applying.plan_id, applying.status, applying.requested_by.username) == (
        plan.pk,
        "queued",
        "olga",
    )
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username, entry.target) == (
        "plan.apply",
        "olga",
        str(plan.pk),
    )
    assert entry.before == {"sessions_pending": 2, "records_pending": 4}
    assert entry.after == {"apply_run": applying.pk, "sessions_to_retire": 2, "records_to_evict": 4}
    page = client.get(run_url(plan)).content.decode()
    assert f"run #{applying.pk}" in page and 'hx-trigger="every 2s"' in page  # polls the apply


def test_applying_twice_is_refused_with_the_message(login, plan):
    client = login("ops")
    assert client.post(apply_url(plan), {"step": "confirm"}).status_code == 302
    again = client.post(apply_url(plan), {"step": "confirm"}, headers=HX)
    assert again.status_code == 409
    assert f"The plan of dry-run #{plan.pk} was applied already." in again.content.decode()
    review = client.post(apply_url(plan), {"step": "review"})
    assert review.status_code == 409 and "applied already" in review.content.decode()
    assert Run.objects.filter(kind=RunKind.APPLY).count() == 1
    assert AuditEntry.objects.count() == 1


def test_only_a_finished_dry_run_can_be_applied(login):
    client = login("ops")
    queued = runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False)
    response = client.post(apply_url(queued), {"step": "confirm"})
    assert response.status_code == 409 and "wait until it is done" in response.content.decode()
    real = run_inline(runs.create_run(RunKind.SWEEP, enqueue=False))
    response = client.post(apply_url(real), {"step": "review"})
    assert response.status_code == 409 and "not a dry-run" in response.content.decode()
    assert not Run.objects.filter(kind=RunKind.APPLY).exists()
    assert not AuditEntry.objects.exists()


def test_stale_parts_show_their_messages_on_the_report_after_applying(login, plan):
    client = login("ops")
    pinned = plan.old_records[2]
    assert PlanEntry.objects.filter(run=plan, record_id=pinned.pk).exists()
    MemoryRecord.objects.filter(pk=pinned.pk).update(pinned=True)  # support pinned it since
    assert client.post(apply_url(plan), {"step": "confirm"}).status_code == 302
    applied = run_inline(Run.objects.get(kind=RunKind.APPLY))
    assert applied.status == RunStatus.DONE

    # the status poll sees the application finish: it stops and reloads the report once
    poll = client.get(run_url(plan), {"part": "status", "polling": "1"}, headers=HX)
    status = poll.content.decode()
    assert 'hx-trigger="every 2s"' not in status and 'hx-trigger="load"' in status
    assert "applied: 5" in status and "refused: 1" in status

    page = client.get(run_url(plan), {"status": "refused"})
    [row] = page.context["page"].object_list
    assert row.entry.record_id == pinned.pk
    assert row.entry.apply_status == ApplyStatus.REFUSED
    assert "The record was pinned after the preview; it stays." in page.content.decode()
    applied_rows = client.get(run_url(plan), {"status": "applied"}).context["page"].object_list
    assert len(applied_rows) == 5 and all(r.entry.apply_message for r in applied_rows)
    assert MemoryRecord.objects.filter(pk=pinned.pk).exists()
