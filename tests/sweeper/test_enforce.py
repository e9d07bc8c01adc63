"""The periodic enforcement pass."""

from datetime import timedelta

import pytest
from django.utils import timezone

from records.models import EvictionEvent, MemoryRecord
from records.policies import update_policy
from sweeper import runs
from sweeper.enforce import plan_items, users_needing_work
from sweeper.models import Run, RunKind, RunStatus
from sweeper.tasks import run_inline

from ..records.factories import make_records

pytestmark = pytest.mark.django_db


def test_only_users_over_a_cap_or_with_expired_records_need_work():
    now = timezone.now()
    update_policy("a", {"max_records": 5, "max_tokens": 100})
    make_records("a", "fine", 5, now, tokens=10)
    make_records("a", "too-many", 6, now, tokens=1)
    make_records("a", "too-big", 2, now, tokens=60)
    make_records("a", "expired", 1, now, age=timedelta(days=400))
    make_records("a", "pinned-old", 1, now, age=timedelta(days=400), pinned=True)
    assert users_needing_work("a", now) == ["expired", "too-big", "too-many"]


def test_the_pass_fans_out_batches_and_expires_records_of_users_who_stopped_writing():
    now = timezone.now()
    update_policy("a", {"max_records": 3})
    for i in range(5):
        make_records("a", f"quiet-{i}", 1, now, age=timedelta(days=500))
        make_records("a", f"busy-{i}", 5, now)
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    assert len(plan_items(run, size=4)) == 3  # 10 users in batches of 4
    run = run_inline(run)
    assert (run.status, run.done, run.total) == (RunStatus.DONE, 1, 1)  # default batch: one
    assert run.stats == {"users_enforced": 10, "records_evicted": 15}
    assert not MemoryRecord.objects.filter(user_id__startswith="quiet").exists()
    for i in range(5):
        assert MemoryRecord.objects.filter(user_id=f"busy-{i}").count() == 3
    assert set(EvictionEvent.objects.values_list("run_id", flat=True)) == {run.id}


def test_a_plan_evicting_a_past_due_commitment_applies_unless_re_scored():
    """The plan keeps the stored importance: a past-due record's score term decays, so
    comparing that with the column refused every such victim as "re-scored"."""
    now = timezone.now()
    update_policy("a", {"max_records": 2})
    make_records("a", "u", 2, now, importance=0.9)
    make_records("a", "u", 2, now, importance=0.6, content="order {i} arrives")
    delivered = list(MemoryRecord.objects.filter(content__startswith="order"))
    MemoryRecord.objects.filter(content__startswith="order").update(due_at=now - timedelta(days=30))
    plan = run_inline(runs.create_run(RunKind.ENFORCE, dry_run=True, enqueue=False))
    entries = list(plan.entries.order_by("record_id"))
    assert [e.record_id for e in entries] == sorted(r.id for r in delivered)
    assert all(e.importance < 0.6 == e.snapshot["importance"] for e in entries)  # decayed
    # one of them re-scored after the preview: that one is refused, the other applied
    MemoryRecord.objects.filter(pk=entries[0].record_id).update(importance=0.7)
    applied = run_inline(runs.create_run(RunKind.APPLY, plan=plan, enqueue=False))
    assert applied.stats == {"applied": 1, "refused": 1}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) >= {entries[0].record_id}
    assert not MemoryRecord.objects.filter(pk=entries[1].record_id).exists()


def test_an_applied_plan_logs_the_policy_version_that_chose_its_victims():
    """The policy changed between the preview and the apply: the evictions are the
    plan's, chosen by the version the preview ran, and their events say so (the
    backtest and the audit read that version)."""
    now = timezone.now()
    chose = update_policy("a", {"max_records": 2}).version
    make_records("a", "u", 4, now)
    plan = run_inline(runs.create_run(RunKind.ENFORCE, dry_run=True, enqueue=False))
    assert {e.snapshot["policy_version"] for e in plan.entries.all()} == {chose}
    later = update_policy("a", {"max_records": 3}).version
    assert later != chose
    run_inline(runs.create_run(RunKind.APPLY, plan=plan, enqueue=False))
    events = EvictionEvent.objects.filter(app_name="a")
    assert events.count() == 2
    assert set(events.values_list("policy_version", flat=True)) == {chose}


def test_an_enforcement_dry_run_changes_nothing_and_can_be_applied():
    now = timezone.now()
    update_policy("a", {"max_records": 2})
    make_records("a", "u", 4, now)
    plan = run_inline(runs.create_run(RunKind.ENFORCE, dry_run=True, enqueue=False))
    assert MemoryRecord.objects.count() == 4
    assert plan.entries.count() == 2
    applied = run_inline(runs.create_run(RunKind.APPLY, plan=plan, enqueue=False))
    assert applied.stats == {"applied": 2, "refused": 0}
    assert MemoryRecord.objects.count() == 2
    assert Run.objects.count() == 2
