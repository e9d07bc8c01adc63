"""Touches: what a search returned gets hits + 1 and last access = now.

Touches are writes on the read path, so they are batched. With Redis configured they
are buffered there (per user: a hash of hit counts and a sorted set of latest access
times) and a periodic task flushes them to the database in bulk; without Redis they
are applied at once in one bulk update. Eviction only needs approximate access data,
so a touch lost to a Redis outage is logged and dropped, never an error for the caller.

A search's other writes ride in the same round trip (``record_search``): its access
history entry (``access_log``) and the day's search and regret counters
(``feedback``), flushed by the same task. An ingest's counters (sessions ingested,
records added) wait in the same counters hash (``buffer_counts``). When Redis is absent
or failing, history and counters are written to the database directly instead: they
are not approximate. The agent's search makes that round trip after its answer, on a
background thread (``search.note_after_answer``, ``records.later``).

Redis key families (all per (app, user), so erasure can remove them):
    memadmin:touch:hits:<app>\\x1f<user>    hash  record id -> hits to add
    memadmin:touch:time:<app>\\x1f<user>    zset  record id -> latest access (epoch s)
    memadmin:touch:log:<app>\\x1f<user>     list  searches' history entries (JSON)
    memadmin:touch:proc:{hits,time,log}:...  the same, claimed by a flush in progress
    memadmin:touch:pending                 set of "<app>\\x1f<user>" with buffered touches
    memadmin:touch:counters[:proc]         hash  "<day>\\x1f<app>\\x1f<counter>" -> to add
                                           (no user: not subject data)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import UTC, date, datetime
from functools import cache

from django.conf import settings
from django.db import connection, transaction
from redis.exceptions import LockError

from . import access_log, feedback
from .locks import try_user_lock, user_lock
from .models import MemoryRecord

log = logging.getLogger(__name__)

PREFIX = "memadmin:touch"
PENDING = f"{PREFIX}:pending"
SEP = "\x1f"
FLUSH_LOCK = f"{PREFIX}:flush-lock"
COUNTERS = f"{PREFIX}:counters"
PROC_COUNTERS = f"{COUNTERS}:proc"
# After a Redis failure, skip Redis for this long instead of paying a timeout per search.
BACKOFF_SECONDS = 5.0
_redis_down_until = 0.0

_CLAIM = """
local n = 0
for i = 1, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 3]); n = n + 1
  end
