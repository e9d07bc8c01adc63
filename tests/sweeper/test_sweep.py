"""Retiring idle sessions, dry-runs and applying their plans (in-process)."""

import time
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone
from google.genai import types

from records import artifacts, sessions
from records.memory_service import add_session
from records.models import AgentSession, Artifact, MemoryRecord, RetiredSession, SessionEvent
from records.policies import update_policy
from records.policy import PolicyParams
from sweeper import plans, runs
from sweeper.models import ApplyStatus, PlanEntry, Run, RunKind, RunStatus
from sweeper.sweep import retire_session
from sweeper.tasks import run_inline

from ..records.factories import text_event
from .helpers import make_session

pytestmark = pytest.mark.django_db

APP = "pharmacy"


def sweep(dry_run=False, as_of=None, app=""):
    run = runs.create_run(RunKind.SWEEP, as_of=as_of, app_name=app, dry_run=dry_run, enqueue=False)
    return run_inline(run)


def apply(plan):
    plans.check_appliable(plan)
    return run_inline(runs.create_run(RunKind.APPLY, plan=plan, enqueue=False))


def test_idle_sessions_are_ingested_then_artifacts_then_session_deleted_with_a_tombstone():
    make_session(APP, "u1", "old", ["My name is Ana", "I am allergic to latex"], idle_days=10)
    make_session(APP, "u1", "fresh", ["Deliver to 4 Mill Lane"], idle_days=1)
    artifacts.save_artifact(
        app_name=APP,
        user_id="u1",
        filename="user:profile.txt",
        artifact=types.Part.from_text(text="shared"),
    )
    run = sweep()
    assert run.status == RunStatus.DONE and run.stats["sessions_retired"] == 1
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["fresh"]
    assert not SessionEvent.objects.filter(session__session_id="old").exists()
    # memories from the retired session, with provenance resolving to its tombstone
    records = MemoryRecord.objects.filter(source_session_id="old")
    assert sorted(records.values_list("content", flat=True)) == [
        "I am allergic to latex",
        "My name is Ana",
    ]
    tomb = RetiredSession.objects.get(session_id="old")
    assert (tomb.app_name, tomb.user_id, tomb.event_count, tomb.run_id) == (APP, "u1", 2, run.id)
    # the session's own artifacts went first; the user's shared ones stay
    assert not Artifact.objects.filter(session_id="old").exists()
    assert artifacts.list_artifact_keys(app_name=APP, user_id="u1") == ["user:profile.txt"]
    assert Artifact.objects.filter(session_id="fresh").exists()


def test_idle_threshold_comes_from_each_apps_policy():
    update_policy("travel", {"session_idle_days": 30})
    make_session(APP, "u1", "p-10", ["My name is Ana"], idle_days=10)
    make_session("travel", "u1", "t-10", ["My name is Ana"], idle_days=10)
    make_session("travel", "u1", "t-40", ["My name is Ana"], idle_days=40)
    sweep()
    assert set(AgentSession.objects.values_list("session_id", flat=True)) == {"t-10"}


@pytest.mark.parametrize("stamp", [1796266895557, 1e308, 4102444800.0])  # ms, huge, 2100
def test_a_session_stored_with_a_stamp_no_clock_reaches_is_retired_not_kept_forever(stamp):
    make_session(APP, "u1", "stuck", ["My name is Ana"], idle_days=0)
    make_session(APP, "u1", "fresh", ["Deliver to 4 Mill Lane"], idle_days=0)
    # as written before timestamps were checked: the session and its event
    AgentSession.objects.filter(session_id="stuck").update(last_update_time=stamp)
    SessionEvent.objects.filter(session__session_id="stuck").update(timestamp=stamp)
    run = sweep()
    assert run.status == RunStatus.DONE and run.stats["sessions_retired"] == 1
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["fresh"]
    [record] = MemoryRecord.objects.filter(source_session_id="stuck")
    assert record.content == "My name is Ana"
    assert RetiredSession.objects.get(session_id="stuck").last_update_time == stamp


def test_a_worker_killed_between_ingest_and_delete_retires_once_without_duplicates():
    session = make_session(APP, "u1", "s1", ["My name is Ana", "Order #12 is late"], idle_days=9)
    full = sessions.get_session(app_name=APP, user_id="u1", session_id="s1")
    add_session(full, timezone.now())  # the crash: ingested, but never deleted
    assert MemoryRecord.objects.count() == 2 and AgentSession.objects.count() == 1
    assert retire_session(APP, "u1", session.id, timezone.now()) == "retired"
    assert retire_session(APP, "u1", session.id, timezone.now()) == "already retired"
    assert MemoryRecord.objects.count() == 2
    assert RetiredSession.objects.count() == 1 and AgentSession.objects.count() == 0


