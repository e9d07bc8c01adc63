"""The agent's search on the event loop's own connection (records.aio): the same answers
as the search in Django's thread, on a connection of the loop's own."""

import asyncio
import threading

import pytest
from django.conf import settings
from django.db import connection
from django.db.utils import DataError, ProgrammingError
from prometheus_client import REGISTRY

from records import aio, feedback, later, search, touches
from records.memory_service import EvictingMemoryService, to_memory_entry
from records.models import MemoryRecord, SearchLog

from ..asyncutil import run
from .test_search import APP, NOW, USER, store_memory

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

QUERIES = [
    "Zurich",  # few candidates: whole rows in the one statement
    "allergy",  # hundreds: the ten read by id after ranking
    "kiwi allergy",
    "東京",
    "new delivery address",
    "kiwi smoothie",  # a regret: matches an evicted record's terms
    "the",  # no meaningful word
    "nothing like this anywhere",
]


@pytest.fixture
def memory():
    stored = store_memory()
    # An evicted record's term hashes (feedback.remember_evicted keeps them).
    feedback.remember_evicted(APP, {10**9: USER}, {10**9: "kiwi smoothie recipe"}, NOW)
    return stored


def answer(found: search.Found):
    return (
        [to_memory_entry(r).model_dump() for r in found.records],
        found.regret,
        found.term_hashes,
    )


@pytest.mark.parametrize("query", QUERIES)
def test_the_loop_answers_as_the_thread_does(memory, query):
    assert search.answers_in_loop()
    in_loop = run(search.afind(APP, USER, query, NOW))
    assert answer(in_loop) == answer(search.find(APP, USER, query, NOW))
    if query == "kiwi smoothie":
        assert in_loop.regret
    if query == "allergy":
        assert len(in_loop.records) == search.SEARCH_LIMIT


def test_many_candidates_are_ranked_in_a_thread_to_the_same_answer(memory, monkeypatch):
    monkeypatch.setattr(search, "RANK_ON_LOOP", 0)  # every candidate set counts as large
    for query in ("allergy", "Zurich"):
        in_loop = run(search.afind(APP, USER, query, NOW))
        assert answer(in_loop) == answer(search.find(APP, USER, query, NOW))


async def _prepared_names(conn):
    cursor = await conn.execute("SELECT name FROM pg_prepared_statements")
    return {name for (name,) in await cursor.fetchall()}


def test_the_statement_runs_prepared_on_the_connection_of_the_loop(memory):
    aio.close_idle()
    run(search.afind(APP, USER, "Zurich", NOW))
    assert aio.idle() == 1  # the search's connection, given back
    assert any(name.startswith("memadmin_") for name in run(aio.read(_prepared_names)))


def test_the_agents_search_memory_answers_from_the_loop(memory):
    aio.close_idle()
    response = run(
        EvictingMemoryService(clock=lambda: NOW).search_memory(
            app_name=APP, user_id=USER, query="Zurich"
        )
    )
    [entry] = response.memories
    assert entry.content.parts[0].text == "We moved to Zürich last spring"
    assert aio.idle() == 1  # it ran on a connection of records.aio, not in a thread


async def _itself(conn):
    return conn


def test_a_connection_given_back_serves_the_next_read_of_any_loop():
    aio.close_idle()
    first = run(aio.read(_itself))
    assert aio.idle() == 1
    second = run(aio.read(_itself))  # another loop (asyncio.run), as ADK's Runner.run makes
    assert second is first and not first.closed and aio.idle() == 1


def test_reads_at_once_each_take_a_connection_and_the_surplus_is_closed():
    aio.close_idle()
    at_once = aio.MAX_IDLE + 2

    async def reads():
        barrier = asyncio.Barrier(at_once)

        async def hold(conn):
            await barrier.wait()  # every read holds its connection at the same time
            return conn

        return await asyncio.gather(*(aio.read(hold) for _ in range(at_once)))

    held = run(reads())
    assert len({id(c) for c in held}) == at_once
    assert aio.idle() == aio.MAX_IDLE
    assert sum(c.closed for c in held) == at_once - aio.MAX_IDLE


def test_searches_at_once_on_one_loop_answer_as_the_thread_does(memory):
    async def all_at_once():
        return await asyncio.gather(*(search.afind(APP, USER, q, NOW) for q in QUERIES))

    for query, found in zip(QUERIES, run(all_at_once()), strict=True):
        assert answer(found) == answer(search.find(APP, USER, query, NOW))


def test_searches_of_loops_in_two_threads_answer_as_the_thread_does(memory, run_in_threads):
    answers = {}

    def loop_of_its_own(query):
        return lambda: answers.__setitem__(query, run(search.afind(APP, USER, query, NOW)))

    run_in_threads([loop_of_its_own("Zurich"), loop_of_its_own("allergy")])
    for query, found in answers.items():
        assert answer(found) == answer(search.find(APP, USER, query, NOW))


