"""How ADK's ``SqliteMemoryService`` search slows as other users' records share its file
(docs/performance.md, "GIN's pending list").

Not a bench scenario: ADK's service alone, in one process, on a file of its own. The
bench's 500-record user's texts are stored, then the 5,000- and 50,000-record users' (as
the search scenario gives them to ADK, one size after the other), then 300 sessions of
other users (the *between vacuums* writes); after each step the first user's median
search time over the bench's queries is printed, then after FTS5's ``optimize`` and
``ANALYZE``. ADK's full-text match is not scoped to the user (the join filters by app
and user after it), so each search scans every user's matches.

    SECRET_KEY=x MEMADMIN_VAR_DIR=/tmp/var-scope python -m bench.adk_scope [--scale 1.0]

``--scale`` multiplies every size (the tests run a small one). Nothing but a
temporary directory is written.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

USER = "u500"
OTHERS = (("u5000", 5000, 2), ("u50000", 50000, 3))
WRITES = 300  # sessions of 20 texts, as the search scenario's sessions_after
QUERIES = 200
OPTIMIZE = "INSERT INTO memory_events_fts(memory_events_fts) VALUES('optimize')"  # FTS5's


async def _median_ms(service, queries: list[str]) -> float:
    await service.search_memory(app_name="a", user_id=USER, query=queries[0])
    times = []
    for q in queries:
        start = time.perf_counter()
        await service.search_memory(app_name="a", user_id=USER, query=q)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure(scale: float = 1.0) -> list[tuple[str, float]]:
    """(step, the first user's median search in ms) after each step."""
    from google.adk.memory._sqlite_memory_service import SqliteMemoryService

    from . import corpus
    from .scenarios.search import _sessions

    def size(n: int) -> int:
        return max(20, round(n * scale))

    queries = corpus.queries(max(10, round(QUERIES * scale)), seed=5)
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-adk-scope-") as tmp:
        path = Path(tmp) / "memory.db"
        service = SqliteMemoryService(path, max_results=10)
        for user, n, seed in ((USER, 500, 1), *OTHERS):
            for session in _sessions(user, corpus.texts(size(n), seed=seed), "a"):
                await service.add_session_to_memory(session)
            out.append((f"{user} stored", await _median_ms(service, queries)))
        for i in range(max(1, round(WRITES * scale))):
            [session] = _sessions(f"writer-{i % 50}", corpus.texts(20, seed=10_000 + i), "a")
            await service.add_session_to_memory(session.model_copy(update={"id": f"w-s{i}"}))
        out.append(("other users' sessions written", await _median_ms(service, queries)))
        await service.close()
        for step, sql in (
            (
                "FTS5 optimize",
                "INSERT INTO memory_events_fts(memory_events_fts) VALUES('optimize')",
            ),
            ("ANALYZE", "ANALYZE"),
        ):
            with sqlite3.connect(path) as db:
                db.execute(sql)
            service = SqliteMemoryService(path, max_results=10)
            out.append((step, await _median_ms(service, queries)))
            await service.close()
    return out


def main() -> None:
    import django

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    django.setup()  # the bench's corpus helpers import the project's modules
    for step, ms in asyncio.run(measure(args.scale)):
        print(f"{step}: {ms:.2f} ms")


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    main()
