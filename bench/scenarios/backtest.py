"""The backtest and the tuner end to end: ``users`` users × 500 records, ``days`` days.

The history is generated in PostgreSQL (bulk SQL, as ``bench.load`` writes records):

- each user's 500 live records (``bench.load``; ages up to 330 days), those written in
  the window fresh when written, as the services write them, so that every one is a
  write the replay enforces;
- ``searches_per_day`` logged searches per user, each returning up to 5 of the user's
  records written before it, with two term hashes from a small vocabulary (so the
  regret check has matches to find); the records' hits and last access then say what
  those searches did to them;
- ``evictions_per_user`` records evicted in the window by the record cap, each with its
  ``EvictionEvent`` and replay metadata (``EvictedRecord``).

The history is synthetic: it was not produced by the policy, so the exactness figure is
printed but not checked here (tests/backtest checks it on histories the services wrote).
Measured, each in a fresh process (``bench.subproc``) with its peak RSS (of the
parent, and of the largest child: ``workers`` > 1 reads and replays batches of users on
that many forked children): ``backtest``
(``backtest.service.run``: one candidate, the article preset, replayed for every user;
the policy that ran counted from the history, and replayed for the exactness check on
``service.CHECKED_USERS`` users)
and, unless the size says not, ``tune`` (``backtest.tune.tune``: the whole space, in two
rounds above ``tune.SAMPLE_USERS`` users).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.utils import timezone

from records import access_log
from records.models import EvictionEvent
from records.policies import update_policy

from .. import subproc
from ..harness import Row
from ..load import TABLE, UserSpec, load_records, reset_data, vacuum_analyze

APP = "bench-backtest"
NAME = "backtest"
RECORDS_PER_USER = 500
VOCABULARY = 60  # term hashes: small, so searches match evicted records


def _hash(expr: str, salt: str) -> str:
    """A uniform [0, 1) number from ``expr`` and ``salt`` (deterministic, no setseed)."""
    return f"(('x' || substr(md5({expr} || '{salt}'), 1, 8))::bit(32)::bigint / 4294967296.0)"


def generate_history(users: int, days: int, searches_per_day: int, evictions: int, now) -> dict:
    """Write the app's records and access history; returns how many rows of each."""
    start = now - timedelta(days=days)
    specs = [UserSpec(f"bt-{u:05d}", RECORDS_PER_USER) for u in range(users)]
    written = load_records(APP, specs, now, seed=43)
    searches = access_log.SearchLog._meta.db_table
    evicted = access_log.EvictedRecord._meta.db_table
    events = EvictionEvent._meta.db_table
    window = {"app": APP, "start": start, "days": days, "now": now}
    with connection.cursor() as cursor:
        # Written in the window through the services: fresh (the default policy's
        # fresh start is 0 half-lives), touched only by the logged searches below.
        cursor.execute(
            f"UPDATE {TABLE} SET hits = 0, last_accessed_at = created_at "
            "WHERE app_name = %(app)s AND created_at >= %(start)s",
            window,
        )
        cursor.execute("DROP TABLE IF EXISTS bench_bt_ids")
        cursor.execute(
            f"""
            CREATE TEMP TABLE bench_bt_ids AS
            SELECT user_id, id, created_at,
                   (row_number() OVER (PARTITION BY user_id ORDER BY id) - 1)::int AS pos
            FROM {TABLE} WHERE app_name = %(app)s
            """,
            window,
        )
        cursor.execute("CREATE INDEX ON bench_bt_ids (user_id, pos)")
        offset = f"{_hash('s.user_id || s.n', 't')} * %(days)s * 86400"
        at = f"%(start)s::timestamptz + make_interval(secs => {offset})"
        cursor.execute(
            f"""
            WITH s AS (
                SELECT u.user_id, n
                FROM (SELECT DISTINCT user_id FROM bench_bt_ids) u,
                     generate_series(1, %(per_user)s) AS n
            ), timed AS (
                SELECT s.user_id, s.n, {at} AS at FROM s
            )
            INSERT INTO {searches} (app_name, user_id, searched_at, record_ids, term_hashes)
            SELECT %(app)s, t.user_id, t.at,
                   coalesce((SELECT jsonb_agg(i.id ORDER BY k)
                             FROM generate_series(1, 5) AS k
                             JOIN bench_bt_ids i ON i.user_id = t.user_id
                              AND i.pos = floor({_hash("t.user_id || t.n || k", "p")}
                                                * {RECORDS_PER_USER})::int
                             WHERE i.created_at < t.at), '[]'::jsonb),
                   jsonb_build_array(
                       't' || floor({_hash("t.user_id || t.n", "a")} * {VOCABULARY})::int,
                       't' || floor({_hash("t.user_id || t.n", "b")} * {VOCABULARY})::int)
            FROM timed t
            """,
            {**window, "per_user": searches_per_day * days},
        )
        n_searches = cursor.rowcount
        # What those searches did to the records they returned.
        cursor.execute(
            f"""
            UPDATE {TABLE} r SET hits = r.hits + t.n,
                   last_accessed_at = greatest(r.last_accessed_at, t.last)
            FROM (SELECT e.rid::bigint AS rid, count(*) AS n, max(s.searched_at) AS last
                  FROM {searches} s, jsonb_array_elements_text(s.record_ids) AS e(rid)
                  WHERE s.app_name = %(app)s GROUP BY 1) t
            WHERE r.id = t.rid
            """,
            window,
        )
        cursor.execute(
            f"""
            CREATE TEMP TABLE bench_bt_evicted AS
            SELECT u.user_id, 1000000000000 + u.k * 100000 + g AS record_id,
                   %(start)s::timestamptz
                     + make_interval(secs => {_hash("u.user_id || g", "v")} * %(days)s * 86400)
                     AS evicted_at,
                   {_hash("u.user_id || g", "c")} AS h
            FROM (SELECT user_id, row_number() OVER (ORDER BY user_id) AS k
                  FROM (SELECT DISTINCT user_id FROM bench_bt_ids) d) u,
                 generate_series(1, %(per_user)s) AS g
            """,
            {**window, "per_user": evictions},
        )
        cursor.execute(
            f"""
            INSERT INTO {events} (record_id, app_name, user_id, reason, tokens, evicted_at,
                                  dedupe_key)
            SELECT record_id, %(app)s, user_id, 'record_cap', 30, evicted_at, ''
            FROM bench_bt_evicted
            """,
            window,
        )
        n_evicted = cursor.rowcount
        cursor.execute(
            f"""
            INSERT INTO {evicted} (record_id, app_name, user_id, evicted_at, created_at,
                                   last_accessed_at, hits, importance, pinned, slot,
                                   term_hashes)
            SELECT record_id, %(app)s, user_id, evicted_at,
                   evicted_at - make_interval(secs => h * 200 * 86400),
                   evicted_at - make_interval(secs => h * 200 * 86400), 0, h * 0.3, false, '',
                   jsonb_build_array('t' || floor(h * {VOCABULARY})::int,
                                     't' || floor(h * 7919 * {VOCABULARY})::int %% {VOCABULARY})
            FROM bench_bt_evicted
            """,
            window,
        )
        cursor.execute("DROP TABLE bench_bt_ids, bench_bt_evicted")
        for table in (searches, evicted, events):
            cursor.execute(f"ANALYZE {table}")
    vacuum_analyze()
    return {"records": written, "searches": n_searches, "evictions": n_evicted}


