"""records.later: the background thread that runs a search's writes after the answer."""

import threading
from datetime import UTC, datetime

import pytest

from records import later, touches
from records.access_log import SearchLog
from records.memory_service import EvictingMemoryService
from records.models import MemoryRecord

from ..asyncutil import run
from .factories import session

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def blocked():
    """The background thread held inside a job until the test sets the event."""
    go, started = threading.Event(), threading.Event()
    later.submit(lambda: (started.set(), go.wait()))
    started.wait()
    yield go
    go.set()
    later.drain()


def test_a_job_runs_on_the_background_thread_and_drain_waits_for_it():
    ran_on = []
    assert later.submit(lambda: ran_on.append(threading.current_thread().name))
    later.drain()
    assert ran_on == ["memadmin-later"]


def test_a_full_queue_runs_the_job_on_the_callers_thread(blocked, monkeypatch):
    monkeypatch.setattr(later._queue(), "maxsize", 1)
    ran_on = []
    assert later.submit(lambda: ran_on.append("queued"))
    assert not later.submit(lambda: ran_on.append(threading.current_thread().name))
    assert ran_on == [threading.current_thread().name]  # ran here, at once: nothing lost
    blocked.set()
    later.drain()
    assert ran_on[1:] == ["queued"]


def test_a_failing_job_is_logged_and_the_next_still_runs(caplog):
    def broken():
        raise RuntimeError("boom")

    ran = []
    later.submit(broken)
    later.submit(lambda: ran.append(1))
    later.drain()
    assert ran == [1]
    assert "background job broken failed" in caplog.text


def test_a_forked_child_starts_its_own_thread(monkeypatch):
    first = later._queue()
    monkeypatch.setattr(later, "_pid", -1)  # as a forked child sees its parent's queue
    assert later._queue() is not first
    ran = []
    later.submit(lambda: ran.append(1))
    later.drain()
    assert ran == [1]


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_the_agents_search_answers_before_its_touch_is_written(blocked):
    svc = EvictingMemoryService(clock=lambda: NOW)
    run(svc.add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    response = run(svc.search_memory(app_name="pharmacy", user_id="u1", query="deliver"))
    assert [m.id for m in response.memories] == [str(MemoryRecord.objects.get().id)]
    keys = touches.user_touch_keys_present("pharmacy", "u1")
    assert keys == []  # answered: the touch waits behind the blocked job
    blocked.set()
    later.drain()
    assert touches.user_keys("pharmacy", "u1")["hits"] in touches.user_touch_keys_present(
        "pharmacy", "u1"
    )


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_when_redis_fails_the_history_is_written_by_the_background_thread(
    settings, monkeypatch, caplog
):
    from .test_touches import free_port

    svc = EvictingMemoryService(clock=lambda: NOW)
    run(svc.add_session_to_memory(session(["Deliver to 12 Elm Street"])))
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    touches.redis_client.cache_clear()
    monkeypatch.setattr(touches, "BACKOFF_SECONDS", 0.0)
    try:
        response = run(svc.search_memory(app_name="pharmacy", user_id="u1", query="deliver"))
        later.drain()
    finally:
        touches.redis_client.cache_clear()
    assert len(response.memories) == 1
    assert "touch buffer write failed" in caplog.text
    [entry] = SearchLog.objects.all()  # not approximate: written to the database instead
    assert entry.record_ids == [MemoryRecord.objects.get().id]
