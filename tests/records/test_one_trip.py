"""Several statements in one query string (PostgreSQL with client-side binding)."""

import pytest
from django.db import connection

from records import one_trip

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
