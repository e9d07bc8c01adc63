"""The agent's search on the event loop's own connection (records.aio): the same answers
as the search in Django's thread, on a connection of the loop's own."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from prometheus_client import REGISTRY

from records import aio, feedback, search, touches
from records.memory_service import EvictingMemoryService, to_memory_entry

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


def test_the_statement_runs_prepared_on_the_loops_connection(memory):
    async def search_then_look():
        await search.afind(APP, USER, "Zurich", NOW)
        conn = await aio.connection()
        cursor = await conn.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in await cursor.fetchall()}

    assert any(name.startswith("memadmin_") for name in run(search_then_look()))


def test_the_agents_search_memory_answers_from_the_loop(memory):
    response = run(
        EvictingMemoryService(clock=lambda: NOW).search_memory(
            app_name=APP, user_id=USER, query="Zurich"
        )
    )
    [entry] = response.memories
    assert entry.content.parts[0].text == "We moved to Zürich last spring"


def test_a_loop_keeps_its_connection_and_replaces_a_closed_one():
    async def connections_of_one_loop():
        first = await aio.connection()
        again = await aio.connection()
        await first.close()
        replaced = await aio.connection()
        return first, again, replaced

    first, again, replaced = run(connections_of_one_loop())
    assert first is again and replaced is not first
    other = run(aio.connection())  # another loop, another connection
    assert other is not replaced and other.closed  # run() closed it with its loop


def test_two_tasks_opening_at_once_share_one_connection():
    async def both():
        return await asyncio.gather(aio.connection(), aio.connection())

    first, second = run(both())
    assert first is second


def test_the_connection_speaks_djangos_time_zone():
    async def zone():
        conn = await aio.connection()
        return conn.info.parameter_status("TimeZone")

    assert run(zone()) == settings.TIME_ZONE


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
    async def search_across_a_dropped_connection():
        first = await search.afind(APP, USER, "Zurich", NOW)
        conn = await aio.connection()
        await sync_to_async(_terminate)(conn.info.backend_pid)  # a restart, an idle cut
        again = await search.afind(APP, USER, "Zurich", NOW)
        return first, again, conn, await aio.connection()

    first, again, dropped, now_used = run(search_across_a_dropped_connection())
    assert answer(again) == answer(first) and len(again.records) == 1
    assert dropped.broken and now_used is not dropped
    assert "read again on a new one" in caplog.text


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        assert cursor.fetchone() == (True,)
