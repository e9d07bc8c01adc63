"""A database error's text never reaches a log line: PostgreSQL's details quote the
row ("Failing row contains (...)") and the key ("Key (user_id)=(...)")."""

import io
import json
import logging
from datetime import UTC, datetime

import pytest
from celery import states
from celery.app.task import Context
from celery.app.trace import TraceInfo
from celery.exceptions import Retry
from django.conf import settings
from django.db import IntegrityError, transaction

from memadmin.log_filters import WITHHELD, DatabaseErrorFilter
from memadmin.log_format import JsonFormatter
from records.models import MemoryRecord
from records.tasks import rescore_app

from ..records.factories import make_records

pytestmark = pytest.mark.django_db

USER = "cust-k7q2xw"
SECRET = "I am allergic to penicillin"


def database_error() -> IntegrityError:
    """A real one: a check constraint refusing a row that holds memory content."""
    [record] = make_records("pharmacy", USER, 1, datetime(2026, 6, 1, tzinfo=UTC), content=SECRET)
    try:
        with transaction.atomic():
            MemoryRecord.objects.filter(pk=record.pk).update(tokens=-1)
    except IntegrityError as error:
        return error
    raise AssertionError("the database took a negative token count")


def rendered(
    formatter: logging.Formatter, emit, logger_name: str = "memadmin.test.database_errors"
) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(DatabaseErrorFilter())
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        emit(logger)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    return stream.getvalue()


def raised(logger: logging.Logger, error: BaseException) -> None:
    try:
        raise RuntimeError("the ingest failed") from error
    except RuntimeError:
        logger.exception("task failed")


@pytest.mark.parametrize("formatter", [logging.Formatter("%(message)s"), JsonFormatter()])
def test_a_traceback_keeps_its_frames_but_not_the_database_text(formatter):
    error = database_error()
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        assert SECRET in str(error.__cause__)  # what would have been logged
    out = rendered(formatter, lambda logger: raised(logger, error))
    if isinstance(formatter, JsonFormatter):
        out = json.loads(out)["exc_info"]
    assert SECRET not in out and USER not in out
    assert "Traceback (most recent call last)" in out and "database_error" in out
    assert "IntegrityError" in out and WITHHELD in out
    assert "RuntimeError: the ingest failed" in out  # other exceptions keep their text
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        assert "SQLSTATE 23514" in out and "record_tokens_nonneg" in out


def test_an_error_passed_as_an_argument_is_withheld_too():
    error = database_error()
    out = rendered(
        logging.Formatter("%(message)s"),
        lambda logger: logger.warning("database refused a value on %s: %s", "/api/x", error),
    )
    assert SECRET not in out and out.startswith("database refused a value on /api/x: ")
    assert "IntegrityError" in out and WITHHELD in out


def test_a_failed_celery_tasks_line_withholds_its_exc():
    """celery.app.trace logs ``Task %(name)s[%(id)s] %(description)s: %(exc)s`` with the
    exception's repr in ``exc``."""
    error = database_error()

    def emit(logger):
        try:
            raise error
        except IntegrityError as e:
            logger.error(
                "Task %(name)s[%(id)s] %(description)s: %(exc)s",
                {"name": "records.tasks.x", "id": "1", "description": "raised", "exc": repr(e)},
                exc_info=True,
            )

    out = rendered(logging.Formatter("%(message)s"), emit)
    assert SECRET not in out and "Task records.tasks.x[1] raised: IntegrityError" in out


@pytest.mark.parametrize("formatter", [logging.Formatter("%(message)s"), JsonFormatter()])
def test_celerys_retry_line_withholds_the_retried_error(formatter):
    """A task that retries on a database error (``self.retry(exc=...)``): Celery's own
    tracer logs ``Task ...[id] retry: Retry in 1s: <the error's repr>``, without
    exc_info, from inside the handler of the Retry."""
    error = database_error()
    task = rescore_app

    def emit(_logger):
        try:
            raise Retry(exc=error, when=1)
        except Retry as reason:
            TraceInfo(states.RETRY, reason).handle_retry(
                task, Context(id="t-1"), store_errors=False
            )

    out = rendered(formatter, emit, "celery.app.trace")
    assert SECRET not in out and "penicillin" not in out
    assert "retry: Retry in 1s: IntegrityError (" in out and WITHHELD in out
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        assert "SQLSTATE 23514" in out


def test_a_retry_for_another_reason_is_logged_as_it_is():
    task = rescore_app

    def emit(_logger):
        try:
            raise Retry(exc=RuntimeError("soft time limit"), when=1)
        except Retry as reason:
            TraceInfo(states.RETRY, reason).handle_retry(
                task, Context(id="t-2"), store_errors=False
            )

    out = rendered(logging.Formatter("%(message)s"), emit, "celery.app.trace")
    assert "retry: Retry in 1s: RuntimeError('soft time limit')" in out


def test_other_errors_are_logged_as_they_are():
    def emit(logger):
        try:
            raise ValueError("max_records must be at least 1")
        except ValueError:
            logger.exception("bad policy")

    out = rendered(logging.Formatter("%(message)s"), emit)
    assert "ValueError: max_records must be at least 1" in out and WITHHELD not in out


def test_every_log_line_passes_the_filter():
    console = settings.LOGGING["handlers"]["console"]
    filters = settings.LOGGING["filters"]
    assert "database_errors" in console["filters"]
    assert filters["database_errors"]["()"] == "memadmin.log_filters.DatabaseErrorFilter"
    assert settings.LOGGING["root"]["handlers"] == ["console"]
