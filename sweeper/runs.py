"""The run engine: create, claim, fan out, complete, reconcile.

A run is claimed with a conditional UPDATE, so of five deliveries of the same message
exactly one worker plans it. Planning writes WorkItem rows and then nudges one Celery
task per item; each item is claimed the same way and completed at most once, and the
item that completes the last one completes the run. The reconciler re-queues runs and
items whose worker died (a killed process, a lost or redelivered message), so nothing
waits forever and nothing runs twice.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from memadmin import claims
from records.selectors.apps import check_known_app

from .models import ItemStatus, Run, RunStatus, WorkItem


def stale_after() -> timedelta:
    """A claim whose holder has not been heard of for this long is presumed dead."""
    return claims.lease()


def unclaimed_after() -> timedelta:
    """A queued run (or planned item) nobody claimed for this long lost its message."""
    return stale_after() / 2


Progress = Callable[[Run], None]
# Sends a run's or an item's message, given its id: the tasks module passes its tasks'
# ``delay`` in, so this engine never imports the tasks built on it.
Send = claims.Send


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def create_run(
    kind: str,
    *,
    as_of: datetime | None = None,
    app_name: str = "",
    dry_run: bool = False,
    plan: Run | None = None,
    by=None,
    schedule_key: str | None = None,
    enqueue: Send | None = None,
) -> Run | None:
    """Create a queued run and (after commit) nudge a worker with ``enqueue(run id)``
    (``sweeper.tasks.execute_run.delay``; None: the caller runs it inline). None if the
    slot is taken.

    A run limited to one app needs an app memadmin knows (UnknownApp, a ValueError):
    for a typo it would plan nothing, create the app's policy and succeed.
    """
    if app_name and plan is None:
        check_known_app(app_name)
    try:
        with transaction.atomic():
            run = Run.objects.create(
                kind=kind,
                as_of=as_of or timezone.now(),
                app_name=app_name,
                dry_run=dry_run,
                plan=plan,
                requested_by=by,
                schedule_key=schedule_key,
                queued_at=timezone.now() if enqueue else None,
            )
    except IntegrityError:
        if schedule_key or plan is not None:
            return None  # another beat took this slot, or the plan was applied already
        raise
    if enqueue:
        transaction.on_commit(lambda: enqueue(run.id))
    return run


def claim_run(run_id: int, now: datetime | None = None) -> str | None:
    """Claim a queued (or abandoned) run; returns the claim token, or None if taken."""
    now = now or timezone.now()
    return claims.claim(
        Run.objects.filter(id=run_id).filter(
            Q(status=RunStatus.QUEUED)
            | Q(status=RunStatus.RUNNING, heartbeat_at__lt=now - stale_after(), total=0)
        ),
        status=RunStatus.RUNNING,
        claimed_by=worker_name(),
        heartbeat_at=now,
        started_at=Coalesce(F("started_at"), now),
        attempts=F("attempts") + 1,
    )


def heartbeat(run: Run, token: str) -> bool:
    """Renew the claim. False means another worker took the run over: stop."""
    return claims.heartbeat(Run.objects.filter(id=run.id, status=RunStatus.RUNNING), token)


def fan_out(run: Run, token: str, items: list[WorkItem]) -> bool:
    """Store the run's items and their total in one transaction, under the claim."""
    with transaction.atomic():
        locked = claims.fenced_row(Run.objects.filter(id=run.id), token)
        if locked is None or locked.total:
            return False
        sent = timezone.now()  # the caller nudges every item (a message, or inline)
        for item in items:
            item.queued_at = sent
        WorkItem.objects.bulk_create(items, batch_size=1000)
        Run.objects.filter(id=run.id).update(total=len(items), heartbeat_at=timezone.now())
    if not items:
        finish_run(run.id, {})
    return True


def claim_item(item_id: int, now: datetime | None = None) -> tuple[WorkItem, str] | None:
    now = now or timezone.now()
    token = claims.claim(
        WorkItem.objects.filter(id=item_id, status=ItemStatus.PLANNED).filter(
            Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - stale_after())
        ),
        claimed_at=now,
    )
    if token is None:
        return None
    return WorkItem.objects.select_related("run").get(id=item_id), token


def release_item(item: WorkItem, token: str) -> bool:
    """Give the claim back (the work rolled back and will be retried)."""
    return claims.fenced_update(
        WorkItem.objects.filter(id=item.id, status=ItemStatus.PLANNED),
        token,
        claim_token="",
        claimed_at=None,
    )


def complete_item(
    item: WorkItem, token: str, status: str, outcome: str = "", stats: dict | None = None
) -> bool:
    """Mark the item done (once), add its totals to the run, and finish the run after the
    last. ``stats`` are the item's totals counted from its rows, so each item adds all of
    its work exactly once, whichever attempt finishes it."""
    with transaction.atomic():
        updated = claims.fenced_update(
            WorkItem.objects.filter(id=item.id, status=ItemStatus.PLANNED),
            token,
            status=status,
            outcome=outcome[:500],
        )
        if not updated:
            return False  # someone else completed it after our claim went stale
        run = Run.objects.select_for_update().get(id=item.run_id)
        run.done += 1
        for key, value in (stats or {}).items():
            run.stats[key] = run.stats.get(key, 0) + value
        run.heartbeat_at = timezone.now()
        fields = ["done", "stats", "heartbeat_at"]
        if run.done >= run.total and run.status == RunStatus.RUNNING:
            failed = run.items.filter(status=ItemStatus.FAILED).count()
            run.status = RunStatus.FAILED if failed else RunStatus.DONE
            run.error = f"{failed} item(s) failed" if failed else ""
            run.finished_at = timezone.now()
            fields += ["status", "error", "finished_at"]
        run.save(update_fields=fields)
    return True


def finish_run(run_id: int, stats: dict) -> None:
    Run.objects.filter(id=run_id, status=RunStatus.RUNNING).update(
        status=RunStatus.DONE, finished_at=timezone.now(), stats=stats, heartbeat_at=timezone.now()
    )


def fail_run(run_id: int, error: str) -> None:
    Run.objects.filter(id=run_id).exclude(status=RunStatus.DONE).update(
        status=RunStatus.FAILED, finished_at=timezone.now(), error=error[:2000]
    )


def reconcile(
    now: datetime | None = None, *, send_run: Send, send_item: Send
) -> dict[str, list[int]]:
    """Re-queue runs that lost their message and items whose worker died, through the
    claimed-job engine's reconciler (``claims.reconcile``: each sent at most once per
    stale period, after its transaction commits). This says only which rows stall."""
    now = now or timezone.now()
    return claims.reconcile(
        {
            "runs": claims.Requeue(
                Run.objects.filter(
                    Q(status=RunStatus.QUEUED, created_at__lt=now - unclaimed_after())
                    | Q(status=RunStatus.RUNNING, total=0, heartbeat_at__lt=now - stale_after())
                ),
                send_run,
            ),
            "items": claims.Requeue(
                WorkItem.objects.filter(
                    run__status=RunStatus.RUNNING, status=ItemStatus.PLANNED
                ).filter(
                    # unclaimed while its run makes no progress (a run that progresses is
                    # only working through its queue), or claimed by a worker that died
                    Q(claimed_at__isnull=True, run__heartbeat_at__lt=now - unclaimed_after())
                    | Q(claimed_at__lt=now - stale_after())
                ),
                send_item,
            ),
        },
        now=now,
        stale_after=stale_after(),
    )