end
redis.call('SREM', KEYS[7], ARGV[1])
return n
"""


def member(app_name: str, user_id: str) -> str:
    return f"{app_name}{SEP}{user_id}"


def user_keys(app_name: str, user_id: str) -> dict[str, str]:
    m = member(app_name, user_id)
    return {
        "hits": f"{PREFIX}:hits:{m}",
        "time": f"{PREFIX}:time:{m}",
        "log": f"{PREFIX}:log:{m}",
        "proc_hits": f"{PREFIX}:proc:hits:{m}",
        "proc_time": f"{PREFIX}:proc:time:{m}",
        "proc_log": f"{PREFIX}:proc:log:{m}",
    }


@cache
def redis_client():
    """The shared client, or None when no Redis is configured."""
    if not settings.REDIS_URL:
        return None
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5, health_check_interval=30
    )


def buffering() -> bool:
    return redis_client() is not None


def record_touches(app_name: str, user_id: str, ids: Iterable[int], now: datetime) -> str:
    """Buffer (or apply) touches. Returns 'buffered', 'applied', 'dropped' or 'none'."""
    global _redis_down_until
    ids = list(ids)
    if not ids:
        return "none"
    client = redis_client()
    if client is None:
        with user_lock(app_name, user_id):  # as ingest and eviction: see _apply_claimed
            apply_touches({i: 1 for i in ids}, dict.fromkeys(ids, now))
        return "applied"
    if time.monotonic() < _redis_down_until:
        log.warning("touch buffer unavailable; dropped %d touches for one user", len(ids))
        return "dropped"
    if not _buffer(client, app_name, user_id, ids, now):
        return "dropped"
    return "buffered"


def record_search(
    app_name: str,
    user_id: str,
    ids: Iterable[int],
    now: datetime,
    history: str,
    counts: dict[str, int],
) -> tuple[str, bool]:
    """A search's touches, its history entry and counters in one Redis round trip.

    Returns the touches' outcome (as ``record_touches``) and whether the history entry
    and counters were buffered; when not (no Redis, or it failed), the caller writes
    them itself.
    """
    ids = list(ids)
    client = redis_client()
    if client is None:
        return record_touches(app_name, user_id, ids, now), False
    if time.monotonic() < _redis_down_until:
        if ids:
            log.warning("touch buffer unavailable; dropped %d touches for one user", len(ids))
        return ("dropped" if ids else "none"), False
    if not _buffer(client, app_name, user_id, ids, now, history, counts):
        return ("dropped" if ids else "none"), False
    return ("buffered" if ids else "none"), True


def buffer_counts(app_name: str, counts: dict[str, int], now: datetime) -> bool:
    """Add an ingest's counts to the buffered daily counters (one Redis round trip, no
    database write); False when there is no buffer or it failed: then the caller writes
    them to the database itself (counts are not approximate)."""
    global _redis_down_until
    counts = {name: by for name, by in counts.items() if by}
    if not counts:
        return True
    client = redis_client()
    if client is None or time.monotonic() < _redis_down_until:
        return False
    try:
        pipe = client.pipeline(transaction=True)
        for name, by in counts.items():
            pipe.hincrby(COUNTERS, SEP.join((now.date().isoformat(), app_name, name)), by)
        pipe.execute()
    except Exception as exc:  # Redis down or slow: the database takes the counts
        _redis_down_until = time.monotonic() + BACKOFF_SECONDS
        log.warning(
            "counter buffer write failed (%s); counting in the database", type(exc).__name__
        )
        return False
    return True


def _buffer(client, app_name, user_id, ids, now, history=None, counts=None) -> bool:
    """One transaction on Redis; False (logged, backing off) when Redis failed."""
    global _redis_down_until
    keys = user_keys(app_name, user_id)
    counted = [
        (SEP.join((now.date().isoformat(), app_name, name)), by)
        for name, by in (counts or {}).items()
        if by
    ]
    try:
        _buffer_script(client)(
            keys=[keys["hits"], keys["time"], keys["log"], COUNTERS, PENDING],
            args=[
                now.timestamp(),
                member(app_name, user_id),
                "" if history is None else history,
                int(history is not None),
                len(ids),
                *ids,
                len(counted),
                *(x for pair in counted for x in pair),
            ],
        )
    except Exception as exc:  # Redis down or slow: the search must still answer
        _redis_down_until = time.monotonic() + BACKOFF_SECONDS
        log.warning(
            "touch buffer write failed (%s); dropped %d touches", type(exc).__name__, len(ids)
        )
        return False
    _redis_down_until = 0.0
    return True


# A search's touches, history entry and counters as one command (a script runs
# atomically, as MULTI/EXEC did): one short request and one reply instead of 15 commands
# packed and 15 replies parsed per search.
_BUFFER = """
local stamp, n = ARGV[1], tonumber(ARGV[5])
for i = 6, 5 + n do
  redis.call('HINCRBY', KEYS[1], ARGV[i], 1)
  redis.call('ZADD', KEYS[2], 'GT', stamp, ARGV[i])
end
if ARGV[4] == '1' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
local at = 6 + n
for i = at + 1, at + 2 * tonumber(ARGV[at]), 2 do
  redis.call('HINCRBY', KEYS[4], ARGV[i], ARGV[i + 1])
