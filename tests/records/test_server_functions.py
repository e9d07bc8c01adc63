"""PostgreSQL: the server-side functions of an ingest's statements do exactly what the
statements they are made from do (``records.server_functions``)."""

import os
import random
import subprocess
import sys
import threading
import time
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from records import server_functions, store
from records.models import EvictedRecord, EvictionEvent, MemoryRecord, RegretTerm
from records.policy import PolicyParams
from records.victims import one_user_victims_query, select_victims, victims_query

from .test_victims import NOW, random_records, random_world

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def _rows(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@pytest.mark.parametrize("seed", range(8))
def test_the_function_returns_the_statements_rows_on_random_data(seed):
    rng = random.Random(seed)
    params, users = random_world(rng)
    assert server_functions.ensure()
    for user in ["nobody", *users]:
        call, values = one_user_victims_query("app", user, NOW, params)
        assert "memadmin_victims_" in call
        literal, literal_values = victims_query("app", [user], NOW, params)
        # Same rows, same order, same values (the function's last two columns are the
        # statement's own ordering columns).
        assert _rows(call, values) == _rows(literal, literal_values)


def test_inside_a_transaction_a_new_connection_keeps_the_literal_statement():
    connection.close()
    with transaction.atomic():
        assert not server_functions.ensure()
        sql, _ = one_user_victims_query("app", "u", NOW, PolicyParams())
    assert "memadmin_victims_" not in sql
    assert server_functions.ensure()  # outside: created or found, and used from now on
    sql, _ = one_user_victims_query("app", "u", NOW, PolicyParams())
    assert "memadmin_victims_" in sql


@pytest.mark.parametrize("isolation", ["read committed", "repeatable read"])
def test_two_connections_making_a_function_at_once_both_use_it(monkeypatch, isolation):
    """Two processes' first ingests at once: the one that waited for the other's lock
    sees the function the other made (it once failed as a duplicate and fell back),
    whatever isolation the connections default to."""
    key = f"race{uuid.uuid4().hex[:8]}"  # a function no database has yet
    monkeypatch.setitem(
        server_functions._STATEMENTS,
        key,
        server_functions.Statement(
            key=key, build=lambda: ("SELECT %(n)s::int + 1 AS x", {"n": 1}), types={"n": "int"}
        ),
    )
    lock = server_functions._CREATE_LOCK
    outcome, pids, connected = {}, [], threading.Barrier(3, timeout=60)

    def first_ingest(tag):
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"SET default_transaction_isolation TO '{isolation}'")
            pids.append(connection.connection.info.backend_pid)
            connected.wait()
            outcome[tag] = (server_functions.ensure(), server_functions.call(key))
        except Exception as exc:  # reported by the assertions below, not lost in the thread
            outcome[tag] = exc
        finally:
            connections.close_all()

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock])  # both find it missing, then wait
    threads = [threading.Thread(target=first_ingest, args=(t,)) for t in "ab"]
    try:
        for t in threads:
            t.start()
        connected.wait()
        for _ in range(600):  # bounded: until both wait for the creators' lock
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    " AND objid = %s AND pid = ANY(%s)",
                    [lock, pids],
                )
                if cursor.fetchone()[0] == 2:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("the two connections never both waited for the lock")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])
        for t in threads:
            t.join(timeout=60)
    try:
        assert outcome["a"][0] and outcome["b"][0], outcome
        assert outcome["a"][1] == outcome["b"][1]
        assert f"memadmin_{key}_" in outcome["a"][1]
        assert _rows(outcome["a"][1], {"n": 41}) == [(42,)]
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT p.oid::regprocedure::text FROM pg_proc AS p WHERE proname LIKE %s",
                [f"memadmin_{key}_%"],
            )
            for (signature,) in cursor.fetchall():
                cursor.execute(f"DROP FUNCTION {signature}")


def test_a_schema_whose_name_needs_quotes_keeps_its_functions():
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute('CREATE SCHEMA "MemAdmin Fns"')
        cursor.execute('SET search_path TO "MemAdmin Fns", public')
    try:
        assert server_functions.ensure()  # made there (the first schema of the path)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_proc AS p JOIN pg_namespace AS n"
                " ON n.oid = p.pronamespace WHERE n.nspname = 'MemAdmin Fns'"
            )
            assert cursor.fetchone()[0] == len(server_functions._STATEMENTS)
        assert server_functions.unused() == []
        sql, _ = one_user_victims_query("app", "u", NOW, PolicyParams())
        assert "memadmin_victims_" in sql
    finally:
        with connection.cursor() as cursor:
            cursor.execute('DROP SCHEMA "MemAdmin Fns" CASCADE')
        connection.close()


def test_an_ingest_outside_a_transaction_selects_through_the_function():
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
    sqls = [q["sql"] for q in queries.captured_queries]
    assert any("memadmin_victims_" in sql for sql in sqls)


