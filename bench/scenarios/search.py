"""Scenario 1, search: ``search_memory`` (with its touch) against ADK's own memory services.

One user per size holds that many records; ADK's ``InMemoryMemoryService`` and
``SqliteMemoryService`` (a file database, FTS5, ``max_results=10`` like ours) hold the
same texts as events, 20 per session. Every service answers the same realistic queries
in one asyncio loop. Ours goes through ``EvictingMemoryService.search_memory`` (the
agent's path: ``sync_to_async``, full-text search, fetch, regret check, and the touch,
buffered in Redis as in production).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from django.utils import timezone
from google.adk.events.event import Event
from google.adk.memory._sqlite_memory_service import SqliteMemoryService
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.sessions.session import Session
from google.genai import types

from records import touches
from records.memory_service import EvictingMemoryService
from records.models import MemoryRecord
from records.policies import update_policy

from .. import corpus
from ..harness import Row, alternate_async
from ..load import UserSpec, load_records, reset_data, vacuum_analyze

APP = "bench-search"
NAME = "search"


def _sessions(user_id: str, texts: list[str], app_name: str = APP) -> list[Session]:
    """The texts as ADK sessions of 20 user events each, timestamps in text order."""
    out = []
    for s in range(0, len(texts), 20):
        events = [
            Event(
                id=f"{user_id}-e{s + i}",
                invocation_id=f"inv-{s}",
                author="user",
                timestamp=1_700_000_000.0 + s + i,
                content=types.Content(role="user", parts=[types.Part(text=t)]),
            )
            for i, t in enumerate(texts[s : s + 20])
        ]
        out.append(
            Session(id=f"{user_id}-s{s // 20}", app_name=app_name, user_id=user_id, events=events)
        )
    return out


async def adk_baselines(
    sqlite: SqliteMemoryService, user_id: str, texts: list[str], app_name: str = APP
):
    """ADK's two services holding ``texts`` for ``user_id``: a new InMemoryMemoryService
    (returned) and the given SqliteMemoryService (added to)."""
    in_memory = InMemoryMemoryService()
    for session in _sessions(user_id, texts, app_name):
        await in_memory.add_session_to_memory(session)
        await sqlite.add_session_to_memory(session)
    return in_memory


async def timed_searches(
    service, user_id: str, queries: list[str], app_name: str = APP
) -> tuple[list[float], list]:
    """Milliseconds per query and each query's memories. One warm-up query (each
    repetition's first call of a service is then not its first in a while)."""
    await service.search_memory(app_name=app_name, user_id=user_id, query=queries[0])
    times, memories = [], []
    for q in queries:
        start = time.perf_counter()
        response = await service.search_memory(app_name=app_name, user_id=user_id, query=q)
        times.append((time.perf_counter() - start) * 1000)
        memories.append(response.memories)
    return times, memories


async def _timed_queries(service, user_id: str, queries: list[str]) -> tuple[list[float], int]:
    """Milliseconds per query, and how many queries found something."""
    times, memories = await timed_searches(service, user_id, queries)
    return times, sum(bool(m) for m in memories)


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    # Caps high enough for the largest user: searching is what is measured here.
    update_policy(APP, {"max_records": 100_000, "max_tokens": 10_000_000})
    sizes = size["records"]
    load_records(APP, [UserSpec(f"search-{n}", n) for n in sizes], now, seed=11)
    vacuum_analyze()
    report.check(NAME, "touches are buffered in Redis (production shape)", touches.buffering())
    asyncio.run(_run(report, size, sizes))


