"""A request id for every request, carried into the Celery tasks it queues.

The id comes from the client's ``X-Request-ID`` (when it is a short token) or is made
here; the response sends it back. Publishing a task copies it into the message's
headers, and the worker restores it while the task runs, next to the task's own id.
``ContextFilter`` puts both on every log record (the JSON log lines show them).
"""

from __future__ import annotations

import logging
import uuid
from contextvars import ContextVar

from celery import signals
from django.core.signals import request_finished, request_started

HEADER = "request_id"  # the Celery message header
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")

current_request_id: ContextVar[str | None] = ContextVar("memadmin_request_id", default=None)
current_task_id: ContextVar[str | None] = ContextVar("memadmin_task_id", default=None)


def incoming_request_id(value: str | None) -> str:
    """The client's id when it is a plain token of up to 64 characters; else a new one."""
    if value and len(value) <= 64 and _TOKEN_CHARS.issuperset(value):
        return value
    return uuid.uuid4().hex


def _request_started(environ=None, **kwargs):
    # From the start of the request to its end, after Django logs its response line.
    current_request_id.set(incoming_request_id((environ or {}).get("HTTP_X_REQUEST_ID")))


def _request_finished(**kwargs):
    current_request_id.set(None)


class RequestIdMiddleware:
    """Puts the request's id on the request and on the response (``X-Request-ID``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = current_request_id.get()
        if request.request_id is None:  # a handler that sends no request_started
            request.request_id = incoming_request_id(request.headers.get("X-Request-ID"))
            current_request_id.set(request.request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


class ContextFilter(logging.Filter):
    """Adds ``request_id`` and ``task_id`` (None outside a request or task) to each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        record.task_id = current_task_id.get()
        return True


def _add_request_id(headers=None, **kwargs):
    current = current_request_id.get()
    if current and headers is not None:
        headers.setdefault(HEADER, current)


# The context to restore after each running task (prerun and postrun are two signals).
_tokens: dict[str, tuple] = {}


def _task_started(task_id=None, task=None, **kwargs):
    carried = getattr(task.request, HEADER, None) if task is not None else None
    _tokens[task_id] = (
        current_request_id.set(carried if isinstance(carried, str) else None),
        current_task_id.set(task_id),
    )


def _task_finished(task_id=None, **kwargs):
    tokens = _tokens.pop(task_id, None)
    if tokens:
        current_request_id.reset(tokens[0])
        current_task_id.reset(tokens[1])


def connect_signals() -> None:
    request_started.connect(_request_started, dispatch_uid="memadmin-request-id")
    request_finished.connect(_request_finished, dispatch_uid="memadmin-request-id")
    signals.before_task_publish.connect(_add_request_id, dispatch_uid="memadmin-request-id")
    signals.task_prerun.connect(_task_started, dispatch_uid="memadmin-task-context")
    signals.task_postrun.connect(_task_finished, dispatch_uid="memadmin-task-context")
