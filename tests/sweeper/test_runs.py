"""Runs are claimed in the database: one claim wins, items complete once."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connections
from django.test import TestCase
from django.utils import timezone

from records.models import RetiredSession
from sweeper import runs, tasks
from sweeper.models import (
    ApplyStatus,
    ItemKind,
    ItemStatus,
    PlanEntry,
    Run,
    RunKind,
    RunStatus,
    WorkItem,
)

from .helpers import make_session

pytestmark = pytest.mark.django_db


def test_a_run_is_claimed_once_and_a_finished_run_never_again():
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    assert token and runs.claim_run(run.id) is None
    runs.finish_run(run.id, {})
    assert runs.claim_run(run.id) is None


@pytest.mark.django_db(transaction=True)
def test_five_concurrent_claims_of_one_run_give_exactly_one_token():
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    barrier, tokens = threading.Barrier(5), []

    def claim():
        barrier.wait()
        tokens.append(runs.claim_run(run.id))
        connections.close_all()

    threads = [threading.Thread(target=claim) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([t for t in tokens if t]) == 1


def test_an_abandoned_run_that_never_planned_can_be_reclaimed():
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    runs.claim_run(run.id)
    later = timezone.now() + runs.stale_after() + timedelta(seconds=1)
    assert runs.claim_run(run.id, now=later) is not None
    assert Run.objects.get(id=run.id).attempts == 2


def test_items_complete_once_and_the_last_one_finishes_the_run():
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    runs.fan_out(
        run,
        token,
        [WorkItem(run=run, kind=ItemKind.USERS, app_name="a", users=["u"]) for _ in range(2)],
    )
    first, second = WorkItem.objects.filter(run=run)
    item, item_token = runs.claim_item(first.id)
    assert runs.claim_item(first.id) is None  # held
    assert runs.complete_item(item, item_token, ItemStatus.DONE, "ok", {"n": 1})
    assert not runs.complete_item(item, item_token, ItemStatus.DONE, "again", {"n": 1})
    item2, token2 = runs.claim_item(second.id)
    runs.complete_item(item2, token2, ItemStatus.FAILED, "boom")
    run.refresh_from_db()
    assert (run.done, run.total, run.stats) == (2, 2, {"n": 1})
    assert run.status == RunStatus.FAILED and "1 item(s) failed" in run.error


def test_a_stale_item_claim_is_taken_over_and_the_old_holder_cannot_complete():
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    runs.fan_out(run, token, [WorkItem(run=run, kind=ItemKind.USERS, app_name="a", users=["u"])])
    item = WorkItem.objects.get(run=run)
    _, old_token = runs.claim_item(item.id)
    later = timezone.now() + runs.stale_after() + timedelta(seconds=1)
    taken, new_token = runs.claim_item(item.id, now=later)
    assert not runs.complete_item(taken, old_token, ItemStatus.DONE)
    assert runs.complete_item(taken, new_token, ItemStatus.DONE)
    assert Run.objects.get(id=run.id).status == RunStatus.DONE


def test_a_run_with_nothing_to_do_finishes_at_once():
    run = tasks.run_inline(runs.create_run(RunKind.SWEEP, enqueue=False))
    assert (run.status, run.total, run.done) == (RunStatus.DONE, 0, 0)


def test_schedule_slots_make_a_second_beat_a_no_op():
    first = tasks.scheduled_sweep()
    second = tasks.scheduled_sweep()
    assert first is not None and second is None
    assert Run.objects.filter(kind=RunKind.SWEEP).count() == 1
    tasks.scheduled_enforce()
    tasks.scheduled_enforce()
    assert Run.objects.filter(kind=RunKind.ENFORCE).count() == 1


def reconcile(**kwargs) -> dict:
    """``tasks.reconcile``, its messages sent: they go once its transaction commits, and
    a test's transaction never does, so run what the commit would."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return tasks.reconcile(**kwargs)


def test_reconcile_finds_lost_messages_and_dead_workers(settings):
    from memadmin.celery import app

    lost = runs.create_run(RunKind.SWEEP, enqueue=False)
    Run.objects.filter(id=lost.id).update(created_at=timezone.now() - timedelta(hours=1))
    app.conf.task_always_eager = True  # run the re-queued tasks here
    try:
        result = reconcile()
    finally:
        app.conf.task_always_eager = False
    assert result["runs"] == [lost.id]
    assert Run.objects.get(id=lost.id).status == RunStatus.DONE


# --- the reconciler sends one message per stale period, however often it passes ---------


@pytest.fixture
def broker():
    """The real broker's queue for sweeper tasks: drained and counted, then purged."""
    from memadmin.celery import app

    app.control.purge()

    def sent(task) -> Counter:
        """{first argument: messages} for ``task`` taken off its queue."""
        queue = app.amqp.router.route({}, task.name)["queue"]
        counts = Counter()
        with app.connection_for_read() as conn:
            bound = queue(conn.default_channel)
            while (message := bound.get(no_ack=True)) is not None:
                if message.headers.get("task") == task.name:
                    args, _kwargs, _embed = message.decode()
                    counts[args[0]] += 1
        return counts

    yield sent
    app.control.purge()


