"""Celery tasks of the memory domain: thin and idempotent, taking plain values."""

from __future__ import annotations

import logging

from celery import shared_task

from . import store

log = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def rescore_app(app_name: str) -> int:
    """Re-apply the app's current importance rules to its records.

    Safe to run twice: a second pass finds nothing to change. Staff- and caller-set
    importance is kept and no pin is removed (``store.rescore``).
    """
    changed = store.rescore(app_name)
    log.info("re-scored %s: %d record(s) changed", app_name, changed)
    return changed
