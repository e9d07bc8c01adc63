"""The Redis touch buffer: batched writes on the read path, never failing a search."""

import shutil
import socket
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
import redis as redis_lib

from records import access_log, feedback, search, touches
from records.models import DailyCounter, MemoryRecord, SearchLog

from .factories import make_records

pytestmark = [pytest.mark.redis, pytest.mark.django_db]

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def buffer(settings):
    client = touches.redis_client()
    for key in client.scan_iter(match=f"{touches.PREFIX}:*"):
        client.delete(key)
    yield client
    for key in client.scan_iter(match=f"{touches.PREFIX}:*"):
        client.delete(key)


def test_touches_are_buffered_then_flushed_in_bulk(buffer):
    a, b = make_records("app", "u1", 2, NOW)
    [c] = make_records("app", "u2", 1, NOW)
    assert search.touch("app", "u1", [a.id, b.id], NOW + timedelta(hours=1)) == "buffered"
    search.touch("app", "u1", [a.id], NOW + timedelta(hours=2))
    search.touch("app", "u1", [a.id], NOW + timedelta(minutes=30))  # older: must not win
    search.touch("app", "u2", [c.id], NOW + timedelta(hours=3))
    a.refresh_from_db()
    assert a.hits == 0  # nothing written on the read path
    assert touches.flush_touches() == 2
    a.refresh_from_db(), b.refresh_from_db(), c.refresh_from_db()
    assert (a.hits, a.last_accessed_at) == (3, NOW + timedelta(hours=2))
    assert (b.hits, b.last_accessed_at) == (1, NOW + timedelta(hours=1))
    assert (c.hits, c.last_accessed_at) == (1, NOW + timedelta(hours=3))
    assert list(buffer.scan_iter(match=f"{touches.PREFIX}:*")) == []
    assert touches.flush_touches() == 0  # nothing left, nothing applied twice
    a.refresh_from_db()
    assert a.hits == 3


def test_a_claim_left_by_a_crashed_flush_is_applied_by_the_next(buffer):
    [a] = make_records("app", "u1", 1, NOW)
    search.touch("app", "u1", [a.id], NOW + timedelta(hours=1))
    keys = touches.user_keys("app", "u1")
    # what a flush that died right after claiming leaves behind
    buffer.rename(keys["hits"], keys["proc_hits"])
    buffer.rename(keys["time"], keys["proc_time"])
    buffer.srem(touches.PENDING, touches.member("app", "u1"))
    touches.flush_touches()
    a.refresh_from_db()
    assert a.hits == 1
    assert not buffer.exists(keys["proc_hits"])


def test_a_flush_whose_lock_expired_stops_rather_than_apply_twice(buffer, monkeypatch):
    """A flush slower than its lock's timeout: another flush may take the lock and apply
    what it finds claimed. The first renews the lock before each user and stops once it
    is gone, so no touch is applied twice; what it left, the next flush applies."""
    [a] = make_records("app", "u1", 1, NOW)
    [b] = make_records("app", "u2", 1, NOW)
    search.touch("app", "u1", [a.id], NOW + timedelta(hours=1))
    search.touch("app", "u2", [b.id], NOW + timedelta(hours=1))
    applied = []
    apply = touches._apply_claimed

    def slow(client, m):
        done = apply(client, m)
        applied.append(m)
        client.set(touches.FLUSH_LOCK, "another flush")  # ours expired; another took it
        return done

    monkeypatch.setattr(touches, "_apply_claimed", slow)
    assert touches.flush_touches() == 1 and len(applied) == 1
    assert buffer.get(touches.FLUSH_LOCK) == b"another flush"  # not released: not ours
    buffer.delete(touches.FLUSH_LOCK)  # the other flush ends
    monkeypatch.setattr(touches, "_apply_claimed", apply)
    assert touches.flush_touches() == 1
    a.refresh_from_db(), b.refresh_from_db()
    assert (a.hits, b.hits) == (1, 1)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_busy_users_touches_wait_for_the_next_flush_and_none_is_lost(buffer):
    """While the user's lock is held (an ingest, a sweep batch) the flush skips them: the
    claim stays, later touches are not claimed over it, and all land once it is free."""
    import threading

    from django.db import connections

    from records.locks import user_lock

    [a] = make_records("app", "u1", 1, NOW)
    [b] = make_records("app", "u2", 1, NOW)
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with user_lock("app", "u1"):
                held.set()
                assert release.wait(timeout=60)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=60)
        search.touch("app", "u1", [a.id], NOW + timedelta(hours=1))
        search.touch("app", "u2", [b.id], NOW + timedelta(hours=1))
        assert touches.flush_touches() == 1  # u2 only
        search.touch("app", "u1", [a.id], NOW + timedelta(hours=2))
        assert touches.flush_touches() == 0  # u1 still busy: its first claim waits
        a.refresh_from_db(), b.refresh_from_db()
        assert (a.hits, b.hits) == (0, 1)
    finally:
        release.set()
        holder.join(timeout=60)
    touches.flush_touches()  # the waiting claim, then the newer touches
    touches.flush_touches()
    a.refresh_from_db()
    assert (a.hits, a.last_accessed_at) == (2, NOW + timedelta(hours=2))
    assert list(buffer.scan_iter(match=f"{touches.PREFIX}:*")) == []


