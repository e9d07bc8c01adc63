"""Ad-hoc timing of hybrid search's nearest-vector scan (docs/embeddings.md, "Latency").

Not a bench scenario: one user of the bench corpus's texts at 500 and 5,000 records,
embedded with the deterministic test embedder (``tests.embedders``, 256 dimensions), and
16 queries × ``REPS`` searched four or five ways, interleaved in a shuffled order per query:
lexical only; hybrid with the previous scan (ORM row iterator, one array per vector,
a full sort); hybrid with the packed scan in pure Python; hybrid with the numpy screen;
and, on a PostgreSQL with the vector extension (``.ci/pgvector-server``), hybrid with
PostgreSQL picking the candidates (``records.pgvector``). The hybrid rankings are
checked to be identical on every query.

    MEMADMIN_VAR_DIR=/tmp/var-latency REPS=3 python -m bench.hybrid_latency  # SQLite
    SECRET_KEY=x DATABASE_URL=postgres://…/scratch REPS=3 python -m bench.hybrid_latency
    SECRET_KEY=x DATABASE_URL=$(.ci/pgvector-server start) REPS=3 python -m bench.hybrid_latency

It writes to the database it is given (migrated first): use a scratch one.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
APP = "latency"
EMBEDDER = "tests.embedders.bag_of_concepts"
KINDS = ["lexical", "hybrid-old", "hybrid-pure", "hybrid-numpy"]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from bench import corpus
    from records import embeddings, pgvector, policy_sql, search, vectors
    from records.memory_service import add_memories
    from records.models import MemoryRecord, RecordEmbedding
    from records.policies import policy_for, update_policy

    call_command("migrate", verbosity=0)
    new_nearest, numpy = embeddings.nearest, vectors._np
    has_pgvector = pgvector.enabled()
    kinds = [*KINDS, "hybrid-pgvector"] if has_pgvector else KINDS

    def old_nearest(app_name, user_id, query, now, limit):
        live = MemoryRecord.objects.filter(app_name=app_name, user_id=user_id).filter(
            policy_sql.live_q(now, policy_for(app_name).params())
        )
        rows = RecordEmbedding.objects.filter(record__in=live.values("id"), dims=len(query))
        size = len(query) * 4
        scored = [
            (-round(math.sumprod(query, vectors.from_bytes(data)), 9), -record_id)
            for record_id, data in rows.values_list("record_id", "vector").iterator()
            if len(data) == size
        ]
        scored.sort()
        return [-neg_id for _, neg_id in scored[:limit]]

    def use(kind: str) -> None:
        embedder = "" if kind == "lexical" else EMBEDDER
        settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": embedder}
        embeddings.nearest = old_nearest if kind == "hybrid-old" else new_nearest
        vectors._np = None if kind == "hybrid-pure" else numpy
        if has_pgvector:  # the others scan in Python, as without the extension
            pgvector._ENABLED[pgvector._key()] = kind == "hybrid-pgvector"

    def populate(user: str, n: int) -> int:
        MemoryRecord.objects.filter(app_name=APP, user_id=user).delete()
        use("hybrid-numpy")
        texts = corpus.texts(int(n * 2.5), seed=n)  # the corpus repeats: dedupe drops some
        mine = MemoryRecord.objects.filter(app_name=APP, user_id=user)
        for start in range(0, len(texts), 500):
            entries = [
                MemoryEntry(
                    content=types.Content(role="user", parts=[types.Part(text=text)]),
                    author="user",
                    timestamp=(NOW - timedelta(minutes=i)).isoformat(),
                )
                for i, text in enumerate(texts[start : start + 500], start)
            ]
            add_memories(APP, user, entries, NOW - timedelta(hours=1))
            if mine.count() >= n:
                break
        newest = list(mine.order_by("-id").values_list("id", flat=True))
        MemoryRecord.objects.filter(id__in=newest[: max(0, len(newest) - n)]).delete()
        embeddings.backfill(app_name=APP)
        if has_pgvector:
            pgvector.forget()
            pgvector.fill_missing()
        return RecordEmbedding.objects.filter(record__in=mine.values("id")).count()

    update_policy(APP, {"max_records": 10**6, "max_tokens": 10**9})
    reps = int(os.environ.get("REPS", "5"))
    rng = random.Random(3)
    version = numpy.__version__ if numpy else "absent"
    python = sys.version.split()[0]
    print(f"{connection.vendor}, Python {python}, numpy {version}, load {os.getloadavg()}")
    for n in (500, 5000):
        user = f"user{n}"
        count = populate(user, n)
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(reps):
            for query in corpus.queries(16, seed=1):
                order = kinds[:]
                rng.shuffle(order)
                found = {}
                for kind in order:
                    use(kind)
                    start = time.perf_counter()
                    found[kind] = [r.id for r in search.search(APP, user, query, NOW)]
                    times[kind].append(time.perf_counter() - start)
                if len({tuple(found[kind]) for kind in kinds if kind != "lexical"}) != 1:
                    raise SystemExit(f"the hybrid rankings differ for query {query!r}")
        cells = []
        for kind in kinds:
            ordered = sorted(times[kind])
            p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
            cells.append(
                f"{kind} p50 {statistics.median(ordered) * 1e3:.1f} ms p95 {p95 * 1e3:.1f}"
            )
        print(f"{count} vectors, {len(times['lexical'])} searches each: " + " | ".join(cells))
    print(f"load after {os.getloadavg()}; hybrid rankings identical on every query")


if __name__ == "__main__":
    main()
