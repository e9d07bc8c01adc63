"""The access history a backtest replays: what searches returned, what evictions removed.

No content and no query text: a search keeps its app, user, time, the ids of the
records it returned (the ones it touched) and keyed hashes of its terms, hashed as the
regret check hashes them (``feedback.term_hash``). An evicted record keeps what the
policy knew about it at eviction (created at, importance, pin, hits, last access, due
date, slot) and the keyed hashes of its terms; its reason, tokens and policy version are
on its ``EvictionEvent`` already. Both are subject data (``records.inventory``), kept
``ACCESS_HISTORY_DAYS`` (``MEMADMIN_ACCESS_HISTORY_DAYS``), pruned daily, and counted by
no metric.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from . import erasure_guard, feedback, search_text
from .extract import INFORMATION_RULE, follows_information
from .information import information_importance
from .models import EvictedRecord, MemoryRecord, SearchLog

log = logging.getLogger(__name__)

# The ids a search returns (store.SEARCH_LIMIT); more are not kept.
KEPT_RESULTS = 10


def retention() -> timedelta:
    return timedelta(days=settings.MEMADMIN["ACCESS_HISTORY_DAYS"])


def query_hashes(query: str) -> list[str]:
    """The keyed hashes of a query's terms, as the regret check computes them."""
    return list(dict.fromkeys(feedback.term_hash(t) for t in search_text.query_words(query)))


def note_search(
    app_name: str, user_id: str, term_hashes: list[str], record_ids: Sequence[int], now: datetime
) -> None:
    """Keep one search (made at ``now``), unless an erasure of the user came after it:
    an answer read before the erasure whose note is written after it must not bring the
    subject back. Never raises: a lost history row must not fail a user's turn."""
    try:
        with transaction.atomic():
            write_buffered_history(app_name, user_id, [history_entry(term_hashes, record_ids, now)])
    except Exception:
        log.exception("search history write failed; search result unaffected")


def history_entry(term_hashes: list[str], record_ids: Sequence[int], now: datetime) -> str:
    """One search as the touch buffer keeps it until a flush writes it (JSON text)."""
    ids = [int(i) for i in record_ids[:KEPT_RESULTS]]
    return json.dumps([now.isoformat(), ids, term_hashes])


def write_buffered_history(app_name: str, user_id: str, entries: Sequence[str]) -> int:
    """Write searches (kept by the touch buffer, or just made), except those made before
    an erasure of the user: a flush that read them before the erasure deleted its keys,
    or a search answered before it, must not bring them back. Inside a transaction (it
    holds the subject lock shared, as an ingest does, so a barrier raised meanwhile
    waits for it)."""
    if not entries:
        return 0
    barrier = erasure_guard.barrier_held(app_name, user_id)
    return write_history(app_name, user_id, entries, not_before=barrier and barrier[0])


def write_history(
    app_name: str, user_id: str, entries: Sequence[str], not_before: datetime | None = None
) -> int:
    """Write searches kept as ``history_entry`` text (made at or after ``not_before``)."""
    rows = []
    for entry in entries:
        at, ids, hashes = json.loads(entry)
        if not_before is not None and datetime.fromisoformat(at) < not_before:
            continue
        rows.append(
            SearchLog(
                app_name=app_name,
                user_id=user_id,
                searched_at=datetime.fromisoformat(at),
                record_ids=ids,
                term_hashes=hashes,
            )
        )
    SearchLog.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def note_evictions(app_name: str, victims: Sequence, now: datetime) -> int:
    """Keep replay metadata of victims about to be deleted (caller holds the lock)."""
    ids = [v.id for v in victims]
    rows = []
    known: dict[str, str] = {}  # a term's hash, once per call (a user's words repeat)
    for start in range(0, len(ids), 1000):
        for r in MemoryRecord.objects.filter(id__in=ids[start : start + 1000]).only(
            "id",
            "user_id",
            "content",
            "created_at",
            "last_accessed_at",
            "hits",
            "importance",
            "pinned",
            "due_at",
            "slot",
            "entry_timestamp",
            "importance_source",
            "importance_rule",
        ):
            information, informed = information_kept(
                r.content, r.importance_source, r.importance_rule
            )
            rows.append(
                EvictedRecord(
                    record_id=r.id,
                    app_name=app_name,
                    user_id=r.user_id,
                    evicted_at=now,
                    created_at=r.created_at,
                    last_accessed_at=r.last_accessed_at,
                    hits=r.hits,
                    importance=r.importance,
                    pinned=r.pinned,
                    due_at=r.due_at,
                    slot=r.slot or "",
                    stated_at=r.entry_timestamp,
                    term_hashes=record_hashes(r.content, known),
                    information=information,
                    informed=informed,
                )
            )
    EvictedRecord.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def information_kept(content: str, source: str, rule: str) -> tuple[float | None, bool]:
    """(``EvictedRecord.information``, ``informed``) of a record: the information score of
    its content when the policy's information_importance set its importance
    (``extract.follows_information``; in SQL: ``store._pg_evict``), and whether its
    importance is that score; else (None, False). A number, never the content."""
    if not follows_information(source, rule):
        return None, False
    return information_importance(content), rule == INFORMATION_RULE


def record_hashes(content: str, known: dict[str, str] | None = None) -> list[str]:
    """The keyed hashes of a record's terms, as ``feedback.remember_evicted`` keeps them.
    ``known``: term -> hash, filled as it goes, for a caller hashing many records at
    once (an eviction, the backtest's read); the caller drops it with the records' text."""
    terms = dict.fromkeys(feedback._terms(content))
    if known is None:
        return list(dict.fromkeys(feedback.term_hash(t) for t in terms))
    out = []
    for t in terms:
        h = known.get(t)
        if h is None:
            h = known[t] = feedback.term_hash(t)
        out.append(h)
    return list(dict.fromkeys(out))


def prune(now: datetime) -> int:
    """Delete history older than the retention; returns rows deleted."""
    cutoff = now - retention()
    deleted = SearchLog.objects.filter(searched_at__lt=cutoff).delete()[0]
    return deleted + EvictedRecord.objects.filter(evicted_at__lt=cutoff).delete()[0]
