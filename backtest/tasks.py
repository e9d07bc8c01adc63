"""Celery tasks of the backtest: thin, taking plain values."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from records import access_log

from . import runs

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def prune_access_history() -> int:
    """Daily: drop access history older than its retention."""
    deleted = access_log.prune(timezone.now())
    log.info("pruned %d access-history row(s)", deleted)
    return deleted


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_backtest(run_id: int) -> str:
    """Run a queued backtest (``backtest.runs.start``) and keep its report."""
    return runs.execute(run_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_tune(run_id: int) -> str:
    """Run a queued tuning (``backtest.runs.start_tune``) and keep its best candidates."""
    return runs.execute_tune(run_id)