def table_counts():
    return {
        m._meta.label: m.objects.count()
        for m in apps.get_models()
        if m._meta.app_label in {"records"}
    }


def test_dry_run_changes_nothing_and_stores_the_report_with_scores():
    update_policy(APP, {"max_records": 2})
    MemoryRecord.objects.create(
        app_name=APP,
        user_id="u1",
        content="old note",
        importance=0.1,
        created_at=timezone.now() - timedelta(days=100),
        last_accessed_at=timezone.now() - timedelta(days=100),
        tokens=2,
    )
    make_session(
        APP,
        "u1",
        "s1",
        ["My name is Ana", "Deliver to 4 Mill Lane", "What time do you open?"],
        idle_days=9,
    )
    before = table_counts()
    run = sweep(dry_run=True)
    assert table_counts() == before
    entries = PlanEntry.objects.filter(run=run)
    [session_entry] = entries.filter(kind="session")
    assert (session_entry.session_id, session_entry.snapshot["events"]) == ("s1", 3)
    records = entries.filter(kind="record").order_by("score")
    assert [e.reason for e in records] == ["record_cap", "record_cap"]
    assert records[0].record_id is not None  # the old note exists now
    assert records[1].record_id is None and records[1].dedupe_key  # created by the sweep
    for e in records:
        w = PolicyParams()  # the app's policy: the default preset
        terms = (
            w.w_recency * e.recency,
            w.w_frequency * e.frequency,
            w.w_importance * e.importance,
        )
        assert e.score == pytest.approx(sum(terms))


def test_a_dry_run_sends_nothing_to_the_embedder_and_counts_nothing(settings):
    """What a dry-run simulates never happened: no records embedded (the embedder may be
    a hosted API, sent memory text), no records-added or sessions-ingested counts."""
    from memadmin import counters
    from records import touches
    from records.models import DailyCounter
    from tests import embedders

    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": "tests.embedders.bag_of_concepts"}
    make_session(APP, "u1", "s1", ["My name is Ana", "Deliver to 4 Mill Lane"], idle_days=9)
    calls, added = len(embedders.CALLS), counters.INGESTS.labels(APP)._value.get()
    run = sweep(dry_run=True)
    assert PlanEntry.objects.filter(run=run, kind="session").count() == 1
    touches.flush_touches()
    assert len(embedders.CALLS) == calls
    assert counters.INGESTS.labels(APP)._value.get() == added
    assert not DailyCounter.objects.filter(app_name=APP).exists()
    sweep()  # the real sweep does all of it
    touches.flush_touches()
    assert len(embedders.CALLS) > calls
    assert counters.INGESTS.labels(APP)._value.get() > added
    assert DailyCounter.objects.filter(app_name=APP, name="sessions_ingested").exists()


def test_dry_run_as_of_next_month_previews_sessions_that_will_be_idle_by_then():
    make_session(APP, "u1", "s-now", ["My name is Ana"], idle_days=9)
    make_session(APP, "u1", "s-soon", ["My name is Bo"], idle_days=2)
    now_run = sweep(dry_run=True)
    later = sweep(dry_run=True, as_of=timezone.now() + timedelta(days=30))

    def planned(run):
        return set(
            PlanEntry.objects.filter(run=run, kind="session").values_list("session_id", flat=True)  # noqa: E731
        )

    assert planned(now_run) == {"s-now"}
    assert planned(later) == {"s-now", "s-soon"}