def passes_every_two_minutes(start, minutes):
    """The reconciler's schedule (memadmin/schedules.py), on a fixed clock."""
    return [start + timedelta(minutes=m) for m in range(2, minutes + 1, 2)]


def sends_expected(start, passes) -> int:
    """Re-sent only once the last message is older than the stale time."""
    sends, last = 0, start
    for now in passes:
        if now - last > runs.stale_after():
            sends, last = sends + 1, now
    return sends


def test_with_no_worker_the_reconciler_resends_each_item_once_per_stale_period(broker):
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    items = [WorkItem(run=run, kind=ItemKind.USERS, app_name="a", users=[u]) for u in "abc"]
    sent_at = timezone.now()
    runs.fan_out(run, token, items)
    ids = list(WorkItem.objects.filter(run=run).values_list("id", flat=True))
    runs.claim_item(ids[0], now=sent_at)  # a worker took this one, then died
    passes = passes_every_two_minutes(sent_at, minutes=20)
    for now in passes:
        reconcile(now=now)
    expected = sends_expected(sent_at, passes)
    assert expected == 3  # 20 minutes, 5-minute stale time: not one per pass (10)
    assert broker(tasks.run_item) == {item_id: expected for item_id in ids}


def test_items_queued_behind_others_of_a_progressing_run_are_not_resent(broker):
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    start = timezone.now()
    runs.fan_out(run, token, [WorkItem(run=run, kind=ItemKind.USERS, app_name="a", users=["u"])])
    later = start + timedelta(hours=1)
    # other items of the run keep completing (each renews the run's heartbeat)
    Run.objects.filter(id=run.id).update(heartbeat_at=later - timedelta(seconds=5))
    assert reconcile(now=later)["items"] == []
    assert broker(tasks.run_item) == {}


def test_a_queued_run_whose_message_was_lost_is_resent_once_per_stale_period(broker):
    created = timezone.now()
    run = runs.create_run(
        RunKind.SWEEP, enqueue=tasks.execute_run.delay
    )  # its message is sent after commit: never, here
    passes = passes_every_two_minutes(created, minutes=20)
    for now in passes:
        reconcile(now=now)
    assert broker(tasks.execute_run) == {run.id: sends_expected(created, passes)}


# --- a run's totals come from the rows, whichever attempt did the work ----------------


class WorkerKilled(BaseException):
    """Leaves the task like SIGKILL would: no except clause of ours catches it."""


@pytest.fixture
def kill_at_second_retirement():
    """The worker dies while retiring its second session (the first one is committed)."""
    from django.db.models.signals import post_save

    seen = []

    def die(sender, instance, **kwargs):
        seen.append(instance.session_id)
        if len(seen) == 2:
            raise WorkerKilled

    post_save.connect(die, sender=RetiredSession)
    yield
    post_save.disconnect(die, sender=RetiredSession)


def killed_then_finished(run):
    """Run each item; the first attempt is killed, its claim is abandoned and goes stale,
    and the reconciler's message lets a live worker finish the item."""
    ids = list(WorkItem.objects.filter(run=run).values_list("id", flat=True))
    with pytest.raises(WorkerKilled):
        for item_id in ids:
            tasks.run_item(item_id)
    assert Run.objects.get(id=run.id).status == RunStatus.RUNNING
    for item_id in reconcile()["items"]:
        tasks.run_item(item_id)
    return Run.objects.get(id=run.id)


def planned_run(kind, **fields):
    run = runs.create_run(kind, enqueue=False, **fields)
    token = runs.claim_run(run.id)
    runs.fan_out(run, token, tasks.plan_run(run))
    return run


@pytest.fixture
def idle_sessions(settings):
    settings.MEMADMIN = {**settings.MEMADMIN, "STALE_CLAIM_SECONDS": 0}  # dead at once
    for sid in ("s1", "s2", "s3"):
        make_session("a", "u1", sid, [f"My name is Ana {sid}"], idle_days=30)


def test_sessions_retired_by_a_killed_attempt_count_in_the_run(
    idle_sessions, kill_at_second_retirement, broker
):
    run = killed_then_finished(planned_run(RunKind.SWEEP))
    assert run.status == RunStatus.DONE and run.attempts == 1
    assert RetiredSession.objects.filter(run_id=run.id).count() == 3
    assert run.stats == {"sessions_retired": 3}


def test_plan_entries_applied_by_a_killed_attempt_count_in_the_run(
    idle_sessions, kill_at_second_retirement, broker
):
    plan = tasks.run_inline(runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False))
    assert plan.stats["sessions_planned"] == 3
    run = killed_then_finished(planned_run(RunKind.APPLY, plan=plan))
    assert run.status == RunStatus.DONE
    applied = PlanEntry.objects.filter(run=plan, apply_status=ApplyStatus.APPLIED).count()
    assert applied == plan.entries.count() and applied >= 3
    assert run.stats == {"applied": applied, "refused": 0}
