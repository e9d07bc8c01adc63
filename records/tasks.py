"""Celery tasks of the memory domain: thin and idempotent, taking plain values."""

from __future__ import annotations

import logging

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from . import embeddings, rescore

log = logging.getLogger(__name__)

# A re-score still past its soft time limit after this many retries is given up (logged);
# the users it finished keep their new scores (settings.TASK_SOFT_TIME_LIMIT).
TIME_LIMIT_RETRIES = 2


def soft_time_limit(task: Task) -> float | None:
    """The soft time limit of the task now running: the message's, else the task's."""
    _hard, soft = task.request.timelimit or (None, None)
    return soft or task.soft_time_limit


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def rescore_app(self, app_name: str) -> int:
    """Re-apply the app's current importance rules to its records.

    Safe to run twice: a second pass finds nothing to change. Staff- and caller-set
    importance is kept and no pin is removed (``rescore.rescore``). Each user's records are
    committed on their own, so a retry after the soft time limit keeps what was done.
    """
    try:
        changed = rescore.rescore(app_name)
    except SoftTimeLimitExceeded as exc:
        limit = f"{soft_time_limit(self):g}s"
        if self.request.retries >= TIME_LIMIT_RETRIES:
            log.error(
                "re-score of %s passed its soft time limit (%s) again; given up", app_name, limit
            )
            return 0
        log.warning("re-score of %s passed its soft time limit (%s); retrying", app_name, limit)
        raise self.retry(exc=exc, countdown=1) from exc
    log.info("re-scored %s: %d record(s) changed", app_name, changed)
    return changed


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def backfill_embeddings(app_name: str = "", after_id: int = 0) -> int:
    """Embed the records that have no vector yet (``embeddings.backfill``), batch by batch.

    Idempotent and resumable: only missing vectors are written and each batch commits on
    its own, so a repeated message does no harm and, past the soft time limit, the task
    queues itself again from the last record it reached. Progress is read from the
    database (the Embeddings page), not from the task. Beat runs it hourly
    (``memadmin.schedules``); without an embedder it does nothing.
    """
    if not embeddings.enabled():
        return 0
    problem = embeddings.check_setting()
    if problem is not None:  # the system check (records.E001) says so too
        log.warning("embedding back-fill skipped: %s", problem)
        return 0
    result = embeddings.BackfillResult(last_id=after_id)
    try:
        for step in embeddings.backfill_steps(app_name=app_name or None, after_id=after_id):
            result = step
    except SoftTimeLimitExceeded:
        log.warning("embedding back-fill passed its soft time limit; continuing in a new task")
        backfill_embeddings.delay(app_name, result.last_id)
        return result.embedded
    log.info(
        "embedding back-fill: %d embedded, %d unusable, up to record %d%s",
        result.embedded,
        result.failed,
        result.last_id,
        f"; stopped: {result.error}" if result.error else "",
    )
    return result.embedded