def test_touches_for_deleted_records_are_harmless(buffer):
    [a] = make_records("app", "u1", 1, NOW)
    search.touch("app", "u1", [a.id], NOW)
    a.delete()
    touches.flush_touches()
    assert MemoryRecord.objects.count() == 0


def test_discarding_a_users_buffer_leaves_other_users_alone(buffer):
    [a] = make_records("app", "u1", 1, NOW)
    [b] = make_records("app", "u2", 1, NOW)
    search.touch("app", "u1", [a.id], NOW)
    search.touch("app", "u2", [b.id], NOW)
    assert touches.user_touch_keys_present("app", "u1")
    touches.discard_user_touches("app", "u1")
    assert touches.user_touch_keys_present("app", "u1") == []
    assert touches.user_touch_keys_present("app", "u2")


def _deliver_note():
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from records.memory_service import add_memories

    add_memories(
        "app",
        "u1",
        [MemoryEntry(content=types.Content(parts=[types.Part(text="Deliver to 4 Mill Lane")]))],
        NOW,
    )
    return MemoryRecord.objects.get()


def test_a_search_buffers_its_history_and_counters_with_its_touches_until_the_flush(buffer):
    from records.memory_service import search_entries

    record = _deliver_note()
    assert len(search_entries("app", "u1", "deliver", NOW)) == 1
    assert search_entries("app", "u1", "zebra crossing", NOW) == []  # counted and kept too
    assert not SearchLog.objects.exists()
    assert not DailyCounter.objects.filter(name=feedback.SEARCHES).exists()
    assert buffer.llen(touches.user_keys("app", "u1")["log"]) == 2

    assert touches.flush_touches() == 1
    rows = SearchLog.objects.order_by("id")
    assert [(r.user_id, r.searched_at, r.record_ids) for r in rows] == [
        ("u1", NOW, [record.id]),
        ("u1", NOW, []),
    ]
    assert rows[1].term_hashes == access_log.query_hashes("zebra crossing")
    counts = DailyCounter.objects.filter(day=NOW.date(), name__in=["searches", "regret_hits"])
    assert dict(counts.values_list("name", "value")) == {feedback.SEARCHES: 2}
    record.refresh_from_db()
    assert record.hits == 1
    assert list(buffer.scan_iter(match=f"{touches.PREFIX}:*")) == []


def test_a_failed_flush_keeps_the_claimed_searches_for_the_next_one(buffer, monkeypatch):
    from records.memory_service import search_entries

    record = _deliver_note()
    search_entries("app", "u1", "deliver", NOW)
    monkeypatch.setattr(access_log.SearchLog.objects, "bulk_create", _refuse)
    with pytest.raises(RuntimeError):
        touches.flush_touches()
    monkeypatch.undo()
    record.refresh_from_db()
    assert record.hits == 0 and not SearchLog.objects.exists()  # rolled back together
    touches.flush_touches()
    assert list(SearchLog.objects.values_list("record_ids", flat=True)) == [[record.id]]
    record.refresh_from_db()
    assert record.hits == 1


def test_discarding_a_users_buffer_drops_their_buffered_searches(buffer):
    from records.memory_service import search_entries

    _deliver_note()
    search_entries("app", "u1", "deliver", NOW)
    assert touches.user_keys("app", "u1")["log"] in touches.user_touch_keys_present("app", "u1")
    touches.discard_user_touches("app", "u1")
    touches.flush_touches()
    assert not SearchLog.objects.exists()
    # the counters name no user: they stay, and are flushed
    assert DailyCounter.objects.get(name=feedback.SEARCHES).value == 1


def _refuse(*args, **kwargs):
    raise RuntimeError("database unavailable")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(port):
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in proc.stdout:  # wait for the server to say it is ready, not for a timer
        if "Ready to accept connections" in line:
            return proc
    raise RuntimeError("redis-server did not start")


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server binary")
def test_searches_keep_answering_while_redis_is_down_and_buffering_resumes(
    settings, monkeypatch, caplog
):
    port = free_port()
    proc = start_redis(port)
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    touches.redis_client.cache_clear()
    monkeypatch.setattr(touches, "BACKOFF_SECONDS", 0.0)
    try:
        from google.adk.memory.memory_entry import MemoryEntry
        from google.genai import types

        from records.memory_service import add_memories, search_entries

        add_memories(
            "app",
            "u1",
            [MemoryEntry(content=types.Content(parts=[types.Part(text="Deliver to 4 Mill Lane")]))],
            NOW,
        )
        assert len(search_entries("app", "u1", "deliver", NOW)) == 1
        assert redis_lib.Redis(port=port).scard(touches.PENDING) == 1

        proc.terminate()
        proc.wait(timeout=10)
        caplog.clear()
        answers = [search_entries("app", "u1", "deliver", NOW) for _ in range(3)]
        assert all(len(a) == 1 for a in answers)  # the turn never fails
        assert "dropped" in caplog.text
        # history and counters are not approximate: written directly while Redis is down
        assert SearchLog.objects.count() == 3
        assert DailyCounter.objects.get(name=feedback.SEARCHES).value == 3

        proc = start_redis(port)  # Redis is back: buffering resumes
        assert len(search_entries("app", "u1", "deliver", NOW)) == 1
        assert redis_lib.Redis(port=port).scard(touches.PENDING) == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        touches.redis_client.cache_clear()