def run(report, size: dict, env: dict) -> None:
    reset_data()
    users, days = size["users"], size["days"]
    now = timezone.now()
    update_policy(APP, {"max_records": RECORDS_PER_USER})
    rows = generate_history(users, days, size["searches_per_day"], size["evictions"], now)
    report.check(
        NAME,
        f"generated {rows['records']:,} records, {rows['searches']:,} searches and "
        f"{rows['evictions']:,} evictions over {users:,} users",
        rows["records"] == users * RECORDS_PER_USER and rows["searches"] > 0,
    )
    workers = size.get("workers", 1)
    data = f"{users:,} users × {RECORDS_PER_USER} records, {days} days, {workers} process(es)"
    kinds = [("backtest", "< 60 s")] + ([("tune", "< 10 min")] if size.get("tune") else [])
    for kind, target in kinds:
        out = subproc.result(
            subproc.start(
                "backtest",
                {"app": APP, "days": days, "kind": kind, "workers": size.get("workers", 1)},
            ),
            timeout=6 * 3600,
        )
        report.check(
            NAME,
            f"{kind}: replayed every user",
            out["users"] == users,
            f"{out['users']} users; replay of the policy that ran exact: {out['exact']} "
            "(synthetic history)",
        )
        limit = 60 if kind == "backtest" else 600
        report.rows.append(
            Row(
                f"backtest: {kind} (wall)",
                data + (f"; {out['tried']} candidates" if kind == "tune" else ""),
                out["seconds"],
                unit="s",
                target=target,
                met=out["seconds"] < limit,
                note=f"peak RSS {out['peak_rss_mb']:.0f} MB",
            )
        )
        report.rows.append(
            Row(f"backtest: {kind} (peak RSS of the process)", data, out["peak_rss_mb"], unit="MB")
        )
        if out["child_rss_mb"]:
            report.rows.append(
                Row(
                    f"backtest: {kind} (peak RSS of the largest child)",
                    data,
                    out["child_rss_mb"],
                    unit="MB",
                )
            )
