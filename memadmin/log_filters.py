"""Logging filters: memory user ids never reach memadmin's logs, a refusal is one line.

Installed by ``settings.LOGGING`` on Django's request logger, the security loggers that
log refusals (CSRF, admin lookups) and the development server's access log.
"""

from __future__ import annotations

import logging
import sys
from functools import cache
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.urls import Resolver404, resolve

from .pseudonyms import (
    SUBJECT_QUERY_PARAMS,
    TARGET_QUERY_PARAMS,
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


# A ``next`` inside a ``next`` is read this deep; deeper ones are hidden whole.
TARGET_DEPTH = 2


def pseudonymous_target(target: str, depth: int = 0) -> str:
    """A request target (path and query) with user ids replaced by their pseudonyms."""
    parts = urlsplit(target)
    path = unquote(parts.path)
    try:
        safe = route_with(resolve(path))
    except Resolver404:
        safe = None
    path = safe if safe is not None else unrouted_path(path)
    query = [
        (name, _pseudonymous_value(name, value, depth))
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return path + (f"?{urlencode(query, safe=':/')}" if query else "")


def _pseudonymous_value(name: str, value: str, depth: int) -> str:
    if not value:
        return value
    if name in SUBJECT_QUERY_PARAMS or (name in TARGET_QUERY_PARAMS and depth >= TARGET_DEPTH):
        return pseudonym(value)
    if name in TARGET_QUERY_PARAMS:  # a page's target, whose own ids go the same way
        return pseudonymous_target(value, depth + 1)
    return value


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


# --- the MCP server -------------------------------------------------------------------

RESOURCE_SCHEME = "memadmin://apps/"
# The one resource that names a user (mcp_server.server): what follows the id.
_USER_RESOURCE_TAIL = "/pinned"


def pseudonymous_resource_text(text: str) -> str:
    """``text`` with the user id of every memadmin resource URI in it
    (``memadmin://apps/APP/users/USER/pinned``) replaced by a pseudonym. The URI is the
    client's text and an id may hold anything (line breaks, quotes, the scheme itself),
    so the id runs to the last ``/pinned`` of the whole text, and where there is none
    all the rest of the text goes: too much is hidden rather than a part of an id shown.
    A scan, no regular expression."""
    out, pos = [], 0
    while (start := text.find(RESOURCE_SCHEME, pos)) >= 0:
        users = text.find("/users/", start + len(RESOURCE_SCHEME))
        if users < 0:
            break
        begin = users + len("/users/")
        end = text.rfind(_USER_RESOURCE_TAIL, begin)
        out.append(text[pos:begin])
        if end < 0:
            out.append("...")
            return "".join(out)
        out.append(pseudonym(unquote(text[begin:end])))
        pos = end
    out.append(text[pos:])
    return "".join(out)


class McpLogFilter(logging.Filter):
    """``mcp.server.mcpserver.server``: the SDK logs a failed resource read with its URI
    (and the URI is in the exception it raises), which names the user. Both are
    pseudonymised; a database error in the chain keeps its text withheld."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                pseudonymous_resource_text(a) if isinstance(a, str) else a for a in record.args
            )
        if isinstance(record.msg, str):
            record.msg = pseudonymous_resource_text(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.exc_info, record.exc_text = None, pseudonymous_resource_text(_traceback(error))
        return True


# --- database errors --------------------------------------------------------------------

WITHHELD = "its text is withheld: database errors can quote stored values"


@cache
def _database_errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    import psycopg
    from django.db import Error

    return (Error, psycopg.Error, sqlite3.Error)


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from or during, innermost last."""
    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        chain.append(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return chain


def withheld(error: BaseException) -> str:
    """A database error without its text: PostgreSQL's details quote the row ("Failing
    row contains (...)", "Key (user_id)=(...)"), SQLite's the values. What identifies
    the failure without a value stays: the class, SQLSTATE, constraint and table."""
    facts = []
    for e in _chain(error):
        diag = getattr(e, "diag", None)
        if diag is not None:
            facts += [
                f"{name} {value}"
                for name, value in (
                    ("SQLSTATE", diag.sqlstate),
                    ("constraint", diag.constraint_name),
                    ("table", diag.table_name),
                )
                if value
            ]
            break
    return f"{type(error).__name__} ({'; '.join([*facts, WITHHELD])})"


def stored_error(error: BaseException) -> str:
    """An error as a row keeps it (a failed run, a failed erasure): ``Class: message``,
    a database error's text withheld (``withheld``), as logs withhold it. Such rows
    outlive erasure, and the text of a database error can quote any stored value."""
    if any(isinstance(e, _database_errors()) for e in _chain(error)):
        return withheld(error)
    return f"{type(error).__name__}: {error}"


def _traceback(error: BaseException) -> str:
    """The traceback of ``error`` and its chain with each database error's text withheld."""
    import traceback

    database = _database_errors()
    parts = []
    for e in reversed(_chain(error)):
        if parts:
            parts.append("\nThe above exception led to the following one:\n\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(e.__traceback__))
        if isinstance(e, database):
            parts.append(f"{type(e).__module__}.{withheld(e)}\n")
        else:
            parts.extend(traceback.format_exception_only(e))
    return "".join(parts).rstrip("\n")


class DatabaseErrorFilter(logging.Filter):
    """Every handler: a database error's text never reaches a log line.

    Its traceback keeps the frames and the failure's class, SQLSTATE and constraint
    (``withheld``); an error passed as an argument is rendered the same way, and so is
    the ``exc`` Celery puts in a failed task's line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        database = _database_errors()
        error = record.exc_info[1] if record.exc_info else None
        in_chain = error is not None and any(isinstance(e, database) for e in _chain(error))
        if in_chain:
            # Both formatters print exc_text when exc_info is gone (the JSON one would
            # format exc_info again otherwise).
            record.exc_info, record.exc_text = None, _traceback(error)
        if isinstance(record.args, tuple):
            record.args = tuple(
                withheld(arg) if isinstance(arg, database) else arg for arg in record.args
            )
        elif isinstance(record.args, dict) and "exc" in record.args:
            if in_chain:
                record.args = {**record.args, "exc": withheld(error)}  # celery.app.trace
            elif (retry := _retried_database_error()) is not None:
                record.args = {**record.args, "exc": retry}
        return True


def _retried_database_error() -> str | None:
    """Celery's retry line (``celery.app.trace.LOG_RETRY``) has no exc_info: it is
    logged inside the handler of the ``Retry``, with ``str(Retry)`` (which holds the
    retried error's repr) in ``exc``. That line, the database error's text withheld."""
    from celery.exceptions import Retry

    current = sys.exc_info()[1]
    if not isinstance(current, Retry) or current.exc is None:
        return None
    if not any(isinstance(e, _database_errors()) for e in _chain(current.exc)):
        return None
    return f"Retry {current.humanize()}: {withheld(current.exc)}"
