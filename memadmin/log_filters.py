"""Logging filters: memory user ids never reach memadmin's logs, a refusal is one line.

Installed by ``settings.LOGGING`` on Django's request logger, the security loggers that
log refusals (CSRF, admin lookups) and the development server's access log.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.urls import Resolver404, resolve

from .pseudonyms import (
    SUBJECT_QUERY_PARAMS,
    pseudonym,
    pseudonymous_path,
    route_with,
    unrouted_path,
)
from .roles import RoleDenied


def _escaped(text: str) -> str:
    # Django escapes log arguments this way (django.utils.log.log_message).
    return text.encode("unicode_escape").decode("ascii")


class RequestLogFilter(logging.Filter):
    """``django.request`` and ``django.security``: one line per refusal, paths pseudonymised.

    A 403 from ``check_role`` was logged already (by ``memadmin.authz``, in one line):
    Django's copy of it is dropped. Any other refusal keeps its line but not the
    traceback: a refused request is not a crash.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RoleDenied):
            return False
        if isinstance(error, PermissionDenied | SuspiciousOperation):
            record.exc_info, record.exc_text = None, None
        request = getattr(record, "request", None)
        path = getattr(request, "path", None)
        if isinstance(path, str) and isinstance(record.args, tuple):
            safe = pseudonymous_path(request)
            if safe != path:
                raw = {path, _escaped(path)}
                record.args = tuple(safe if arg in raw else arg for arg in record.args)
        return True


def pseudonymous_target(target: str) -> str:
    """A request target (path and query) with user ids replaced by their pseudonyms."""
    parts = urlsplit(target)
    path = unquote(parts.path)
    try:
        safe = route_with(resolve(path))
    except Resolver404:
        safe = None
    path = safe if safe is not None else unrouted_path(path)
    query = [
        (name, pseudonym(value) if name in SUBJECT_QUERY_PARAMS and value else value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return path + (f"?{urlencode(query, safe=':/')}" if query else "")


class AccessLogFilter(logging.Filter):
    """``django.server`` (``runserver`` in ``make run``): the same for each access line."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Logging configured twice leaves two filters on the logger; pseudonymise once.
        if getattr(record, "memadmin_pseudonymised", False):
            return True
        record.memadmin_pseudonymised = True
        if isinstance(record.args, tuple) and record.args and isinstance(record.args[0], str):
            method, space, rest = record.args[0].partition(" ")
            target, space2, version = rest.rpartition(" ")
            if space and space2 and target:
                line = f"{method} {pseudonymous_target(target)} {version}"
                record.args = (line, *record.args[1:])
        return True
