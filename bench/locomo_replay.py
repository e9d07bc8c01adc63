"""LoCoMo with nothing evicted, replayed in pure Python: the ceiling of search, in seconds.

    python -m bench.locomo_replay --locomo ../shared/data/locomo/locomo-public.json
    python -m bench.locomo_replay --locomo PATH --mode interleaved --half a --misses 1
    python -m bench.locomo_replay --synthetic 4     # the quality bench's synthetic year

Every turn of every conversation goes through the product's own ingest code
(``records.extract.Extractor.from_events`` with the default rules and token counter:
the same turns dropped as small talk, the same two turns of context) and is indexed
with ``records.search_text.index_tokens`` as a saved record is; each question is
ranked with ``records.search_text.rank`` over the records holding any of its tokens,
with the numbers ``records.search`` hands it (BM25 length = the record's token count,
the user's record count and mean length, newer first in a tie band, ids in ingest
order). No database, no Celery: what it cannot show is a difference between the
database path and this one, which the quality bench's keep-all row measures
(``python -m bench --only quality``); the two agreed when this was written.

A question is answerable when every evidence turn's record is in its top 10. Modes as
in the quality bench (``bench.quality.locomo``): "end" asks after the last session,
"interleaved" before a seeded later session (only the sessions before it are stored).
``--half a`` / ``--half b`` keep every other conversation (a: 1st, 3rd, 5th...), to
choose a change on one half and confirm it on the other.

The LoCoMo file is read from its path (its licence forbids copying it into the
repository).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

TOP = 10


@dataclass
class Record:
    id: int
    key: str  # the turn's dia_id
    session: int  # index of its session in the conversation
    session_id: str
    counts: Counter  # its search tokens
    length: int  # its token count (BM25 length)
    written_at: int  # microseconds since 1970
    author: str = ""  # who said it (a query naming them: search_text.AUTHOR_WEIGHT)
    embedded: str = ""  # what ingest embeds (records.embeddings.embedding_text)
    vector: bytes = b""  # its stored vector (--embedder), empty when none


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    os.environ.setdefault("SECRET_KEY", "locomo-replay")
    import django

    django.setup()  # the extractor's models module; no database is opened


def ingest(user, next_id: int, batch: int = 0) -> tuple[list[Record], int]:
    """The records ingest would store for a conversation (keep-all), in ingest order.
    ``batch``: each session saved that many events at a time with nothing before each
    batch, as ``add_events_to_memory`` gives when this service does not store the
    session (0: whole sessions, and batches of a session it stores)."""
    from records import embeddings, rules, search_text, tokens
    from records.extract import Extractor

    from .quality import replay

    extractor = Extractor(rules.DEFAULT_RULES, tokens.count_tokens)
    out = []
    for index, session in enumerate(user.sessions):
        events = replay.adk_events(session)
        size = batch or len(events) or 1
        candidates = [
            c
            for first in range(0, len(events), size)
            for c in extractor.from_events(
                "replay", user.user_id, session.id, events[first : first + size]
            )
        ]
        for c in candidates:
            # What MemoryRecord.save stores: the context layer, then reindex adds its own.
            stored = search_text.reindex(c.content, c.author, search_text.context_tokens(c.context))
            out.append(
                Record(
                    id=next_id,
                    key=c.event_ids[0],
                    session=index,
                    session_id=c.session_id,
                    counts=Counter(stored.split(" ")),
                    length=c.tokens,
                    written_at=int(c.entry_timestamp.timestamp() * 1_000_000),
                    author=c.author,
                    embedded=embeddings.embedding_text(
                        c.content, c.author, embeddings.context_lines(c.context)
                    ),
                )
            )
            next_id += 1
    return out, next_id


def top(question: str, records: list[Record], limit: int = TOP) -> list[Record]:
    """``records.search.find``'s ranking of ``records`` for ``question``."""
    from records import search_text

    terms = search_text.query_terms(question)
    if not terms or not records:
        return []
    wanted = {t.token for t in terms}
    words = frozenset(search_text.query_words(question))
    by_id = {}
    candidates = []
    for r in records:
        if wanted.isdisjoint(r.counts):
            continue
        by_id[r.id] = r
        candidates.append(
            search_text.Candidate(
                r.id,
                tuple(r.counts.get(t.token, 0) for t in terms),
                r.length,
                r.written_at,
                True,
                search_text.author_named(r.author, words),
            )
        )
    if not candidates:
        return []
    scope = search_text.Scope(
        records=len(records), mean_length=sum(r.length for r in records) / len(records)
    )
    return [by_id[i] for i in search_text.rank(terms, candidates, scope, limit)]


