"""The sweeper's tasks: what an item does when it runs past its soft time limit.

The worker itself raising the limit is in test_worker.py; here the handler it reaches.
"""

import logging

import pytest

from records.tasks import rescore_app
from sweeper import runs, tasks
from sweeper.models import ItemKind, ItemStatus, RunKind, RunStatus, WorkItem

# Transactional: the handler closes a connection the interrupted work may have broken,
# which it would also do to a test's wrapping transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def claimed_item(n_items=1):
    run = runs.create_run(RunKind.SWEEP, enqueue=False)
    token = runs.claim_run(run.id)
    runs.fan_out(
        run,
        token,
        [
            WorkItem(run=run, kind=ItemKind.SESSIONS, app_name="a", user_id=f"u{i}")
            for i in range(n_items)
        ],
    )
    return runs.claim_item(WorkItem.objects.filter(run=run).order_by("id").first().id)


def test_the_rule_tasks_have_the_configured_time_limits(settings):
    for task in (tasks.run_item, rescore_app):
        assert task.soft_time_limit == settings.TASK_SOFT_TIME_LIMIT == 120
        assert task.time_limit == settings.TASK_TIME_LIMIT == 180
    assert tasks.execute_run.soft_time_limit is None  # planning runs no rules


def test_past_the_soft_limit_an_item_gives_its_claim_back_for_a_retry(caplog):
    item, token = claimed_item()
    with caplog.at_level(logging.WARNING, logger="sweeper.tasks"):
        failed = tasks.item_past_soft_time_limit(item, token, 120, attempt=0)
    assert failed is False
    item.refresh_from_db()
    assert (item.status, item.claim_token, item.claimed_at) == (ItemStatus.PLANNED, "", None)
    assert runs.claim_item(item.id) is not None  # the retry can claim it
    assert [r.getMessage() for r in caplog.records] == [
        f"item {item.id} of run {item.run_id} passed its soft time limit (120s); "
        "claim released for a retry"
    ]


def test_an_item_still_past_the_soft_limit_after_its_retries_fails_the_run(caplog):
    item, token = claimed_item()
    with caplog.at_level(logging.WARNING, logger="sweeper.tasks"):
        failed = tasks.item_past_soft_time_limit(item, token, 120, attempt=tasks.TIME_LIMIT_RETRIES)
    assert failed is True
    item.refresh_from_db()
    assert item.status == ItemStatus.FAILED
    assert item.outcome == "stopped at the soft time limit (120s) 3 times"
    assert (item.run.status, item.run.error) == (RunStatus.FAILED, "1 item(s) failed")
    assert len(caplog.records) == 1 and "3 times; failed" in caplog.records[0].getMessage()


def test_an_item_completed_by_another_worker_is_not_released(caplog):
    item, token = claimed_item(n_items=2)
    runs.complete_item(item, token, ItemStatus.DONE, "done")
    assert tasks.item_past_soft_time_limit(item, token, 120, attempt=0) is False
    item.refresh_from_db()
    assert item.status == ItemStatus.DONE and item.claim_token == token
