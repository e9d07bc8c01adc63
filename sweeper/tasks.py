"""Celery tasks: thin, idempotent, taking ids. The work lives in sweep/enforce/plans.

Every task is safe to run twice: runs and items are claimed with conditional updates,
ingest is deduplicated per event, and retiring a session is idempotent.
"""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, close_old_connections, transaction
from django.utils import timezone

from memadmin.log_filters import stored_error
from records import touches
from records.feedback import prune_regret_terms
from records.tasks import soft_time_limit

from . import enforce, metrics, plans, runs, sweep
from .models import ItemKind, ItemStatus, Run, RunKind, WorkItem

log = logging.getLogger(__name__)

LONG_TASK = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


def plan_run(run: Run) -> list[WorkItem]:
    if run.kind == RunKind.SWEEP:
        return sweep.plan_items(run)
    if run.kind == RunKind.ENFORCE:
        return enforce.plan_items(run)
    if run.kind == RunKind.APPLY:
        return plans.plan_items(run)
    raise ValueError(f"unknown run kind {run.kind!r}")


def process_item(item: WorkItem) -> str:
    """Do one item's work; dry-runs only write their report. Returns what happened."""
    run = item.run
    if item.kind == ItemKind.SESSIONS:
        if run.dry_run:
            return sweep.preview_user_sessions(item, run.as_of)
        return sweep.retire_user_sessions(item, timezone.now())
    if item.kind == ItemKind.USERS:
        if run.dry_run:
            return enforce.preview_users(item, run.as_of)
        return enforce.enforce_users(item, timezone.now())
    if item.kind == ItemKind.APPLY_USER:
        return plans.apply_user(item, timezone.now())
    raise ValueError(f"unknown item kind {item.kind!r}")


def item_totals(item: WorkItem, status: str) -> dict:
    """What the item did, counted from the rows its work wrote rather than by the last
    attempt: an attempt killed half-way (or failing half-way) did part of the work too."""
    run = item.run
    if item.kind == ItemKind.SESSIONS:
        if run.dry_run:
            return sweep.planned_totals(run.id, item.app_name, [item.user_id])
        return sweep.retired_totals(item)
    if item.kind == ItemKind.USERS:
        if run.dry_run:
            planned = sweep.planned_totals(run.id, item.app_name, item.users)
            return {"records_planned": planned["records_planned"]}
        return enforce.enforced_totals(item, done=status == ItemStatus.DONE)
    if item.kind == ItemKind.APPLY_USER:
        return plans.applied_totals(item)
    raise ValueError(f"unknown item kind {item.kind!r}")


def finish_item(item: WorkItem, token: str, status: str, outcome: str) -> bool:
    return runs.complete_item(item, token, status, outcome, item_totals(item, status))


@shared_task(**LONG_TASK)
def execute_run(run_id: int) -> None:
    """Claim the run, plan its items, and nudge one task per item."""
    token = runs.claim_run(run_id)
    if token is None:
        return  # another delivery of this message got it, or it is finished
    run = Run.objects.get(id=run_id)
    try:
        items = plan_run(run)
    except Exception as exc:
        log.exception("planning run %s failed", run_id)
        runs.fail_run(run_id, f"planning failed: {stored_error(exc)}")
        return
    if runs.fan_out(run, token, items):
        ids = list(WorkItem.objects.filter(run=run).values_list("id", flat=True))
        transaction.on_commit(lambda: [run_item.delay(i) for i in ids])


# A dropped database connection is not the item's fault: retry it (its transaction
# rolled back, so nothing is half-done), rather than recording a failure.
RETRYABLE = (OperationalError, InterfaceError)
MAX_RETRIES = 5
# An item that keeps running past its soft time limit is failed after this many retries,
# so one oversized item cannot hold a worker forever (settings.TASK_SOFT_TIME_LIMIT).
TIME_LIMIT_RETRIES = 2


