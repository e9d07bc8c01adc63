"""The erasure barrier, checked inside every ingest (``records.store.ingest``).

Before an erasure deletes anything it raises a barrier for (app or all apps, subject).
Ingest checks it under the user's lock (``records.store.ingest`` reads the barrier, on
PostgreSQL in a statement it runs anyway, elsewhere by ``barrier_held``, and calls
``apply``):

- an ingest that *started* before the barrier is refused (``ErasedSubjectError``): it
  carries data read before the erasure (a sweep, a slow agent turn);
- candidates stamped before the barrier (``Candidate.entry_timestamp``) are dropped:
  they are erased data coming back from a session object read before the erasure.

Summaries are written inside enforcement, in the same locked transaction as the ingest
that triggered them, so the barrier covers them too. New data, stamped after the
barrier, is accepted: the subject may come back.

Every other writer of a user's data read before it writes (a search's history, a
dry-run's report lines) applies the same rule: take the subject's lock shared, read the
barrier, drop what was read before it (``barrier_held``, ``erased_since``).

Race-freedom: on PostgreSQL an ingest holds a *shared* advisory lock on the subject
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
from dataclasses import replace
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


def _acquire_subject_locks(user_ids: Sequence[str]) -> None:
    """``acquire_subject_lock(..., exclusive=False)`` of each user, in one statement on
    PostgreSQL (in key order, as any two callers then take them)."""
    if not connection.in_atomic_block:
        raise RuntimeError("subject locks must be taken inside transaction.atomic()")
    if connection.vendor == "postgresql" and user_ids:
        keys = sorted({subject_lock_key(u) for u in user_ids})
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_advisory_xact_lock_shared(k)) FROM unnest(%s::int8[]) AS k",
                [keys],
            )


# Barriers are the erasure app's rows; records sits below it and imports nothing from it,
# so the erasure app hands over its lookups when it loads (``erasure.apps``):
# (subject hash, app name) -> (raised_at, request id) of the newest covering barrier;
# the same as SQL (at most one row: raised_at, request_id) and its parameters, so an
# ingest on PostgreSQL reads it in a statement it runs anyway (``barrier_sql``); and
# (subject hashes, app name, moment) -> the hashes whose covering erasure had not
# finished deleting at that moment (barrier raised after it, or not complete by then).
BarrierLookup = Callable[[str, str], "tuple[datetime, int] | None"]
BarrierSql = Callable[[str, str], "tuple[str, Sequence]"]
ErasedAfter = Callable[[Sequence[str], str, datetime], "set[str]"]
_barrier_lookup: BarrierLookup | None = None
_barrier_sql: BarrierSql | None = None
_erased_after: ErasedAfter | None = None


def register_barrier_lookup(
    lookup: BarrierLookup, sql: BarrierSql | None = None, erased_after: ErasedAfter | None = None
) -> None:
    global _barrier_lookup, _barrier_sql, _erased_after
    _barrier_lookup = lookup
    _barrier_sql = sql
    _erased_after = erased_after


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


def barrier_held(app_name: str, user_id: str) -> tuple[datetime, int] | None:
    """The newest barrier covering (app, user), read under the subject's lock, taken
    shared and held until the transaction ends: a barrier raised after this waits for
    the caller's commit (and its erasure deletes what the caller wrote). Inside
    ``transaction.atomic()``, before writing anything of the user read earlier."""
    acquire_subject_lock(user_id, exclusive=False)
    return latest_barrier(app_name, user_id)


def erased_since(app_name: str, user_ids: Sequence[str], moment: datetime) -> set[str]:
    """Of ``user_ids``, those an erasure in ``app_name`` had not finished deleting at
    ``moment``: what was read of them then may be erased data, and must not be written
    (a dry-run's report lines). Stricter than ``barrier_held``'s raise time, which an
    ingest may use because it also drops content stamped before the barrier: a report
    line read while the erasure was still deleting carries no stamp. Under each user's
    subject lock, in two statements however many users there are."""
    if not user_ids:
        return set()
    if _erased_after is None:
        raise RuntimeError("no erasure barrier lookup registered (is the erasure app installed?)")
    _acquire_subject_locks(user_ids)
    by_hash = {subject_hash(u): u for u in user_ids}
    return {by_hash[h] for h in _erased_after(list(by_hash), app_name, moment)}


def apply(barrier: tuple[datetime, int] | None, candidates: Sequence, started_at: datetime) -> list:
    """The candidates an ingest that started at ``started_at`` may store, ``barrier``
    read under the subject lock (``barrier_held``, or on PostgreSQL in a statement that
    began after the lock was taken: ``records.store``); raises if the ingest predates
    an erasure."""
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
    # Nor may a kept one carry them as its context (search's context layer, the
    # embedder's text).
    return [_without_turns_before(c, raised_at) for c in kept]


def _without_turns_before(candidate, raised_at: datetime):
    said = candidate.context_said
    if all(at is None or not at < raised_at for at in said):
        return candidate
    turns = [
        (turn, at)
        for turn, at in zip(candidate.context, said, strict=True)
        if at is None or not at < raised_at
    ]
    return replace(
        candidate,
        context=tuple(turn for turn, _ in turns),
        context_said=tuple(at for _, at in turns),
    )