def _evict_all_over(user, params, functions: bool):
    raw = connection.connection
    saved = server_functions._ready.pop(raw, None)
    if functions:
        assert server_functions.ensure()
    else:
        server_functions._ready[raw] = {}
    try:
        with transaction.atomic():
            victims = select_victims("app", [user], NOW, params)
            sql = server_functions.call("evict")
            assert (sql is not None) == functions
            deleted = store.evict("app", victims, NOW, policy_version=3, run_id=None)
    finally:
        server_functions._ready.pop(raw, None)
        if saved is not None:
            server_functions._ready[raw] = saved
    return len(victims), deleted


def _written(user):
    events = EvictionEvent.objects.filter(user_id=user).order_by("record_id")
    replay = EvictedRecord.objects.filter(user_id=user).order_by("record_id")
    terms = RegretTerm.objects.filter(user_id=user).order_by("record_id", "term_hash")
    return (
        [
            (e.reason, e.recency, e.frequency, e.importance, e.score, e.tokens, e.policy_version)
            for e in events
        ],
        [(r.hits, r.importance, r.pinned, r.slot, r.information, r.informed) for r in replay],
        [t.term_hash for t in terms],
    )


def test_the_eviction_function_writes_what_the_statement_writes():
    connection.ensure_connection()
    params = PolicyParams(max_records=5, max_tokens=40_000, supersede=True)
    for user in ("a", "b"):
        random_records(random.Random(7), "app", user, 60)
        MemoryRecord.objects.filter(user_id=user).update(content="my new phone number is 555 0100")
    selected, deleted = _evict_all_over("a", params, functions=True)
    assert deleted == selected > 0
    n_a = MemoryRecord.objects.filter(user_id="a").count()
    _evict_all_over("b", params, functions=False)
    assert MemoryRecord.objects.filter(user_id="b").count() == n_a
    assert _written("a") == _written("b")
    assert _written("a")[0]  # something was evicted


def _functions(pattern: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT oid::regprocedure::text FROM pg_proc WHERE proname LIKE %s ORDER BY 1",
            [pattern],
        )
        return [signature for (signature,) in cursor.fetchall()]


def test_functions_of_an_earlier_version_are_listed_then_dropped_and_ingest_goes_on():
    assert server_functions.ensure()
    current = _functions("memadmin\\_victims\\_%") + _functions("memadmin\\_evict\\_%")
    with connection.cursor() as cursor:
        # An earlier version's selection (another digest), and two names that are not
        # a statement's function: neither may be touched.
        cursor.execute(
            "CREATE FUNCTION memadmin_victims_0123456789abcdef(text) RETURNS int"
            " LANGUAGE sql AS 'SELECT 1'"
        )
        cursor.execute(
            "CREATE FUNCTION memadmin_victims_helper(text) RETURNS int LANGUAGE sql AS 'SELECT 2'"
        )
    try:
        assert server_functions.unused() == ["memadmin_victims_0123456789abcdef(text)"]
        out = StringIO()
        call_command("server_functions", stdout=out)
        assert "memadmin_victims_0123456789abcdef(text)" in out.getvalue()
        assert _functions("memadmin\\_victims\\_0123456789abcdef")  # listing drops nothing

        out = StringIO()
        call_command("server_functions", "--drop", stdout=out)
        assert "1 function(s) dropped" in out.getvalue()
        assert not _functions("memadmin\\_victims\\_0123456789abcdef")
        assert _functions("memadmin\\_victims\\_helper")
        assert _functions("memadmin\\_stats\\_insert")  # the triggers' functions stay
        after = _functions("memadmin\\_victims\\_%") + _functions("memadmin\\_evict\\_%")
        assert sorted(after) == sorted([*current, "memadmin_victims_helper(text)"])
        assert server_functions.unused() == []
        connection.close()  # a new connection: finds this version's functions, calls them
        test_an_ingest_outside_a_transaction_selects_through_the_function()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP FUNCTION IF EXISTS memadmin_victims_0123456789abcdef(text)")
            cursor.execute("DROP FUNCTION IF EXISTS memadmin_victims_helper(text)")


def test_the_command_knows_every_statement_in_a_fresh_process_with_checks_skipped():
    """The eviction's statement registers where records.store is imported: the command
    must see it without the system checks (which import the URLs, and so the store)."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    url = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION memadmin_evict_0123456789abcdef(jsonb) RETURNS int"
            " LANGUAGE sql AS 'SELECT 1'"
        )
    try:
        proc = subprocess.run(
            [sys.executable, "manage.py", "server_functions", "--skip-checks"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "memadmin_evict_0123456789abcdef(jsonb)" in proc.stdout
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP FUNCTION IF EXISTS memadmin_evict_0123456789abcdef(jsonb)")


@pytest.mark.parametrize("key", ["x" * 38, "Victims", "two words"])
def test_a_statement_key_postgresql_would_cut_or_quote_is_refused(key):
    with pytest.raises(ValueError, match="at most 37"):
        server_functions.register(
            server_functions.Statement(key=key, build=lambda: ("SELECT 1", {}), types={})
        )
    assert key not in server_functions._STATEMENTS
