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
import json
import os
import sys
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


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    os.environ.setdefault("SECRET_KEY", "locomo-replay")
    import django

    django.setup()  # the extractor's models module; no database is opened


def ingest(user, next_id: int) -> tuple[list[Record], int]:
    """The records ingest would store for a conversation (keep-all), in ingest order."""
    from records import rules, search_text, tokens
    from records.extract import Extractor

    from .quality import replay

    extractor = Extractor(rules.DEFAULT_RULES, tokens.count_tokens)
    out = []
    for index, session in enumerate(user.sessions):
        events = replay.adk_events(session)
        for c in extractor.from_events("replay", user.user_id, session.id, events):
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
    by_id = {}
    candidates = []
    for r in records:
        if wanted.isdisjoint(r.counts):
            continue
        by_id[r.id] = r
        candidates.append(
            search_text.Candidate(
                r.id, tuple(r.counts.get(t.token, 0) for t in terms), r.length, r.written_at, True
            )
        )
    if not candidates:
        return []
    scope = search_text.Scope(
        records=len(records), mean_length=sum(r.length for r in records) / len(records)
    )
    return [by_id[i] for i in search_text.rank(terms, candidates, scope, limit)]


def run(path: str | None, mode: str, half: str | None, synthetic: int = 0) -> dict:
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
    for user in users:
        records, next_id = ingest(user, next_id)
        for q in user.questions:
            ask = q.ask[mode]
            stored = records if ask == END else [r for r in records if r.session < ask]
            found = top(q.text, stored)
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
    return {
        "conversations": [u.user_id for u in users],
        "mode": mode,
        "answerable": {
            cat: {"questions": n, "answerable": k, "fraction": round(k / n, 4)}
            for cat, (n, k) in sorted(by_category.items())
        },
        "misses": misses,
    }


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
    args = parser.parse_args(argv)
    if args.synthetic:
        modes = ("year",)
    elif not args.locomo or not Path(args.locomo).is_file():
        parser.error(f"no file at {args.locomo} (--locomo PATH or --synthetic USERS)")
    else:
        modes = ("end", "interleaved") if args.mode == "both" else (args.mode,)
    _setup()
    results = [run(args.locomo, mode, args.half, args.synthetic or 0) for mode in modes]
    for result in results:
        cells = "  ".join(
            f"{cat}: {v['fraction']:.1%} ({v['answerable']}/{v['questions']})"
            for cat, v in result["answerable"].items()
        )
        print(f"{result['mode']:<11} half={args.half or '-'}  {cells}")
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