def test_apply_executes_exactly_the_plan_and_refuses_stale_parts():
    update_policy(APP, {"max_records": 3})
    old = [
        MemoryRecord.objects.create(
            app_name=APP,
            user_id="u1",
            content=f"old note {i}",
            importance=0.1,
            tokens=2,
            created_at=timezone.now() - timedelta(days=100),
            last_accessed_at=timezone.now() - timedelta(days=100 + i),
        )
        for i in range(3)
    ]
    make_session(APP, "u1", "s1", ["My name is Ana", "Deliver to 4 Mill Lane"], idle_days=9)
    make_session(APP, "u2", "s2", ["My name is Bo"], idle_days=9)
    plan = sweep(dry_run=True)
    planned_old = set(
        PlanEntry.objects.filter(run=plan, kind="record", record_id__isnull=False).values_list(
            "record_id", flat=True
        )
    )
    assert planned_old == {old[1].id, old[2].id}  # the two least recently read
    # after the preview: support pins one victim, and u2 talks again in s2
    MemoryRecord.objects.filter(id=old[2].id).update(pinned=True)
    s2 = sessions.get_session(app_name=APP, user_id="u2", session_id="s2")
    sessions.append_event(s2, text_event("Back again", ts=time.time()))
    # an unplanned record that a normal enforcement would now evict
    MemoryRecord.objects.create(
        app_name=APP,
        user_id="u1",
        content="another old note",
        importance=0.0,
        tokens=1,
        created_at=timezone.now() - timedelta(days=200),
        last_accessed_at=timezone.now() - timedelta(days=200),
    )
    applied = apply(plan)
    assert applied.status == RunStatus.DONE
    entries = {(e.kind, e.session_id or e.record_id): e for e in PlanEntry.objects.filter(run=plan)}
    assert entries["record", old[1].id].apply_status == ApplyStatus.APPLIED
    pinned = entries["record", old[2].id]
    assert pinned.apply_status == ApplyStatus.REFUSED and "pinned" in pinned.apply_message
    active = entries["session", "s2"]
    assert active.apply_status == ApplyStatus.REFUSED and "active" in active.apply_message
    assert AgentSession.objects.filter(session_id="s2").exists()
    assert not AgentSession.objects.filter(session_id="s1").exists()
    assert MemoryRecord.objects.filter(id=old[2].id).exists()
    # nothing beyond the plan: the unplanned old note is still there
    assert MemoryRecord.objects.filter(content="another old note").exists()


def test_a_plan_applies_once_and_only_a_finished_dry_run_applies():
    make_session(APP, "u1", "s1", ["My name is Ana"], idle_days=9)
    plan = sweep(dry_run=True)
    apply(plan)
    with pytest.raises(plans.PlanError, match="applied already"):
        plans.check_appliable(plan)
    real = sweep()
    with pytest.raises(plans.PlanError, match="not a dry-run"):
        plans.check_appliable(real)
    queued = runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False)
    with pytest.raises(plans.PlanError, match="wait until it is done"):
        plans.check_appliable(queued)
    assert runs.create_run(RunKind.APPLY, plan=plan, enqueue=False) is None  # DB says once too
    assert Run.objects.filter(kind=RunKind.APPLY).count() == 1


def test_a_plan_that_looked_ahead_is_not_applied_before_its_time():
    """Its TTL victims are what would go then: applied now, a record due in days would
    be evicted early (and logged as expired)."""
    from datetime import timedelta

    from records.policies import update_policy

    from ..records.rows import make_record

    update_policy(APP, {"ttl_days": 30})
    record = make_record(APP, "u1", now=timezone.now() - timedelta(days=20))
    plan = run_inline(
        runs.create_run(
            RunKind.ENFORCE, as_of=timezone.now() + timedelta(days=15), dry_run=True, enqueue=False
        )
    )
    assert PlanEntry.objects.filter(run=plan, record_id=record.pk, reason="expired").exists()
    with pytest.raises(plans.PlanError, match="looked ahead to"):
        plans.check_appliable(plan)
    assert MemoryRecord.objects.filter(pk=record.pk).exists()


def test_dry_run_lines_read_before_an_erasure_are_not_written_after_it():
    """An item reads the user, the user is erased, then the item writes its report: the
    lines would bring the subject back, so they are not written; lines about users not
    erased meanwhile are."""
    from erasure.models import ErasureStatus
    from sweeper.models import EntryKind
    from sweeper.sweep import replace_plan_entries

    from ..erasure.helpers import erase

    run = runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False)

    def line(user):
        return PlanEntry(run=run, kind=EntryKind.SESSION, app_name=APP, user_id=user,
                         session_id="s1", reason="idle", snapshot={})  # fmt: skip

    make_session(APP, "cust-0042", "s1", ["My name is Ana"], idle_days=10)
    started_at = timezone.now()  # the item begins reading
    assert erase(APP, "cust-0042").status == ErasureStatus.VERIFIED
    replace_plan_entries(
        run.id, APP, ["cust-0042", "bob"], [line("cust-0042"), line("bob")], started_at=started_at
    )
    assert list(PlanEntry.objects.values_list("user_id", flat=True)) == ["bob"]
    # An item that began after the erasure writes the user's lines: new data.
    replace_plan_entries(run.id, APP, ["cust-0042"], [line("cust-0042")], started_at=timezone.now())
    assert PlanEntry.objects.filter(user_id="cust-0042").count() == 1
