"""Per-user locks: everything that changes one user's memory runs under one.

On PostgreSQL this is a transaction-scoped advisory lock keyed by (app, user), so it
is released at commit or rollback and never leaks. SQLite serialises writers anyway
(the connection uses BEGIN IMMEDIATE), so there the transaction is the lock.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager

from django.db import connection, transaction

# Advisory locks share one 64-bit key space per database; the namespace keeps ours apart
# from any other user of pg_advisory_xact_lock in the same database.
_NAMESPACE = b"memadmin:user:"


def user_lock_key(app_name: str, user_id: str) -> int:
    digest = hashlib.blake2b(
        _NAMESPACE + app_name.encode() + b"\x00" + user_id.encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def acquire_user_lock(app_name: str, user_id: str) -> None:
    """Take the user's lock in the current transaction (must be inside atomic())."""
    if not connection.in_atomic_block:
        raise RuntimeError("acquire_user_lock must be called inside transaction.atomic()")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [user_lock_key(app_name, user_id)])


def try_user_lock(app_name: str, user_id: str) -> bool:
    """Take the user's lock in the current transaction if no other transaction holds it;
    False (at once) if one does. SQLite: True (the transaction is the lock)."""
    if not connection.in_atomic_block:
        raise RuntimeError("try_user_lock must be called inside transaction.atomic()")
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [user_lock_key(app_name, user_id)])
        return bool(cursor.fetchone()[0])


@contextmanager
def user_lock(app_name: str, user_id: str):
    """``with user_lock(app, user):`` a transaction holding that user's lock."""
    with transaction.atomic():
        acquire_user_lock(app_name, user_id)
        yield