end
redis.call('SADD', KEYS[5], ARGV[2])
return n
"""


@cache
def _buffer_script(client):
    return client.register_script(_BUFFER)


def apply_touches(hits: dict[int, int], last: dict[int, datetime]) -> int:
    """One bulk UPDATE: hits += n, last_accessed_at = max(last_accessed_at, at)."""
    ids = sorted(set(hits) | set(last))
    if not ids:
        return 0
    table = MemoryRecord._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""
                UPDATE {table} AS r
                SET hits = r.hits + v.n,
                    last_accessed_at = GREATEST(r.last_accessed_at, v.at)
                FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[]) AS v(id, n, at)
                WHERE r.id = v.id
                """,
                [ids, [hits.get(i, 0) for i in ids], [last.get(i) for i in ids]],
            )
            return cursor.rowcount
        ops = connection.ops
        rows = [
            (
                hits.get(i, 0),
                ops.adapt_datetimefield_value(last[i]) if i in last else None,
                i,
            )
            for i in ids
        ]
        cursor.executemany(
            f"""
            UPDATE {table}
            SET hits = hits + %s,
                last_accessed_at = MAX(last_accessed_at, COALESCE(%s, last_accessed_at))
            WHERE id = %s
            """,
            rows,
        )
        return len(rows)


def flush_touches(max_users: int | None = None) -> int:
    """Move buffered touches into the database. Returns the number of users flushed."""
    client = redis_client()
    if client is None:
        return 0
    lock = client.lock(FLUSH_LOCK, timeout=300, blocking=False)
    if not lock.acquire():
        return 0  # another flush is running; its claim covers these keys
    try:
        claim = client.register_script(_CLAIM)
        flushed = 0
        # Claims left by a flush that crashed after claiming are applied first.
        _flush_counters(client)
        left = set()
        for raw in client.scan_iter(match=f"{PREFIX}:proc:*", count=500):
            key = raw.decode("utf-8", "surrogateescape")
            for kind in ("hits", "time", "log"):
                head = f"{PREFIX}:proc:{kind}:"
                if key.startswith(head):
                    left.add(key[len(head) :])
        # A user whose lock is held keeps their claim (and their pending touches: a new
        # claim would overwrite the one waiting) for the next flush.
        busy = set()
        for m in left:
            if not _still_ours(lock):
                return flushed
            if not _apply_claimed(client, m):
                busy.add(m)
        for raw in client.sscan_iter(PENDING, count=500):
            if not _still_ours(lock):
                break
            m = raw.decode()
            if m in busy:
                continue
            app_name, user_id = m.split(SEP, 1)
            keys = user_keys(app_name, user_id)
            claim(
                keys=[
                    keys["hits"],
                    keys["time"],
                    keys["log"],
                    keys["proc_hits"],
                    keys["proc_time"],
                    keys["proc_log"],
                    PENDING,
                ],
                args=[m],
            )
            if not _apply_claimed(client, m):
                busy.add(m)
                continue
            flushed += 1
            if max_users is not None and flushed >= max_users:
                break
        if busy:
            log.info("touches of %d busy user(s) wait for the next flush", len(busy))
        return flushed
    finally:
        try:
            lock.release()
        except Exception:  # expired meanwhile: nothing to release
            log.warning("touch flush lock expired before release")


def _still_ours(lock) -> bool:
    """Renew the flush lock's time before the next user. False when it expired (a flush
    slower than its timeout): another flush may hold it now and apply this one's claims
    as left by a crash, so this one stops rather than apply them a second time."""
    try:
        lock.reacquire()
    except LockError:
        log.warning("touch flush lock expired; this flush stops, the next one goes on")
        return False
    return True


def _apply_claimed(client, m: str) -> bool:
    app_name, user_id = m.split(SEP, 1)
    keys = user_keys(app_name, user_id)
    hits = {int(k): int(v) for k, v in client.hgetall(keys["proc_hits"]).items()}
    last = {
        int(k): datetime.fromtimestamp(score, tz=UTC)
        for k, score in client.zrange(keys["proc_time"], 0, -1, withscores=True)
    }
    history = [e.decode() for e in client.lrange(keys["proc_log"], 0, -1)]
    # Raises, or finds the user busy: the claim stays for the next flush.
    if not apply_user_touches(app_name, user_id, hits, last, history):
        return False
    client.delete(keys["proc_hits"], keys["proc_time"], keys["proc_log"])
    return True


