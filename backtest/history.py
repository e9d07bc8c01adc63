"""Selectors: the access history of an app's users, as the replay takes it. Read only."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from django.db import connection
from django.db.models import Min, QuerySet

from records import access_log
from records.models import (
    POLICY_FIELDS,
    POLICY_RECORD_FIELDS,
    EvictionEvent,
    MemoryRecord,
    Policy,
    PolicyVersion,
    UserMemoryStats,
)

from .replay import RecordHistory, Schedule, Search

USER_BATCH = 200
CHUNK = 2000
# MemoryRecord columns in RecordHistory's order: the ones as_policy_record reads.
_RECORD_COLUMNS = POLICY_RECORD_FIELDS
_EVICTED_COLUMNS = (
    "record_id",
    "user_id",
    "evicted_at",
    "created_at",
    "last_accessed_at",
    "hits",
    "importance",
    "pinned",
    "due_at",
    "slot",
    "stated_at",
    "term_hashes",
    "information",
    "informed",
)


def _rows(queryset: QuerySet) -> Iterator[tuple]:
    """The rows of a ``values_list`` query, in chunks. On PostgreSQL they come through
    a cursor of their own that parses timestamps with ``datetime.fromisoformat`` (C):
    Django's loader, psycopg's pure-Python one, took half the read's time. JSON columns
    then come as text: ``_json`` reads them."""
    if connection.vendor != "postgresql":
        yield from queryset.iterator(chunk_size=CHUNK)
        return
    from psycopg.adapt import Loader

    class IsoTimestamptz(Loader):
        def load(self, data) -> datetime:
            moment = datetime.fromisoformat(bytes(data).decode())
            return moment if moment.tzinfo is UTC else moment.astimezone(UTC)

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's: its loaders are its own
        raw.adapters.register_loader("timestamptz", IsoTimestamptz)
        raw.execute(sql, params)
        while rows := raw.fetchmany(CHUNK):
            yield from rows


def _json(value):
    return json.loads(value) if isinstance(value, str | bytes) else value


def users(app_name: str, start: datetime) -> list[str]:
    """Every user with records now, or with history in the window."""
    found = set(UserMemoryStats.objects.filter(app_name=app_name).values_list("user_id", flat=True))
    for model, moment in (
        (access_log.SearchLog, "searched_at"),
        (access_log.EvictedRecord, "evicted_at"),
    ):
        found.update(
            model.objects.filter(app_name=app_name, **{f"{moment}__gte": start})
            .order_by()
            .values_list("user_id", flat=True)
            .distinct()
        )
    return sorted(found)


def has_history(app_name: str, start: datetime, end: datetime) -> bool:
    """Whether anything happened in [start, end): a search, an eviction or a write."""
    return (
        access_log.SearchLog.objects.filter(
            app_name=app_name, searched_at__gte=start, searched_at__lt=end
        ).exists()
        or EvictionEvent.objects.filter(
            app_name=app_name, evicted_at__gte=start, evicted_at__lt=end
        ).exists()
        or MemoryRecord.objects.filter(
            app_name=app_name, created_at__gte=start, created_at__lt=end
        ).exists()
    )


def schedule(app_name: str) -> tuple[Schedule, list[tuple[datetime, int]]]:
    """The app's policy versions as they took effect, and (moment, version) of each."""
    versions = list(
        PolicyVersion.objects.filter(app_name=app_name).order_by("created_at", "version")
    )
    if not versions:
        current = Policy.objects.filter(app_name=app_name).first() or Policy(app_name=app_name)
        return Schedule.fixed(current.params()), []
    # A version was in effect by its first logged eviction at the latest, even when it
    # was saved later by the wall clock (history written on a fixed clock, as the demo's).
    first_used = dict(
        EvictionEvent.objects.filter(app_name=app_name, policy_version__isnull=False)
        .values("policy_version")
        .annotate(first=Min("evicted_at"))
        .values_list("policy_version", "first")
    )
    moments = [min(v.created_at, first_used.get(v.version, v.created_at)) for v in versions]
    for i in range(len(moments) - 2, -1, -1):  # each in effect before the next
        moments[i] = min(moments[i], moments[i + 1])
    changes = []
    for v, moment in zip(versions, moments, strict=True):
        values = {k: v.values[k] for k in POLICY_FIELDS if k in v.values}
        changes.append((moment, Policy(app_name=app_name, **values).params()))
    return Schedule(tuple(changes)), [
        (moment, v.version) for v, moment in zip(versions, moments, strict=True)
    ]


