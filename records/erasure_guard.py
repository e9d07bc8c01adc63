"""The erasure barrier, checked inside every ingest (``records.store.ingest``).

Before an erasure deletes anything it raises a barrier for (app or all apps, subject).
Ingest checks it under the user's lock (``check``; ``records.store.ingest`` reads the
barrier itself, on PostgreSQL in a statement it runs anyway, and calls ``apply``):

- an ingest that *started* before the barrier is refused (``ErasedSubjectError``): it
  carries data read before the erasure (a sweep, a slow agent turn);
- candidates stamped before the barrier (``Candidate.entry_timestamp``) are dropped:
  they are erased data coming back from a session object read before the erasure.

Summaries are written inside enforcement, in the same locked transaction as the ingest
that triggered them, so the barrier covers them too. New data, stamped after the
barrier, is accepted: the subject may come back.

Race-freedom: on PostgreSQL ``check`` holds a *shared* advisory lock on the subject
(all apps) until the ingest commits, and raising a barrier takes it *exclusively*. So an
ingest of any app that passed the check has committed before the erasure starts
deleting (and is deleted with the rest), and every later ingest sees the barrier. Lock
order is always (app, user) lock, then subject lock; a barrier takes only the subject
lock, so the two never wait on each other in a cycle. SQLite serialises writers anyway.

Barriers name the subject by its keyed hash only and are kept: a stale session object
can come back at any time.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from django.db import connection

from memadmin.pseudonyms import subject_hash

log = logging.getLogger(__name__)

_SUBJECT_LOCK_NAMESPACE = b"memadmin:subject:"


class ErasedSubjectError(RuntimeError):
    """An ingest that started before an erasure of its user; nothing was written."""


def subject_lock_key(user_id: str) -> int:
    digest = hashlib.blake2b(
        _SUBJECT_LOCK_NAMESPACE + user_id.encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def acquire_subject_lock(user_id: str, *, exclusive: bool) -> None:
    """Ingest takes it shared, raising a barrier exclusively (PostgreSQL; inside atomic())."""
    if not connection.in_atomic_block:
        raise RuntimeError("acquire_subject_lock must be called inside transaction.atomic()")
    if connection.vendor == "postgresql":
        fn = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {fn}(%s)", [subject_lock_key(user_id)])


# Barriers are the erasure app's rows; records sits below it and imports nothing from it,
# so the erasure app hands over its lookup when it loads (``erasure.apps``):
# (subject hash, app name) -> (raised_at, request id) of the newest covering barrier.
# The same as SQL (at most one row: raised_at, request_id) and its parameters, so an
# ingest on PostgreSQL reads it in a statement it runs anyway (``barrier_sql``).
BarrierLookup = Callable[[str, str], "tuple[datetime, int] | None"]
BarrierSql = Callable[[str, str], "tuple[str, Sequence]"]
_barrier_lookup: BarrierLookup | None = None
_barrier_sql: BarrierSql | None = None


def register_barrier_lookup(lookup: BarrierLookup, sql: BarrierSql | None = None) -> None:
    global _barrier_lookup, _barrier_sql
    _barrier_lookup = lookup
    _barrier_sql = sql


def barrier_sql(app_name: str, user_id: str) -> tuple[str, Sequence] | None:
    """The newest covering barrier as a query (see ``latest_barrier``), or None when the
    registered lookup has no SQL form (then call ``check``)."""
    if _barrier_lookup is None:
        raise RuntimeError("no erasure barrier lookup registered (is the erasure app installed?)")
    if _barrier_sql is None:
        return None
    return _barrier_sql(subject_hash(user_id), app_name)


def latest_barrier(app_name: str, user_id: str) -> tuple[datetime, int] | None:
    """(raised_at, request id) of the newest barrier covering (app, user), if any."""
    if _barrier_lookup is None:
        raise RuntimeError("no erasure barrier lookup registered (is the erasure app installed?)")
    return _barrier_lookup(subject_hash(user_id), app_name)


def check(app_name: str, user_id: str, candidates: Sequence, started_at: datetime) -> list:
    """The candidates an ingest may store; raises if the ingest predates an erasure.

    Call under the user's lock, inside the ingest's transaction.
    """
    acquire_subject_lock(user_id, exclusive=False)
    return apply(latest_barrier(app_name, user_id), candidates, started_at)


def apply(barrier: tuple[datetime, int] | None, candidates: Sequence, started_at: datetime) -> list:
    """``check`` with the barrier already read (under the subject lock, in a statement
    that began after the lock was taken: ``records.store``)."""
    if barrier is None:
        return list(candidates)
    raised_at, request_id = barrier
    if started_at < raised_at:
        # No user id in the message: it ends up in logs.
        raise ErasedSubjectError(
            f"Ingest refused: this user's data was erased (erasure #{request_id}, barrier "
            f"raised at {raised_at.isoformat()}) after this ingest started at "
            f"{started_at.isoformat()}, so what it carries may be erased data. Read the "
            "session again and retry if there is anything new."
        )
    kept = [c for c in candidates if c.entry_timestamp is None or not c.entry_timestamp < raised_at]
    if len(kept) != len(candidates):
        log.info(
            "erasure #%s barrier dropped %d candidate(s) stamped before it",
            request_id,
            len(candidates) - len(kept),
        )
    return kept