def apply_user_touches(
    app_name: str, user_id: str, hits: dict[int, int], last: dict[int, datetime], history
) -> bool:
    """One user's flushed touches and search history, in one transaction under the
    user's lock, as ingest, eviction and erasure take it: the touched rows are locked in
    another order than an eviction's, so without it the two could deadlock and
    PostgreSQL abort either one (the ingest, failing the agent's turn). False, having
    written nothing, when the lock is held (an ingest, a sweep batch): the flush does not
    wait behind them, and this user's touches wait for the next flush."""
    with transaction.atomic():
        if not try_user_lock(app_name, user_id):
            return False
        apply_touches(hits, last)
        access_log.write_buffered_history(app_name, user_id, history)
    return True


def _flush_counters(client) -> None:
    """Add the buffered search and regret counts to the daily counters."""
    if not client.exists(PROC_COUNTERS):  # else a crashed flush's claim: apply it first
        if not client.exists(COUNTERS):
            return
        client.rename(COUNTERS, PROC_COUNTERS)  # only flushes (under the lock) rename
    by_app: dict[tuple[str, str], dict[str, int]] = {}
    for field, value in client.hgetall(PROC_COUNTERS).items():
        day, app_name, name = field.decode().split(SEP)
        by_app.setdefault((day, app_name), {})[name] = int(value)
    with transaction.atomic():
        for (day, app_name), counts in sorted(by_app.items()):
            feedback.add_to_day(app_name, date.fromisoformat(day), counts)
    client.delete(PROC_COUNTERS)


KINDS = ("hits", "time", "log", "proc:hits", "proc:time", "proc:log")


def member_user(m: str) -> str | None:
    """The user id of a pending-set member (``member``), or None if it is not one."""
    _, sep, user = m.partition(SEP)
    return user if sep else None


def subject_touch_keys(client, app_name: str | None, user_id: str) -> tuple[list[str], list[str]]:
    """Erasure: (keys, pending-set members) of the user in one app, or (None) in every app."""
    if app_name is not None:
        present = user_touch_keys_present(app_name, user_id)
        keys = [k for k in present if k != PENDING]
        return keys, [member(app_name, user_id)] if PENDING in present else []
    keys = []
    for raw in client.scan_iter(match=f"{PREFIX}:*", count=1000):
        key = raw.decode("utf-8", "surrogateescape")
        for kind in KINDS:
            head = f"{PREFIX}:{kind}:"
            if key.startswith(head) and member_user(key[len(head) :]) == user_id:
                keys.append(key)
    members = [
        m
        for m in (raw.decode("utf-8", "surrogateescape") for raw in client.sscan_iter(PENDING))
        if member_user(m) == user_id
    ]
    return keys, members


def discard_subject_touches(client, app_name: str | None, user_id: str) -> int:
    """Erasure: drop the user's buffered touches in one app or (None) every app."""
    if app_name is not None:
        return discard_user_touches(app_name, user_id)
    keys, members = subject_touch_keys(client, None, user_id)
    if not keys and not members:
        return 0
    pipe = client.pipeline(transaction=True)
    if keys:
        pipe.delete(*keys)
    if members:
        pipe.srem(PENDING, *members)
    return sum(int(n) for n in pipe.execute())


def discard_user_touches(app_name: str, user_id: str) -> int:
    """Erasure: drop every buffered touch of the user. Returns keys deleted."""
    client = redis_client()
    if client is None:
        return 0
    keys = user_keys(app_name, user_id)
    pipe = client.pipeline(transaction=True)
    pipe.delete(*keys.values())
    pipe.srem(PENDING, member(app_name, user_id))
    deleted, _ = pipe.execute()
    return int(deleted)


def user_touch_keys_present(app_name: str, user_id: str) -> list[str]:
    """Erasure verification: which of the user's touch keys still exist."""
    client = redis_client()
    if client is None:
        return []
    present = [k for k in user_keys(app_name, user_id).values() if client.exists(k)]
    if client.sismember(PENDING, member(app_name, user_id)):
        present.append(PENDING)
    return present


def backlog() -> int | None:
    """Users whose touches wait in the buffer; None without Redis (nothing is buffered)."""
    client = redis_client()
    return None if client is None else int(client.scard(PENDING))