def user_histories(
    app_name: str, user_ids: Sequence[str], start: datetime, since: datetime, now: datetime
) -> Iterator[tuple[str, list[RecordHistory], list[Search], int]]:
    """(user, records, searches since ``since``, evictions without replay metadata) for
    each user, a batch of users a few queries."""
    for first in range(0, len(user_ids), USER_BATCH):
        batch = list(user_ids[first : first + USER_BATCH])
        searches: dict[str, list[Search]] = defaultdict(list)
        logged = access_log.SearchLog.objects.filter(
            app_name=app_name, user_id__in=batch, searched_at__gte=since
        ).order_by("searched_at", "id")
        for s in _rows(logged.values_list("user_id", "searched_at", "record_ids", "term_hashes")):
            searches[s[0]].append(Search(s[1], tuple(_json(s[2])), frozenset(_json(s[3]))))
        # Only a hash some search has can match: the others are not kept.
        wanted = {h for found in searches.values() for s in found for h in s.term_hashes}
        records = _live_records(app_name, batch, now, wanted)
        events = {
            e[0]: e
            for e in EvictionEvent.objects.filter(
                app_name=app_name, user_id__in=batch, evicted_at__gte=start
            ).values_list("record_id", "user_id", "reason", "tokens")
        }
        kept = access_log.EvictedRecord.objects.filter(
            app_name=app_name, user_id__in=batch, evicted_at__gte=start
        ).values_list(*_EVICTED_COLUMNS)
        for row in _rows(kept):
            (record_id, user_id, evicted_at, created, last, hits, importance, pinned, due, slot,
             stated, hashes, information, informed) = row  # fmt: skip
            event = events.pop(record_id, None)
            if event is None:
                continue  # erased meanwhile, or never logged: nothing to replay
            records[user_id].append(
                RecordHistory(
                    id=record_id,
                    created_at=created,
                    importance=importance,
                    pinned=pinned,
                    tokens=event[3],
                    hits=hits,
                    last_accessed_at=last,
                    known_at=evicted_at,
                    due_at=due,
                    slot=slot,
                    stated_at=stated,
                    removed_at=evicted_at,
                    removed_reason=event[2],
                    term_hashes=frozenset(h for h in _json(hashes) if h in wanted),
                    information=information,
                    informed=informed,
                )
            )
        missing: dict[str, int] = defaultdict(int)
        for event in events.values():  # evicted before the history was kept
            missing[event[1]] += 1
        for user_id in batch:
            yield user_id, records[user_id], searches[user_id], missing[user_id]


def _live_records(
    app_name: str, batch: list[str], now: datetime, wanted: set[str]
) -> dict[str, list[RecordHistory]]:
    """The batch's live records, with the hashes of their terms that are in ``wanted``.

    Tuples, not model instances: the read is a large part of a backtest's time. The
    content is read only to hash its terms (keyed, as an eviction keeps them) and score its
    information (``RecordHistory.information``): the
    regret rule charges the policy that ran and each candidate alike, so it needs the
    term hashes of the records still held too. Neither the text nor the term -> hash
    memo (most terms recur across a batch: hashing was a seventh of a backtest) leaves
    this call.
    """
    records: dict[str, list[RecordHistory]] = defaultdict(list)
    known: dict[str, str] = {}
    live = MemoryRecord.objects.filter(app_name=app_name, user_id__in=batch).values_list(
        "user_id", *_RECORD_COLUMNS, "content", "importance_source", "importance_rule"
    )
    for user_id, *row in _rows(live):
        (id_, created, last, hits, importance, pinned, tokens, due, slot, stated, text, source,
         rule) = row  # fmt: skip
        hashes = access_log.record_hashes(text, known)
        information, informed = access_log.information_kept(text, source, rule)
        records[user_id].append(
            RecordHistory(
                id=id_,
                created_at=created,
                importance=importance,
                pinned=pinned,
                tokens=tokens,
                hits=hits,
                last_accessed_at=last,
                known_at=now,
                due_at=due,
                slot=slot or "",
                stated_at=stated,
                term_hashes=frozenset(h for h in hashes if h in wanted),
                # As an eviction keeps it (records.models.EvictedRecord.information).
                information=information,
                informed=informed,
            )
        )
    return records