@shared_task(bind=True, max_retries=MAX_RETRIES, **LONG_TASK)
def run_item(self, item_id: int) -> None:
    claimed = runs.claim_item(item_id)
    if claimed is None:
        return
    item, token = claimed
    try:
        outcome = process_item(item)
        finish_item(item, token, ItemStatus.DONE, outcome)
    except SoftTimeLimitExceeded as exc:
        limit = soft_time_limit(self)
        if not item_past_soft_time_limit(item, token, limit, attempt=self.request.retries):
            raise self.retry(exc=exc, countdown=1) from exc
    except RETRYABLE as exc:
        close_old_connections()
        if self.request.retries >= MAX_RETRIES:
            log.exception("item %s of run %s failed after retries", item_id, item.run_id)
            finish_item(item, token, ItemStatus.FAILED, stored_error(exc))
            return
        log.warning("item %s: database connection lost (%s); retrying", item_id, exc)
        runs.release_item(item, token)
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 30)) from exc
    except Exception as exc:
        log.exception("item %s of run %s failed", item_id, item.run_id)
        finish_item(item, token, ItemStatus.FAILED, stored_error(exc))


def item_past_soft_time_limit(item: WorkItem, token: str, seconds: float, *, attempt: int) -> bool:
    """The item ran past its soft time limit; its work rolled back. Give the claim back
    for a retry (False), or fail the item after ``TIME_LIMIT_RETRIES`` retries (True).
    One line in the log, ids only."""
    close_old_connections()
    limit = f"{seconds:g}s"
    if attempt >= TIME_LIMIT_RETRIES:
        log.warning(
            "item %s of run %s passed its soft time limit (%s) %d times; failed",
            item.id,
            item.run_id,
            limit,
            attempt + 1,
        )
        outcome = f"stopped at the soft time limit ({limit}) {attempt + 1} times"
        finish_item(item, token, ItemStatus.FAILED, outcome)
        return True
    log.warning(
        "item %s of run %s passed its soft time limit (%s); claim released for a retry",
        item.id,
        item.run_id,
        limit,
    )
    runs.release_item(item, token)
    return False


def run_inline(run: Run, progress=None) -> Run:
    """Execute a run in this process (management commands), item by item."""
    token = runs.claim_run(run.id)
    if token is None:
        raise RuntimeError(f"run #{run.id} is already claimed")
    try:
        items = plan_run(run)
    except Exception as exc:
        runs.fail_run(run.id, f"planning failed: {stored_error(exc)}")
        raise
    runs.fan_out(run, token, items)
    for item_id in WorkItem.objects.filter(run=run).values_list("id", flat=True):
        run_item(item_id)
        if progress is not None:
            progress(Run.objects.get(id=run.id))
    return Run.objects.get(id=run.id)


# --- scheduled entry points (beat) ----------------------------------------------------
# Each creates a run keyed by its schedule slot: a second beat firing the same slot
# finds the key taken and creates nothing, so a run happens once per slot.


def _slot(kind: str, now: datetime, seconds: int) -> str:
    """The schedule slot ``now`` falls in: one run per slot, whoever fires it."""
    return f"{kind}:{int(now.timestamp()) // seconds * seconds}"


def _scheduled(kind: str, slot_seconds: int) -> int | None:
    now = timezone.now()
    run = runs.create_run(
        kind,
        as_of=now,
        schedule_key=_slot(str(kind), now, slot_seconds),
        enqueue=execute_run.delay,
    )
    return run.id if run else None


@shared_task(ignore_result=True)
def scheduled_sweep(slot_seconds: int = 86400) -> int | None:
    return _scheduled(RunKind.SWEEP, slot_seconds)


@shared_task(ignore_result=True)
def scheduled_enforce(slot_seconds: int = 3600) -> int | None:
    return _scheduled(RunKind.ENFORCE, slot_seconds)


@shared_task(ignore_result=True)
def flush_touches() -> int:
    return touches.flush_touches()


@shared_task(ignore_result=True)
def rollup_metrics() -> None:
    # Ingest and search counts wait in the touch buffer (Redis) until a flush: move them
    # first, or today's roll-up lags them by one flush interval. A flush already
    # running elsewhere is skipped (it holds the lock and moves the same counts).
    touches.flush_touches()
    now = timezone.now()
    metrics.rollup_day((now - metrics.ONE_DAY).date(), now)  # yesterday, complete
    metrics.rollup_day(now.date(), now)  # today so far
    prune_regret_terms(now)


def reconcile(now: datetime | None = None) -> dict:
    """``runs.reconcile`` sending through these tasks."""
    return runs.reconcile(now, send_run=execute_run.delay, send_item=run_item.delay)


@shared_task(ignore_result=True)
def reconcile_runs() -> dict:
    return reconcile()
