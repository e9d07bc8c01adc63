"""Scenario: past one machine's comfort, the hot paths at ``records`` records (10,000,000 at
``--size full``), generated inside PostgreSQL as the enforcement pass's million are.

One app holds ``records`` records over ``records / 500`` users, shaped as the
enforcement pass's data (``enforce_pass.user_specs``: users near the cap, 10% over it,
5% with expired records); a small app holds ``small_users`` × 500 records in the same
table. Then, in the same run:

1. the hourly enforcement pass over the big app (a fresh process: wall time and peak
   RSS) against one sequential scan of the table (the floor, as in ``enforce_pass``);
2. search (``EvictingMemoryService.search_memory``) for users of the big app against
   the same queries for users of the small app, interleaved by repetition: what a
   search costs should follow the user's records, not the table's;
3. ingest (``records.memory_service.add_session``: 20 events, users at the cap, so
   every ingest evicts) in the big app against the small app, interleaved likewise.

The per-user statements are keyed by (app, user), so 2 and 3 should not grow with the
table; the pass grows with it by design (it reads every user's counts). docs/scaling.md
explains the numbers.
"""

from __future__ import annotations

import asyncio
import time

from django.utils import timezone
from google.adk.sessions.session import Session

from records.memory_service import EvictingMemoryService, add_session
from records.models import MemoryRecord
from records.policies import update_policy

from .. import corpus
from ..corpus import events_for
from ..harness import Row, alternate, alternate_async
from ..load import UserSpec, load_records, reset_data, vacuum_analyze
from .enforce_pass import APP as BIG
from .enforce_pass import _pass, floor_seconds, user_specs

NAME = "scale"
SMALL = "bench-scale-small"


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    records = size["records"]
    users = max(1, records // 500)
    update_policy(BIG, {"max_records": 540})
    update_policy(SMALL, {"max_records": 540})
    start = time.perf_counter()
    written = load_records(BIG, user_specs(users, records, cap=500), now, seed=31)
    small = [UserSpec(f"small-{i:04d}", 500) for i in range(size["small_users"])]
    written_small = load_records(SMALL, small, now, seed=32)
    vacuum_analyze()
    load_seconds = time.perf_counter() - start
    report.check(
        NAME,
        f"generated {written:,} + {written_small:,} records in PostgreSQL "
        f"({load_seconds / 60:.1f} min with indexes and VACUUM ANALYZE)",
        written == records and written_small == 500 * len(small),
    )
    data = f"{written:,} records / {users:,} users in the table"

    floor = floor_seconds()
    params = update_policy(BIG, {"max_records": 540}).params()
    out = _pass(report, f"{written:,} records, hourly", params, timezone.now())
    report.rows.append(
        Row(
            "scale: enforcement pass, hourly (wall)",
            f"{data}; {out['users']:,} users enforced",
            out["seconds"],
            unit="s",
            base=floor,
            baseline="one sequential scan, count(*) (floor)",
            target="≤ 5× the floor",
            met=out["seconds"] <= 5 * floor,
        )
    )
    report.rows.append(
        Row(
            "scale: enforcement pass (peak RSS of the process)",
            data,
            out["peak_rss_mb"],
            unit="MB",
            target="< 300 MB",
            met=out["peak_rss_mb"] < 300,
        )
    )

    # Users of the big app that the pass left at or under the cap, as many as the small
    # app has, so both sides search and ingest for users of the same size.
    big_users = [f"pass-{u:05d}" for u in range(0, users, max(1, users // len(small)))]
    big_users = big_users[: len(small)]
    asyncio.run(_search(report, size, big_users, [s.user_id for s in small], data))
    _ingest(report, size, big_users, [s.user_id for s in small], data)


async def _search(report, size, big_users, small_users, data) -> None:
    service = EvictingMemoryService()
    queries = corpus.queries(size["queries"], seed=5)
    reps = size["repetitions"]

    def searcher(app, users):
        async def one(rep: int) -> list[float]:
            times = []
            for i, q in enumerate(queries[rep::reps]):
                user = users[i % len(users)]
                start = time.perf_counter()
                await service.search_memory(app_name=app, user_id=user, query=q)
                times.append((time.perf_counter() - start) * 1000)
            return times

        return one

    await service.search_memory(app_name=BIG, user_id=big_users[0], query=queries[0])
    timed = await alternate_async(
        {"big": searcher(BIG, big_users), "small": searcher(SMALL, small_users)}, reps
    )
    report.rows.append(
        Row.interleaved(
            "scale: search (p50 / p99)",
            f"~500 records/user; {data}",
            timed["big"],
            timed["small"],
            baseline=f"the same users' size in a {len(small_users) * 500:,}-record app",
            target="p99 ≤ 15 ms",
            met=None,
        )
    )
    report.rows[-1].met = report.rows[-1].ours_p99 <= 15


def _ingest(report, size, big_users, small_users, data) -> None:
    reps, per_rep = size["repetitions"], size["ingest_sessions"]
    counter = {"n": 0}

    def ingester(app, users):
        def one() -> list[float]:
            times = []
            for _ in range(per_rep):
                counter["n"] += 1
                j = counter["n"]
                user = users[j % len(users)]
                sid = f"scale-{j}"
                session = Session(
                    id=sid,
                    app_name=app,
                    user_id=user,
                    events=events_for(sid, 7_000 + j, time.time() - 3_600),
                )
                start = time.perf_counter()
                add_session(session, timezone.now())
                times.append((time.perf_counter() - start) * 1000)
            return times

        return one

    timed = alternate(
        {"big": ingester(BIG, big_users), "small": ingester(SMALL, small_users)}, reps
    )
    biggest = (
        MemoryRecord.objects.filter(app_name=BIG, user_id__in=big_users)
        .values("user_id")
        .order_by()
        .distinct()
        .count()
    )
    report.check(NAME, "ingest reached the big app's users", biggest == len(big_users))
    report.rows.append(
        Row.interleaved(
            "scale: ingest (per session, evicting)",
            f"20 events; {data}",
            timed["big"],
            timed["small"],
            baseline=f"the same in a {len(small_users) * 500:,}-record app",
        )
    )
