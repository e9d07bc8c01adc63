"""Small builders for test rows (plain functions, no factory library)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from django.utils import timezone

from records.models import AgentSession, EvictionEvent, MemoryRecord, SessionEvent

_ids = itertools.count(1)


def make_record(app="app", user="alice", *, now=None, **fields) -> MemoryRecord:
    now = now or timezone.now()
    values = dict(
        app_name=app,
        user_id=user,
        content="note",
        created_at=now,
        last_accessed_at=now - timedelta(days=30),
        tokens=10,
        importance=0.5,
    )
    values.update(fields)
    return MemoryRecord.objects.create(**values)


def make_records(app, user, n, *, now=None, **fields) -> list[MemoryRecord]:
    now = now or timezone.now()
    values = dict(
        content="note",
        created_at=now,
        last_accessed_at=now - timedelta(days=30),
        tokens=10,
        importance=0.5,
    )
    values.update(fields)
    return MemoryRecord.objects.bulk_create(
        MemoryRecord(app_name=app, user_id=user, **values) for _ in range(n)
    )


def make_session(app="app", user="alice", *, session_id=None, idle_days=0.0, now=None, events=()):
    now = now or timezone.now()
    updated = now - timedelta(days=idle_days)
    session = AgentSession.objects.create(
        app_name=app,
        user_id=user,
        session_id=session_id or f"s-{next(_ids)}",
        created_at=updated - timedelta(hours=1),
        last_update_time=updated.timestamp(),
        event_count=len(events),
    )
    SessionEvent.objects.bulk_create(
        SessionEvent(
            session=session,
            position=i,
            event_id=data.get("id", f"e{i}"),
            author=data.get("author", ""),
            timestamp=data.get("timestamp", updated.timestamp()),
            is_compaction=bool(data.get("actions", {}).get("compaction")),
            data=data,
        )
        for i, data in enumerate(events)
    )
    return session


def make_eviction(reason, when: datetime, app="app", user="alice") -> EvictionEvent:
    return EvictionEvent.objects.create(
        record_id=next(_ids), app_name=app, user_id=user, reason=reason, evicted_at=when
    )
