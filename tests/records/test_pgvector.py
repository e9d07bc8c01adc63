"""The pgvector path (records.pgvector): PostgreSQL picks the candidates, and the ranking
is still exactly the Python scan's. These run where the database offers the vector
extension (CI starts one: .ci/pgvector-server); elsewhere, the tests of what happens
without it run instead."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records import embeddings, pgvector, vectors
from records.memory_service import add_memories
from records.models import MemoryRecord, RecordEmbedding

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
APP, USER = "garage", "u1"
DIMS = 16


@pytest.fixture
def with_pgvector():
    if connection.vendor != "postgresql" or not pgvector.available():
        pytest.skip("needs PostgreSQL with the vector extension (.ci/pgvector-server)")
    pgvector.forget()
    assert pgvector.enabled(), "migration 0022 adds the column where the extension exists"


def _records(count: int, user: str = USER) -> list[int]:
    entries = [
        MemoryEntry(
            content=types.Content(role="user", parts=[types.Part(text=f"note {i} of {user}")]),
            author="user",
            timestamp=(NOW - timedelta(minutes=count - i)).isoformat(),
        )
        for i in range(count)
    ]
    add_memories(APP, user, entries, NOW)
    return list(
        MemoryRecord.objects.filter(app_name=APP, user_id=user)
        .order_by("id")
        .values_list("id", flat=True)
    )


def _random_unit(rng: random.Random) -> vectors.array:
    return vectors.unit([rng.gauss(0, 1) for _ in range(DIMS)])


def _scan(query: vectors.array, limit: int, user: str = USER) -> list[int]:
    """The Python scan over every vector of the user: what the ranking must equal."""
    ids = MemoryRecord.objects.filter(app_name=APP, user_id=user).values("id")
    rows = RecordEmbedding.objects.filter(record__in=ids).values_list("record_id", "vector")
    return vectors.nearest(query, [(rid, bytes(data)) for rid, data in rows], limit)


def _live_sql(user: str = USER):
    return MemoryRecord.objects.filter(app_name=APP, user_id=user).values("id").query


def test_the_ranking_is_the_python_scans_and_postgres_picks_the_candidates(with_pgvector):
    rng = random.Random(7)
    ids = _records(300)
    # Some vectors stored twice over: ties, broken by the higher id on both paths.
    stored = [_random_unit(rng) for _ in range(200)]
    stored += [stored[i] for i in range(100)]
    assert embeddings._store(list(zip(ids, stored, strict=True))) == 300
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM records_recordembedding WHERE pgvector IS NULL")
        assert cursor.fetchone() == (0,)
    statements = []
    for _ in range(25):
        query = _random_unit(rng)
        for limit in (1, 10, 50):
            expected = _scan(query, limit)
            assert embeddings.nearest(APP, USER, query, NOW, limit) == expected
            with CaptureQueriesContext(connection) as ran:
                assert pgvector.nearest(*_live_sql().sql_with_params(), query, limit) == expected
            statements.append(len(ran))
    # The candidates were enough nearly every time: random vectors rarely tie at the cut.
    assert set(statements) <= {1, 2}
    assert statements.count(1) >= 70, statements  # all 75 when written


def _dimension_check_last() -> None:
    """Make ``dims = %s`` the costliest condition, so that PostgreSQL evaluates it after
    the distance (it orders a scan's conditions by cost): pgvector then meets vectors of
    another dimension unless the statement guards the distance itself. Rolled back with
    the test's transaction; needs a superuser (the CI's pgvector server is run as one)."""
    with connection.cursor() as cursor:
        for equality in ("int2eq(int2, int2)", "int24eq(int2, int4)", "int28eq(int2, int8)"):
            cursor.execute(f"ALTER FUNCTION {equality} COST 100000")


@pytest.mark.parametrize("dimension_check_last", [False, True])
def test_a_tie_across_the_cut_reads_every_vector_that_ties(with_pgvector, dimension_check_last):
    if dimension_check_last:
        _dimension_check_last()
    rng = random.Random(9)
    ids = _records(170)
    same = vectors.unit([1.0] * DIMS)
    others = [_random_unit(rng) for _ in range(30)]
    # 120 equal vectors (ids in no particular order), 30 others, none of them as near,
    # and 20 of another model's dimension (pgvector refuses to compare those).
    tied = rng.sample(ids[:150], 120)
    rest = [rid for rid in ids[:150] if rid not in tied]
    longer = [(rid, vectors.unit([1.0] * (DIMS + 1))) for rid in ids[150:]]
    embeddings._store([(rid, same) for rid in tied] + list(zip(rest, others, strict=True)) + longer)
    query = same
    # The 40 candidates PostgreSQL returns for 20 results cannot prove the top 20 (the
    # ties are ordered by id, which PostgreSQL's order ignores): a second statement
    # reads those that could reach the cut.
    with CaptureQueriesContext(connection) as ran:
        found = pgvector.nearest(*_live_sql().sql_with_params(), query, 20)
    assert found == sorted(tied, reverse=True)[:20] == _scan(query, 20)
    assert len(ran) == 2


def test_only_the_users_live_vectors_of_the_querys_dimension_are_ranked(with_pgvector):
    rng = random.Random(3)
    mine = _records(30)
    theirs = _records(30, user="u2")
    embeddings._store([(rid, _random_unit(rng)) for rid in mine + theirs])
    query = _random_unit(rng)
    found = embeddings.nearest(APP, USER, query, NOW, 50)
    assert sorted(found) == mine
    other_dims = vectors.unit([1.0] * (DIMS + 1))
    assert embeddings.nearest(APP, USER, other_dims, NOW, 50) == []


def test_vectors_without_the_column_value_are_still_ranked_and_get_filled(with_pgvector):
    rng = random.Random(5)
    ids = _records(250)
    stored = [_random_unit(rng) for _ in ids]
    embeddings._store(list(zip(ids, stored, strict=True)))
    # As if written by a process started before the column existed.
    old = ids[::3]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE records_recordembedding SET pgvector = NULL WHERE record_id = ANY(%s)",
            [old],
        )
    for _ in range(10):
        query = _random_unit(rng)
        assert embeddings.nearest(APP, USER, query, NOW, 20) == _scan(query, 20)
    # The best match of all is one without the column value: still first.
    assert embeddings.nearest(APP, USER, stored[3], NOW, 1) == [ids[3]]
    assert pgvector.fill_missing(batch=7) == len(old)
    assert pgvector.fill_missing() == 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM records_recordembedding WHERE record_id = ANY(%s)"
            " AND pgvector = %s::real[]::vector",
            [[ids[3]], stored[3].tolist()],
        )
        assert cursor.fetchone() == (1,)


def test_the_command_reports_the_path_in_use(with_pgvector, capsys):
    call_command("pgvector", "--enable")
    assert "pgvector: on" in capsys.readouterr().out


def test_without_the_extension_nothing_changes(capsys):
    if connection.vendor == "postgresql" and pgvector.available():
        pytest.skip("this PostgreSQL has the vector extension")
    pgvector.forget()
    assert not pgvector.enabled()
    assert not pgvector.enable()
    ids = _records(5)
    query = vectors.unit([1.0] * DIMS)
    embeddings._store([(rid, query) for rid in ids])
    assert embeddings.nearest(APP, USER, query, NOW, 3) == sorted(ids, reverse=True)[:3]
    if connection.vendor == "postgresql":
        call_command("pgvector")
        assert "pgvector: off" in capsys.readouterr().out
        with pytest.raises(CommandError, match="no vector extension"):
            call_command("pgvector", "--enable")
    else:
        with pytest.raises(CommandError, match="pgvector is for PostgreSQL"):
            call_command("pgvector")


def test_the_error_bound_covers_a_float32_sum(with_pgvector):
    """pgvector's score of stored vectors lies within error_bound of the exact one."""
    rng = random.Random(11)
    dims = 1024
    ids = _records(40)
    stored = [vectors.unit([rng.gauss(0, 1) for _ in range(dims)]) for _ in ids]
    embeddings._store(list(zip(ids, stored, strict=True)))
    query = vectors.unit([rng.gauss(0, 1) for _ in range(dims)])
    exact = dict(
        vectors.ranked(
            query, [(rid, vectors.to_bytes(v)) for rid, v in zip(ids, stored, strict=True)]
        )
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT record_id, -(pgvector <#> %s::real[]::vector) FROM records_recordembedding"
            " WHERE record_id = ANY(%s)",
            [query.tolist(), ids],
        )
        rows = cursor.fetchall()
    assert len(rows) == len(ids)
    bound = pgvector.error_bound(dims)
    assert all(abs(score - exact[rid]) <= bound for rid, score in rows)
    assert any(score != exact[rid] for rid, score in rows)  # float32 does differ
