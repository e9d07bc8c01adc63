"""Scenario 3, the full enforcement pass: wall time and peak memory against a table scan.

The data: ``records`` records over ``users`` users of one app, 500 per user on average,
so users hug the 500-record cap as in a store that has been enforced for a while.
Ingest enforces the policy on every write, so an hourly pass normally finds only
records that expired since the last one and the few users over a cap for another
reason (a plan applied without enforcement, an unpin). Two passes run on the data:

1. **hourly**: the app's cap is 540 records; 1% of users are over it by 1–20 records,
   and 5% of users hold 1–5 records past the 365-day TTL;
2. **after a cap cut**: ops lower the cap to 500, which puts 10% of users over it by
   1–40 records (the stress case: thousands of victims, their eviction events and
   regret hashes written in the pass).

Ours: the real pass (``sweeper.tasks.run_inline``: a Run row, planning with
``sweeper.enforce.users_needing_work``, one ``store.enforce_many`` per batch of 200
users), each in a fresh subprocess whose peak RSS is read with ``getrusage``. The floor:
``SELECT count(*)`` over the records table as one sequential scan (one process, index
and parallel scans off), best of three after a warm-up, in the same run.
"""

from __future__ import annotations

import random
import time

import psycopg
from django.db import connection
from django.utils import timezone

from records.policies import update_policy
from records.victims import count_victims

from .. import subproc
from ..harness import Row
from ..load import TABLE, UserSpec, load_records, reset_data, vacuum_analyze

APP = "bench-pass"
NAME = "enforce_pass"


def user_specs(users: int, records: int, cap: int, seed: int = 7) -> list[UserSpec]:
    """10% of users over ``cap`` (1% of all by 41–60, the rest by 1–40), 5% with expired."""
    rng = random.Random(seed)
    over = rng.sample(range(users), users // 10)
    far = set(over[: users // 100])
    with_expired = set(rng.sample(range(users), users // 20))
    counts = {u: cap + (rng.randint(41, 60) if u in far else rng.randint(1, 40)) for u in over}
    under = [u for u in range(users) if u not in counts]
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
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute(f"SELECT count(*) FROM {TABLE}")  # warm the cache as the pass finds it
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
            best = min(best, time.perf_counter() - start)
    return best


def _pass(report, label: str, params, now) -> dict:
    expected = count_victims(APP, None, now, params)
    out = subproc.result(subproc.start("enforce_pass", {}))
    after = count_victims(APP, None, timezone.now(), params)
    evicted = out["stats"].get("records_evicted", 0)
    report.check(
        NAME,
        f"{label}: the pass evicted exactly the {expected.records:,} victims counted "
        f"beforehand {expected.by_reason} of {expected.users} users",
        out["status"] == "done" and evicted == expected.records,
        f"status {out['status']}, evicted {evicted:,}",
    )
    report.check(
        NAME, f"{label}: nothing left to evict", after.records == 0, f"{after.records} left"
    )
    out["users"] = expected.users
    return out


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    specs = user_specs(size["users"], size["records"], cap=500)
    written = load_records(APP, specs, now, seed=31)
    vacuum_analyze()
    report.check(
        NAME, f"loaded {written:,} records over {len(specs):,} users", written == size["records"]
    )
    floor = floor_seconds()
    data = f"{written:,} records / {len(specs):,} users"
    shapes = (
        ("hourly", 540, "1% over the cap, 5% with expired records", "≤ 5× the floor"),
        ("after a cap cut", 500, "cap 540 → 500: 10% over it", ""),
    )
    peak = 0.0
    for label, cap, shape, target in shapes:
        params = update_policy(APP, {"max_records": cap}).params()
        out = _pass(report, label, params, timezone.now())
        peak = max(peak, out["peak_rss_mb"])
        report.rows.append(
            Row(
                f"enforcement pass, {label} (wall)",
                f"{data}; {shape} ({out['users']} users enforced)",
                out["seconds"],
                unit="s",
                base=floor,
                baseline="one sequential scan, count(*) (floor)",
                target=target,
                met=out["seconds"] <= 5 * floor if target else None,
                note=f"RSS after Django setup {out['rss_before_mb']:.0f} MB",
            )
        )
    report.rows.append(
        Row(
            "enforcement pass (peak RSS of the process)",
            data,
            peak,
            unit="MB",
            target="< 300 MB",
            met=peak < 300,
        )
    )