@dataclass
class Fusion:
    """Hybrid ranking (``--embedder``): the product's fusion (``records.embeddings.hybrid``)
    with its constants unless a variant is asked for."""

    embedder: str
    k: int | None = None  # RRF constant (None: records.vectors.RRF_K)
    lexical_depth: int | None = None  # None: records.embeddings.FUSION_DEPTH
    vector_depth: int | None = None  # None: records.embeddings.FUSION_DEPTH
    cache: str | None = None  # a directory to keep vectors in between runs

    def depths(self) -> tuple[int, int, int]:
        from records import embeddings, vectors

        lexical = max(TOP, self.lexical_depth or embeddings.FUSION_DEPTH)
        vector = max(TOP, self.vector_depth or embeddings.FUSION_DEPTH)
        return lexical, vector, self.k or vectors.RRF_K


class Vectors:
    """Unit vectors of texts through ``records.embeddings.embed`` (the product's call and
    checks, with MEMADMIN_EMBEDDER set to the embedder), kept on disk when asked."""

    def __init__(self, embedder: str, cache: str | None):
        self.embedder = embedder
        self.file = None
        self.known: dict[str, bytes] = {}
        self.calls = 0
        self.seconds = 0.0
        self.texts = 0
        if cache:
            name = hashlib.sha256(embedder.encode()).hexdigest()[:16]
            self.file = Path(cache) / f"vectors-{name}.pickle"
            if self.file.is_file():
                self.known = pickle.loads(self.file.read_bytes())  # noqa: S301 - our own cache

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, texts: list[str], batch: int = 256) -> list[bytes]:
        from django.conf import settings
        from django.test import override_settings

        from records import embeddings, vectors

        missing = list(dict.fromkeys(t for t in texts if self._key(t) not in self.known))
        memadmin = {**settings.MEMADMIN, "EMBEDDER": self.embedder}
        with override_settings(MEMADMIN=memadmin):
            for start in range(0, len(missing), batch):
                chunk = missing[start : start + batch]
                began = time.perf_counter()
                found = embeddings.embed(chunk)
                self.seconds += time.perf_counter() - began
                self.calls += 1
                self.texts += len(chunk)
                for text, vector in zip(chunk, found, strict=True):
                    self.known[self._key(text)] = (
                        b"" if vector is None else vectors.to_bytes(vector)
                    )
        return [self.known[self._key(t)] for t in texts]

    def save(self) -> None:
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self.file.write_bytes(pickle.dumps(self.known))


def hybrid(
    question: str, query_vector: bytes, records: list[Record], fusion: Fusion
) -> list[Record]:
    """``records.search.find`` with an embedder: the lexical top ``FUSION_DEPTH`` fused with
    the nearest ``FUSION_DEPTH`` vectors (``records.embeddings.hybrid``), the same
    ``records.vectors`` functions."""
    from records import search_text, vectors

    if not search_text.query_terms(question) or not records:
        return []  # find returns before fusing when the question has no search term
    lexical_depth, vector_depth, k = fusion.depths()
    lexical = [r.id for r in top(question, records, lexical_depth)]
    if not query_vector:  # the query could not be embedded: lexical ranking alone
        ids = lexical[:TOP]
    else:
        stored = ((r.id, r.vector) for r in records if r.vector)
        near = vectors.nearest(vectors.from_bytes(query_vector), stored, vector_depth)
        ids = vectors.fuse(lexical, near, TOP, k)
    by_id = {r.id: r for r in records}
    return [by_id[i] for i in ids]


