"""Scenario 3, the full enforcement pass: wall time and peak memory against a table scan.

The data: ``records`` records over ``users`` users of one app with the default policy
(cap 500 records, 40,000 tokens). That is 500 records per user on average, so the
users hug the cap, as they do in a store that has been enforced for a while: 10% of
users are over the record cap by 1–40 records (they wrote since the last pass), the
rest sit just under it, and 5% of users hold 1–5 records past the 365-day TTL.

Ours: the real pass (``sweeper.tasks.run_inline``: a Run row, planning with
``sweeper.enforce.users_needing_work``, one ``store.enforce_many`` per batch of 200
users, eviction events), in a fresh subprocess whose peak RSS is read with
``getrusage``. The floor: ``SELECT count(*)`` over the records table as a sequential
scan (index scans off), best of three after a warm-up, in the same run.
"""

from __future__ import annotations

import random
import time

import psycopg
from django.db import connection
from django.utils import timezone

from records.policies import policy_for
from records.victims import count_victims

from .. import subproc
from ..harness import Row
from ..load import TABLE, UserSpec, load_records, reset_data, vacuum_analyze

APP = "bench-pass"
NAME = "enforce_pass"


def user_specs(users: int, records: int, cap: int, seed: int = 7) -> list[UserSpec]:
    rng = random.Random(seed)
    over = set(rng.sample(range(users), users // 10))
    with_expired = set(rng.sample(range(users), users // 20))
    counts = {u: cap + rng.randint(1, 40) for u in over}
    under = [u for u in range(users) if u not in over]
    base, extra = divmod(records - sum(counts.values()), len(under))
    for i, u in enumerate(under):
        counts[u] = min(cap, base + (1 if i < extra else 0))
    return [
        UserSpec(f"pass-{u:05d}", counts[u], expired=rng.randint(1, 5) if u in with_expired else 0)
        for u in range(users)
    ]


def floor_seconds(repeat: int = 3) -> float:
    """One sequential scan of the records table, as ``SELECT count(*)``: best of ``repeat``."""
    s = connection.settings_dict
    conninfo = f"host={s['HOST'] or '127.0.0.1'} port={s['PORT'] or 5432} dbname={s['NAME']}"
    conninfo += f" user={s['USER']}" + (f" password={s['PASSWORD']}" if s["PASSWORD"] else "")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for setting in ("enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan"):
            conn.execute(f"SET {setting} = off")
        conn.execute(f"SELECT count(*) FROM {TABLE}")  # warm the cache as the pass finds it
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
            best = min(best, time.perf_counter() - start)
    return best


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    policy = policy_for(APP)
    params = policy.params()
    specs = user_specs(size["users"], size["records"], params.max_records)
    written = load_records(APP, specs, now, seed=31)
    vacuum_analyze()
    expected = count_victims(APP, None, now, params)
    over = sum(1 for s in specs if s.records - s.expired > params.max_records)
    expired_users = sum(1 for s in specs if s.expired)
    floor = floor_seconds()

    proc = subproc.start("enforce_pass", {})
    out = subproc.result(proc)
    after = count_victims(APP, None, timezone.now(), params)
    evicted = out["stats"].get("records_evicted", 0)
    report.check(
        NAME, f"loaded {written:,} records over {len(specs):,} users", written == size["records"]
    )
    report.check(
        NAME,
        f"the pass evicted exactly the {expected.records:,} victims counted beforehand "
        f"({expected.by_reason}) from {over} users over the cap and {expired_users} with "
        "expired records",
        out["status"] == "done" and evicted == expected.records,
        f"status {out['status']}, evicted {evicted:,}",
    )
    report.check(
        NAME, "nothing left to evict after the pass", after.records == 0, f"{after.records} left"
    )
    label = f"{written:,} records / {len(specs):,} users"
    report.rows.append(
        Row(
            "enforcement pass (wall)",
            label,
            out["seconds"],
            unit="s",
            base=floor,
            baseline="SELECT count(*) seq scan (floor)",
            target="≤ 5× the floor",
            met=out["seconds"] <= 5 * floor,
        )
    )
    report.rows.append(
        Row(
            "enforcement pass (peak RSS)",
            label,
            out["peak_rss_mb"],
            unit="MB",
            baseline="",
            target="< 300 MB",
            met=out["peak_rss_mb"] < 300,
            note=f"RSS after Django setup {out['rss_before_mb']:.0f} MB",
        )
    )
