"""Runs are claimed in the database: one claim wins, items complete once."""

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from sweeper import runs, tasks
from sweeper.models import ItemKind, ItemStatus, Run, RunKind, RunStatus, WorkItem

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


def test_reconcile_finds_lost_messages_and_dead_workers(settings):
    from memadmin.celery import app

    lost = runs.create_run(RunKind.SWEEP, enqueue=False)
    Run.objects.filter(id=lost.id).update(created_at=timezone.now() - timedelta(hours=1))
    app.conf.task_always_eager = True  # run the re-queued tasks here
    try:
        result = runs.reconcile()
    finally:
        app.conf.task_always_eager = False
    assert result["runs"] == [lost.id]
    assert Run.objects.get(id=lost.id).status == RunStatus.DONE
