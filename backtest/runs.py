"""Backtests from the dashboard: queued, run by a worker with progress, read by a page."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from records.models import Policy

from . import service, tune
from .models import BacktestRun, Status, TuneRun

log = logging.getLogger(__name__)

# Progress is saved every this many users: one UPDATE, not one per user.
PROGRESS_EVERY = 50


def start(by, app_name: str, days: int, candidate: Policy, *, enqueue) -> BacktestRun:
    """Check the input now (a clear message at once) and queue the run: ``enqueue(run_id)``
    is sent once the run's row is committed (the task's ``delay``)."""
    service.check_window(app_name, days, timezone.now())
    candidate.params()  # validated by candidate_policy already; a PolicyError here is a bug
    run = BacktestRun.objects.create(
        app_name=app_name, days=days, candidate=candidate.snapshot(), created_by=by
    )
    transaction.on_commit(lambda: enqueue(run.pk))
    return run


def execute(run_id: int) -> str:
    run = BacktestRun.objects.filter(pk=run_id).first()
    if run is None or run.finished:
        return "gone" if run is None else run.status
    BacktestRun.objects.filter(pk=run_id).update(status=Status.RUNNING)

    def progress(done: int, total: int) -> None:
        if done % PROGRESS_EVERY == 0 or done == total:
            BacktestRun.objects.filter(pk=run_id).update(done=done, total=total)

    candidate = Policy(app_name=run.app_name, **run.candidate)
    try:
        report = service.run(run.app_name, run.days, candidate, timezone.now(), progress=progress)
    except service.BacktestError as exc:
        BacktestRun.objects.filter(pk=run_id).update(
            status=Status.FAILED, error=str(exc), finished_at=timezone.now()
        )
        return Status.FAILED
    BacktestRun.objects.filter(pk=run_id).update(
        status=Status.DONE, report=report.as_json(), finished_at=timezone.now()
    )
    log.info("backtest %d of %s done", run_id, run.app_name)
    return Status.DONE


def start_tune(by, app_name: str, days: int, *, enqueue) -> TuneRun:
    """Check the input now (a clear message at once) and queue the tuning: ``enqueue(id)``
    is sent once the row is committed (the task's ``delay``)."""
    service.check_window(app_name, days, timezone.now())
    run = TuneRun.objects.create(app_name=app_name, days=days, created_by=by)
    transaction.on_commit(lambda: enqueue(run.pk))
    return run


def execute_tune(run_id: int) -> str:
    """Run a queued tuning once; a finished or deleted one is left as it is."""
    run = TuneRun.objects.filter(pk=run_id).first()
    if run is None or run.finished:
        return "gone" if run is None else run.status
    TuneRun.objects.filter(pk=run_id).update(status=Status.RUNNING)

    def progress(done: int, total: int) -> None:
        if done % PROGRESS_EVERY == 0 or done == total:
            TuneRun.objects.filter(pk=run_id).update(done=done, total=total)

    try:
        result = tune.tune(run.app_name, run.days, timezone.now(), progress=progress)
    except service.BacktestError as exc:
        TuneRun.objects.filter(pk=run_id).update(
            status=Status.FAILED, error=str(exc), finished_at=timezone.now()
        )
        return Status.FAILED
    TuneRun.objects.filter(pk=run_id).update(
        status=Status.DONE, result=result.as_json(), finished_at=timezone.now()
    )
    log.info("tuning %d of %s done", run_id, run.app_name)
    return Status.DONE