def run(
    path: str | None,
    mode: str,
    half: str | None,
    synthetic: int = 0,
    fusion: Fusion | None = None,
    batch: int = 0,
) -> dict:
    from .quality import locomo
    from .quality import synthetic as year
    from .quality.data import END

    if synthetic:
        dataset = year.generate(users=synthetic, sessions=110, seed=7)
    else:
        dataset = locomo.load(path)
    users = dataset.users
    if half:
        users = users[0 if half == "a" else 1 :: 2]
    by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    next_id = 1
    store = Vectors(fusion.embedder, fusion.cache) if fusion else None
    query_seconds: list[float] = []
    for user in users:
        records, next_id = ingest(user, next_id, batch)
        if store is not None:
            for r, vector in zip(records, store.get([r.embedded for r in records]), strict=True):
                r.vector = vector
        for q in user.questions:
            ask = q.ask[mode]
            stored = records if ask == END else [r for r in records if r.session < ask]
            if store is None:
                found = top(q.text, stored)
            else:
                calls, seconds = store.calls, store.seconds
                (query_vector,) = store.get([q.text], batch=1)
                if store.calls > calls:
                    query_seconds.append(store.seconds - seconds)
                found = hybrid(q.text, query_vector, stored, fusion)
            keys = {r.key for r in found}
            ok = all(e in keys for e in q.evidence)
            for cat in (q.category, "all"):
                by_category[cat][0] += 1
                by_category[cat][1] += ok
            if not ok:
                misses.append(
                    {
                        "question": q.id,
                        "category": q.category,
                        "text": q.text,
                        "evidence": list(q.evidence),
                        "top": [r.key for r in found],
                    }
                )
    if store is not None:
        store.save()
    out = {
        "conversations": [u.user_id for u in users],
        "mode": mode,
        "answerable": {
            cat: {"questions": n, "answerable": k, "fraction": round(k / n, 4)}
            for cat, (n, k) in sorted(by_category.items())
        },
        "misses": misses,
    }
    if fusion is not None:
        lexical_depth, vector_depth, k = fusion.depths()
        out["fusion"] = {
            "embedder": fusion.embedder,
            "k": k,
            "lexical_depth": lexical_depth,
            "vector_depth": vector_depth,
            # one question embedded per call, as search does (questions already in the
            # cache are not timed)
            "query_ms": _median_ms(query_seconds),
            "queries_timed": len(query_seconds),
        }
    return out


def _median_ms(seconds: list[float]) -> float | None:
    return round(statistics.median(seconds) * 1000, 2) if seconds else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo_replay", description=__doc__)
    parser.add_argument("--locomo", help="a LoCoMo-format JSON file")
    parser.add_argument(
        "--synthetic",
        type=int,
        metavar="USERS",
        help="the quality bench's synthetic year instead (USERS users, 110 sessions, seed 7)",
    )
    parser.add_argument("--mode", choices=("end", "interleaved", "both"), default="both")
    parser.add_argument("--half", choices=("a", "b"), help="every other conversation")
    parser.add_argument("--misses", metavar="CATEGORY", help="print the misses of a category")
    parser.add_argument("--json", metavar="OUT", help="write the results (misses included)")
    parser.add_argument(
        "--embedder",
        metavar="PKG.MOD.FN",
        help="hybrid search: fuse with this embedder's vectors, as MEMADMIN_EMBEDDER does",
    )
    parser.add_argument("--cache", metavar="DIR", help="keep the embedder's vectors in DIR")
    parser.add_argument("--rrf-k", type=int, metavar="K", help="variant: RRF constant")
    parser.add_argument("--lexical-depth", type=int, metavar="N", help="variant: lexical depth")
    parser.add_argument("--vector-depth", type=int, metavar="N", help="variant: vector depth")
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        metavar="N",
        help="variant: each session saved N events at a time with no turns before a batch "
        "(add_events_to_memory for a session this service does not store)",
    )
    args = parser.parse_args(argv)
    if args.batch < 0:
        parser.error("--batch must be 0 (whole sessions) or more")
    variant = (args.rrf_k, args.lexical_depth, args.vector_depth)
    if not args.embedder and any(v is not None for v in variant):
        parser.error("--rrf-k, --lexical-depth and --vector-depth need --embedder")
    if any(v is not None and v < 1 for v in variant):
        parser.error("--rrf-k, --lexical-depth and --vector-depth must be at least 1")
    fusion = (
        Fusion(args.embedder, args.rrf_k, args.lexical_depth, args.vector_depth, args.cache)
        if args.embedder
        else None
    )
    if args.synthetic:
        modes = ("year",)
    elif not args.locomo or not Path(args.locomo).is_file():
        parser.error(f"no file at {args.locomo} (--locomo PATH or --synthetic USERS)")
    else:
        modes = ("end", "interleaved") if args.mode == "both" else (args.mode,)
    _setup()
    results = [
        run(args.locomo, mode, args.half, args.synthetic or 0, fusion, args.batch) for mode in modes
    ]
    for result in results:
        cells = "  ".join(
            f"{cat}: {v['fraction']:.1%} ({v['answerable']}/{v['questions']})"
            for cat, v in result["answerable"].items()
        )
        print(f"{result['mode']:<11} half={args.half or '-'}  {cells}")
        if "fusion" in result:
            f = result["fusion"]
            print(
                f"  hybrid {f['embedder']} k={f['k']} depths={f['lexical_depth']}/"
                f"{f['vector_depth']} query embedding median {f['query_ms']} ms "
                f"({f['queries_timed']} timed)"
            )
        if args.misses:
            for m in result["misses"]:
                if m["category"] == args.misses:
                    evidence, found = m["evidence"], m["top"]
                    print(f"  {m['question']} {m['text']!r} evidence={evidence} top={found}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
