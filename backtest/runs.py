"""Backtests from the dashboard: queued, run by a worker with progress, read by a page."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from memadmin.log_filters import stored_error
from records.models import Policy

from . import service, tune
from .models import BacktestRun, ReplayJob, Status, TuneRun

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
    """Run a queued backtest once; a finished or deleted one is left as it is."""

    def work(run, progress):
        candidate = Policy(app_name=run.app_name, **run.candidate)
        return service.run(run.app_name, run.days, candidate, timezone.now(), progress=progress)

    return _execute(BacktestRun, run_id, work, "report")


def start_tune(by, app_name: str, days: int, *, enqueue) -> TuneRun:
    """Check the input now (a clear message at once) and queue the tuning: ``enqueue(id)``
    is sent once the row is committed (the task's ``delay``)."""
    service.check_window(app_name, days, timezone.now())
    run = TuneRun.objects.create(app_name=app_name, days=days, created_by=by)
    transaction.on_commit(lambda: enqueue(run.pk))
    return run


def execute_tune(run_id: int) -> str:
    """Run a queued tuning once; a finished or deleted one is left as it is."""

    def work(run, progress):
        return tune.tune(run.app_name, run.days, timezone.now(), progress=progress)

    return _execute(TuneRun, run_id, work, "result")


def _execute(model: type[ReplayJob], run_id: int, work, field: str) -> str:
    """The life of a queued job: running, progress every PROGRESS_EVERY users, then done
    with ``work``'s outcome in ``field`` (its ``as_json``) or failed with its message
    (an unexpected error's class and text, as ``stored_error`` keeps them, and raised on).
    A worker that dies mid-run leaves it running until the message is delivered again
    (``acks_late``), which runs it from the start."""
    run = model.objects.filter(pk=run_id).first()
    if run is None or run.finished:
        return "gone" if run is None else run.status
    rows = model.objects.filter(pk=run_id)
    rows.update(status=Status.RUNNING)

    def progress(done: int, total: int) -> None:
        if done % PROGRESS_EVERY == 0 or done == total:
            rows.update(done=done, total=total)

    try:
        outcome = work(run, progress)
    except service.BacktestError as exc:
        rows.update(status=Status.FAILED, error=str(exc), finished_at=timezone.now())
        return Status.FAILED
    except Exception as exc:  # a bug or the database: failed, not "running" for ever
        rows.update(status=Status.FAILED, error=stored_error(exc), finished_at=timezone.now())
        raise  # the worker's log has the traceback (database errors' text withheld)
    rows.update(status=Status.DONE, **{field: outcome.as_json()}, finished_at=timezone.now())
    log.info("%s done", run)  # "backtest 7 of pharmacy done"
    return Status.DONE
