"""Several statements in one query string (PostgreSQL with client-side binding)."""

import weakref

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from records import aio, one_trip

from ..asyncutil import run

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_each_statement_gives_its_own_rows_in_order():
    with connection.cursor() as cursor:
        results = one_trip.execute(
            cursor,
            [
                "SET LOCAL cpu_operator_cost = 0.25",
                "SELECT %(a)s::int, %(b)s::text",
                "SELECT 1 WHERE false",
                "SELECT current_setting('cpu_operator_cost')",
            ],
            {"a": 7, "b": "x"},
        )
    assert results == [[], [(7, "x")], [], [("0.25",)]]


def test_positional_parameters_follow_the_statements_in_order():
    with connection.cursor() as cursor:
        results = one_trip.execute(cursor, ["SELECT %s::int", "SELECT %s::int + 1"], [1, 2])
    assert results == [[(1,)], [(3,)]]


def test_a_statement_hiding_another_is_an_error_not_a_shifted_result():
    with connection.cursor() as cursor, pytest.raises(RuntimeError, match="2 statements gave 3"):
        one_trip.execute(cursor, ["SELECT 1; SELECT 2", "SELECT 3"], [])


def prepared_names() -> set[str]:
    """The connection's prepared statements (they outlive each test's transaction)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'memadmin_%%'")
        return {name for (name,) in cursor.fetchall()}


def test_a_prepared_statement_is_prepared_once_and_answers_like_the_plain_one():
    sql = "SELECT %s::int + 1, %s || '%%', %s = ANY(%s), %s > now() - interval '1 day'"
    params = [1, "a", "x", ["x", "y"], timezone.now()]
    plain = one_trip.execute(connection.cursor(), [sql], params)[0]
    known = prepared_names()
    before = ["SET LOCAL plan_cache_mode = force_generic_plan"]
    first = one_trip.execute_prepared(connection.cursor(), before, sql, [], params)
    assert len(prepared_names() - known) == 1
    with CaptureQueriesContext(connection) as queries:
        again = one_trip.execute_prepared(
            connection.cursor(), before, sql, [], [2, "b", "z", [], params[4]]
        )
    assert first == plain == [(2, "a%", True, True)]
    assert again == [(3, "b%", False, True)]
    [query] = queries
    assert "PREPARE" not in query["sql"] and "EXECUTE" in query["sql"]
    assert len(prepared_names() - known) == 1


def test_parameters_of_another_type_are_another_prepared_statement():
    known = prepared_names()
    with connection.cursor() as cursor:
        assert one_trip.execute_prepared(cursor, [], "SELECT %s", [], [1]) == [(1,)]
        assert one_trip.execute_prepared(cursor, [], "SELECT %s", [], ["1"]) == [("1",)]
        assert one_trip.execute_prepared(cursor, [], "SELECT %s", [], [2**40]) == [(2**40,)]
        assert one_trip.execute_prepared(cursor, [], "SELECT %s", [], [3]) == [(3,)]
    assert len(prepared_names() - known) == 3
    with pytest.raises(TypeError, match="dict parameter"):
        one_trip.execute_prepared(connection.cursor(), [], "SELECT %s", [], [{}])


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_forgot_its_statements_stops_preparing(monkeypatch, caplog):
    monkeypatch.setattr(one_trip, "_preparing", True)  # restored for the other tests
    with connection.cursor() as cursor:
        assert one_trip.execute_prepared(cursor, [], "SELECT %s::int", [], [5]) == [(5,)]
        cursor.execute("DEALLOCATE ALL")  # as a pooler in transaction mode would look
        assert one_trip.execute_prepared(cursor, [], "SELECT %s::int", [], [6]) == [(6,)]
        assert "prepared statements off" in caplog.text
        assert one_trip.execute_prepared(cursor, [], "SELECT %s::int", [], [7]) == [(7,)]
    assert prepared_names() == set()  # the plain statement since


@pytest.mark.django_db(transaction=True)
def test_a_statement_already_prepared_by_another_client_stops_preparing(monkeypatch):
    monkeypatch.setattr(one_trip, "_preparing", True)
    with connection.cursor() as cursor:
        assert one_trip.execute_prepared(cursor, [], "SELECT %s::int", [], [5]) == [(5,)]
        monkeypatch.setattr(one_trip, "_prepared", weakref.WeakKeyDictionary())  # a new client
        assert one_trip.execute_prepared(cursor, [], "SELECT %s::int", [], [6]) == [(6,)]
    assert not one_trip._preparing


async def _loop_prepared(params_list, *, forget_after_first=False):
    """Run ``SELECT %s::int`` prepared on a connection of records.aio for each parameter;
    the rows and the connection's prepared statements after."""

    async def work(conn):
        rows = []
        async with conn.cursor() as cursor:
            for i, value in enumerate(params_list):
                rows.append(
                    await one_trip.aexecute_prepared(cursor, [], "SELECT %s::int", [], [value])
                )
                if forget_after_first and i == 0:
                    await cursor.execute("DEALLOCATE ALL")  # as a pooler in transaction mode
            await cursor.execute("SELECT name FROM pg_prepared_statements")
            return rows, {name for (name,) in await cursor.fetchall()}

    aio.close_idle()  # a new connection: nothing prepared on it yet
    return await aio.read(work)


@pytest.mark.django_db(transaction=True)
def test_the_event_loops_connection_prepares_once_too(monkeypatch):
    monkeypatch.setattr(one_trip, "_preparing", True)
    rows, names = run(_loop_prepared([1, 2, 3]))
    assert rows == [[(1,)], [(2,)], [(3,)]]
    assert len(names) == 1 and names.pop().startswith("memadmin_")


@pytest.mark.django_db(transaction=True)
def test_the_event_loops_connection_stops_preparing_when_forgotten(monkeypatch, caplog):
    monkeypatch.setattr(one_trip, "_preparing", True)
    rows, names = run(_loop_prepared([5, 6, 7], forget_after_first=True))
    assert rows == [[(5,)], [(6,)], [(7,)]]
    assert "prepared statements off" in caplog.text and not one_trip._preparing
    assert names == set()
