"""PostgreSQL: the server-side function that selects one user's victims returns exactly
the rows of the statement it is made from (``records.victims_function``)."""

import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from records import victims_function
from records.policy import PolicyParams
from records.victims import victims_query

from .test_victims import NOW, random_records

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _rows(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@pytest.mark.parametrize("seed", range(8))
def test_the_function_returns_the_statements_rows_on_random_data(seed):
    rng = random.Random(seed)
    params = PolicyParams(
        ttl=timedelta(days=rng.choice([30, 365])),
        half_life=timedelta(hours=rng.choice([24, 720])),
        max_records=rng.choice([1, 10, 50]),
        max_tokens=rng.choice([50, 1000, 40_000]),
        w_recency=0.4,
        w_frequency=0.2,
        w_importance=0.4,
        fresh_start=rng.choice([0.0, 1.0]),
        past_due_half_life=timedelta(hours=rng.choice([0, 24, 336])),
        supersede=rng.random() < 0.7,
    )
    users = [f"u{i}" for i in range(3)]
    for user in users:
        random_records(rng, "app", user, rng.randint(0, 120))
    random_records(rng, "other-app", "u0", 30)
    assert victims_function.ensure()
    for user in ["nobody", *users]:
        call, values = victims_function.one_user_query("app", user, NOW, params)
        assert "memadmin_victims_" in call
        literal, literal_values = victims_query("app", [user], NOW, params)
        # Same rows, same order, same values (the function's last two columns are the
        # statement's own ordering columns).
        assert _rows(call, values) == _rows(literal, literal_values)


def test_inside_a_transaction_a_new_connection_keeps_the_literal_statement():
    connection.close()
    with transaction.atomic():
        assert not victims_function.ensure()
        sql, _ = victims_function.one_user_query("app", "u", NOW, PolicyParams())
    assert "memadmin_victims_" not in sql
    assert victims_function.ensure()  # outside: created or found, and used from now on
    sql, _ = victims_function.one_user_query("app", "u", NOW, PolicyParams())
    assert "memadmin_victims_" in sql


def test_an_ingest_outside_a_transaction_selects_through_the_function():
    from records import store
    from records.extract import Candidate

    connection.close()
    candidates = [
        Candidate(
            dedupe_key=f"k{i}",
            session_id="s",
            event_ids=(f"e{i}",),
            content=f"my order number is {i}",
            author="user",
            entry_timestamp=NOW,
            importance=0.5,
            importance_source="default",
            importance_rule="",
            category="fact",
            pinned=False,
            tokens=5,
        )
        for i in range(3)
    ]
    with CaptureQueriesContext(connection) as queries:
        result = store.ingest("app", "u", candidates, NOW)
    assert result.added == 3
    assert any("memadmin_victims_" in q["sql"] for q in queries.captured_queries)