def test_a_connection_left_in_a_transaction_is_closed_not_kept():
    aio.close_idle()

    async def begin(conn):
        await conn.execute("BEGIN")
        return conn

    conn = run(aio.read(begin))
    assert conn.closed and aio.idle() == 0


def test_errors_are_djangos():
    async def bad(conn):
        await conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(ProgrammingError):
        run(aio.read(bad))
    assert aio.idle() == 1  # the connection is fine: kept


def test_the_connection_speaks_djangos_time_zone(monkeypatch):
    aio.close_idle()
    monkeypatch.setenv("PGTZ", "America/New_York")  # the session's zone before ours is set

    async def zone(conn):
        return conn.info.parameter_status("TimeZone")

    assert settings.TIME_ZONE != "America/New_York"
    assert run(aio.read(zone)) == settings.TIME_ZONE
    aio.close_idle()


def test_with_the_queue_full_the_note_runs_in_djangos_thread_not_on_the_loop(
    memory, settings, monkeypatch
):
    """When the background thread's queue is full the note (touch, history, counters)
    runs before the answer, in Django's thread: with Redis down its database writes
    land (on the loop they would be refused as synchronous database calls)."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # configured, and down
    touches.redis_client.cache_clear()
    monkeypatch.setattr(touches, "_redis_down_until", 0.0)  # restored after the test
    started, release = threading.Event(), threading.Event()

    def hold_the_thread():
        started.set()
        release.wait(30)

    later.submit(hold_the_thread)  # the background thread waits...
    assert started.wait(30)
    try:
        while later.try_submit(len, ""):  # ...behind a full queue
            pass
        run(
            EvictingMemoryService(clock=lambda: NOW).search_memory(
                app_name=APP, user_id=USER, query="Zurich"
            )
        )
        [logged] = SearchLog.objects.filter(app_name=APP)  # written before the answer
        assert logged.record_ids == [MemoryRecord.objects.get(content__startswith="We moved").id]
    finally:
        release.set()
        later.drain()
        touches.redis_client.cache_clear()


def test_without_the_touch_buffer_the_search_runs_in_djangos_thread(memory, settings):
    settings.REDIS_URL = ""
    touches.redis_client.cache_clear()
    try:
        assert not search.answers_in_loop()
        found = run(search.afind(APP, USER, "Zurich", NOW))
        assert answer(found) == answer(search.find(APP, USER, "Zurich", NOW))
    finally:
        touches.redis_client.cache_clear()


def test_the_loops_statements_count_in_the_database_metrics(memory):
    labels = {"alias": "default", "vendor": "postgresql"}

    def executed():
        return REGISTRY.get_sample_value("django_db_execute_total", labels) or 0

    before = executed()
    run(search.afind(APP, USER, "allergy", NOW))  # the ranked statement, then the ten by id
    assert executed() - before == 2


def test_a_search_on_a_connection_the_server_dropped_reads_again_on_a_new_one(memory, caplog):
    aio.close_idle()
    first = run(search.afind(APP, USER, "Zurich", NOW))
    [dropped] = aio._idle
    _terminate(dropped.info.backend_pid)  # a restart, an idle connection closed
    again = run(search.afind(APP, USER, "Zurich", NOW))
    assert answer(again) == answer(first) and len(again.records) == 1
    assert dropped.closed and aio._idle and aio._idle[0] is not dropped
    assert "read again on a new one" in caplog.text


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        assert cursor.fetchone() == (True,)


def test_a_read_cancelled_mid_statement_closes_its_connection_and_is_no_database_error():
    aio.close_idle()
    used = []
    errors = _error_samples()

    async def long_statement(conn):
        used.append(conn)
        with aio.statement():
            await conn.execute("SELECT pg_sleep(30)")

    async def cancelled():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(aio.read(long_statement), timeout=0.5)

    run(cancelled())
    [conn] = used
    assert conn.closed and aio.idle() == 0
    assert _error_samples() == errors  # the caller gave up: not an error of the database


def test_a_failed_loop_statement_counts_as_a_database_error_by_its_type():
    errors = _error_samples()

    async def failing(conn):
        with aio.statement():
            await conn.execute("SELECT 1 / 0")

    with pytest.raises(DataError):
        run(aio.read(failing))
    after = _error_samples()
    assert after.pop("DataError", 0) == errors.pop("DataError", 0) + 1
    assert after == errors


def _error_samples() -> dict[str, float]:
    """django_db_errors_total of the default database, by error type."""
    return {
        s.labels["type"]: s.value
        for metric in REGISTRY.collect()
        if metric.name == "django_db_errors"
        for s in metric.samples
        if s.name == "django_db_errors_total" and s.labels.get("alias") == "default"
    }