async def _run(report, size: dict, sizes: list[int]) -> None:
    from asgiref.sync import sync_to_async

    ours = EvictingMemoryService()
    queries = corpus.queries(size["queries"], seed=5)
    with tempfile.TemporaryDirectory(prefix="bench-adk-sqlite-") as tmp:
        sqlite = SqliteMemoryService(Path(tmp) / "memory.db", max_results=10)
        for n in sizes:
            user_id = f"search-{n}"
            texts = await sync_to_async(
                lambda u=user_id: list(
                    MemoryRecord.objects.filter(app_name=APP, user_id=u)
                    .order_by("id")
                    .values_list("content", flat=True)
                )
            )()
            in_memory = await adk_baselines(sqlite, user_id, texts)
            b = size["baseline_queries"]
            base_queries = queries[: b.get(n, len(queries)) if isinstance(b, dict) else b]

            # Repetitions interleave the services (the order rotating), each taking its
            # share of the queries, so load drift moves them all alike.
            reps = size["repetitions"]
            contenders = {
                "ours": (ours, queries),
                "in-memory": (in_memory, base_queries),
                "sqlite": (sqlite, queries),
            }
            found = dict.fromkeys(contenders, 0)

            def contender(label, service, asked, user_id=user_id, reps=reps, found=found):
                async def one(rep):
                    times, hits = await _timed_queries(service, user_id, asked[rep::reps])
                    found[label] += hits
                    return times

                return one

            timed = await alternate_async(
                {k: contender(k, *v) for k, v in contenders.items()}, reps
            )
            our_found, mem_found, sql_found = found["ours"], found["in-memory"], found["sqlite"]
            status = await sync_to_async(touches.record_touches)(APP, user_id, [0], timezone.now())
            report.check(
                NAME, f"{n:,} records: touch status is 'buffered'", status == "buffered", status
            )
            report.check(
                NAME,
                f"{n:,} records: queries find memories (ours {our_found}/{len(queries)}, "
                f"in-memory {mem_found}/{len(base_queries)}, sqlite {sql_found}/{len(queries)})",
                our_found >= 0.5 * len(queries) and sql_found >= 0.5 * len(queries),
            )
            mem_row = Row.interleaved(
                "search",
                f"{n:,} records/user",
                timed["ours"],
                timed["in-memory"],
                baseline="ADK InMemoryMemoryService",
            )
            if n == 500:
                mem_row.target = "p99 ≤ 15 ms"
                mem_row.met = mem_row.ours_p99 <= 15
            elif n == 50_000:
                mem_row.target, mem_row.met = "≥ 10×", mem_row.ratio >= 10
            report.rows.append(mem_row)
            bar = {500: 1.0, 5_000: 1.5, 50_000: 3.0}.get(n, 1.0)
            report.rows.append(_sqlite_row("search", f"{n:,} records/user", timed, bar))
        if size.get("sessions_after"):
            await _after_writes(report, size, ours, sqlite, queries, min(sizes))
        await sqlite.close()


def _sqlite_row(scenario: str, size: str, timed: dict, bar: float) -> Row:
    """Ours against ADK's ``SqliteMemoryService``, its target ``bar`` times faster."""
    row = Row.interleaved(
        scenario, size, timed["ours"], timed["sqlite"], baseline="ADK SqliteMemoryService"
    )
    row.target, row.met = f"≥ {bar:g}×", row.ratio >= bar
    return row


async def _after_writes(report, size: dict, ours, sqlite, queries: list[str], n: int) -> None:
    """The smallest user's searches again while other users' sessions are ingested into
    both stores, with no vacuum: PostgreSQL's full-text index keeps new entries in a
    pending list that every search scans until a vacuum (or the insert that fills it)
    moves them into the index (``records.fulltext_schema``), and the rows above were
    measured just after a vacuum, as production searches never are. Each repetition
    ingests its share of the sessions, then asks its share of the queries of ours and
    the baseline in turn, so the repetitions see the list at several fill levels."""
    from asgiref.sync import sync_to_async

    from records.memory_service import add_session

    sessions, reps, user_id = size["sessions_after"], size["repetitions"], f"search-{n}"

    async def ingest_share(rep):
        for i in range(rep * sessions // reps, (rep + 1) * sessions // reps):
            [session] = _sessions(f"writer-{i % 50}", corpus.texts(20, seed=10_000 + i))
            session = session.model_copy(update={"id": f"writer-s{i}"})
            await sync_to_async(add_session)(session, timezone.now())
            await sqlite.add_session_to_memory(session)

    def contender(service):
        async def one(rep):
            return (await timed_searches(service, user_id, queries[rep::reps]))[0]

        return one

    timed = await alternate_async(
        {"ours": contender(ours), "sqlite": contender(sqlite)}, reps, before_each=ingest_share
    )
    size_label = f"{n:,} records/user, {sessions:,} sessions ingested meanwhile"
    report.rows.append(_sqlite_row("search, between vacuums", size_label, timed, 1.0))
