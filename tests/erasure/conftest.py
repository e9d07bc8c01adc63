"""Fill every store for a subject through the real services, and scan everything after."""

from __future__ import annotations

import json
import threading

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection, connections
from django.test import override_settings
from django.utils import timezone
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from erasure.inventory import SUBJECT_STORES, Subject
from records import (
    access_log,
    artifacts,
    embeddings,
    feedback,
    memory_service,
    sessions,
    store,
    touches,
)
from records.models import MemoryRecord, RetiredSession

from ..records.factories import text_event


def populate(app: str, user: str, marker: str, *, now=None) -> dict[str, int]:
    """Data of (app, user) in every subject store; ``marker`` is in every piece of text.

    Returns the rows per store, as erasure should count them.
    """
    now = now or timezone.now()
    sid = f"s-{marker}"
    session = sessions.create_session(
        app_name=app,
        user_id=user,
        session_id=sid,
        state={"user:nickname": f"nick {marker}", "app:motd": "hello everyone", "step": 1},
    )
    for text in (
        f"I am allergic to penicillin {marker}",
        f"Deliver to 12 Elm Street {marker}",
        f"My favourite colour is green {marker}",
    ):
        sessions.append_event(session, text_event(text))
    full = sessions.get_session(app_name=app, user_id=user, session_id=sid)
    memory_service.add_session(full, now)
    memory_service.add_memories(
        app,
        user,
        [
            MemoryEntry(
                id=f"m-{marker}",
                content=types.Content(parts=[types.Part(text=f"Prefers email {marker}")]),
            )
        ],
        now,
    )
    # A summary whose provenance names the user's session.
    MemoryRecord.objects.create(
        app_name=app,
        user_id=user,
        content=f"Summary of earlier notes: likes green {marker}",
        is_summary=True,
        summary_sources=[{"record_id": 1, "session_id": sid}],
        created_at=now,
        last_accessed_at=now,
        tokens=8,
    )
    # Vectors of the records (MEMADMIN_EMBEDDER), back-filled: the favourite's goes
    # with it when it is evicted below.
    with override_settings(
        MEMADMIN={**settings.MEMADMIN, "EMBEDDER": "tests.embedders.bag_of_concepts"}
    ):
        embeddings.backfill(app_name=app)
    favourite = MemoryRecord.objects.get(
        app_name=app, user_id=user, content__startswith="My favourite"
    )
    store.delete_records(app, user, now, favourite.id)  # an EvictionEvent (manual)
    # The access history: a search (ids and keyed term hashes) and the evicted record above.
    # One in the database, one as the search leaves it (buffered in Redis when configured).
    query = f"penicillin allergy {marker}"
    access_log.note_search(app, user, access_log.query_hashes(query), [], now)
    memory_service.search_entries(app, user, query, now)
    feedback.remember_evicted(app, {favourite.id: user}, {favourite.id: favourite.content}, now)
    feedback.report_correction(app, user, now, session_id=sid, about="favourite colour")
    artifacts.save_artifact(
        app_name=app,
        user_id=user,
        filename="notes.txt",
        artifact=types.Part(text=f"notes {marker}"),
        session_id=sid,
    )
    artifacts.save_artifact(
        app_name=app,
        user_id=user,
        filename="user:profile.txt",
        artifact=types.Part(text=f"profile {marker}"),
    )
    RetiredSession.objects.create(
        app_name=app,
        user_id=user,
        session_id=f"old-{marker}",
        created_at=now,
        last_update_time=now.timestamp(),
        event_count=2,
        retired_at=now,
    )
    ids = list(MemoryRecord.objects.filter(app_name=app, user_id=user).values_list("id", flat=True))
    touches.record_touches(app, user, ids, now)
    # The sweeper's rows naming the user: a dry-run report line and work items.
    from memadmin.models import AuditEntry
    from sweeper.models import ItemKind, PlanEntry, Run, RunKind, WorkItem

    run = Run.objects.create(kind=RunKind.SWEEP, dry_run=True, as_of=now, total=2)
    PlanEntry.objects.create(run=run, kind="session", app_name=app, user_id=user, session_id=sid)
    WorkItem.objects.create(run=run, kind=ItemKind.SESSIONS, app_name=app, user_id=user)
    WorkItem.objects.create(run=run, kind=ItemKind.USERS, app_name=app, users=[user])
    # A staff audit entry about the user (kept, but must stop naming them).
    AuditEntry.objects.create(
        actor_username="support", action="pin", app_name=app, user_id=user, target=str(ids[0])
    )
    return subject_counts(Subject(app, user))


def subject_counts(subject: Subject) -> dict[str, int]:
    return {s.label: s.rows(subject).count() for s in SUBJECT_STORES}


def rows_mentioning(*needles: str) -> list[tuple[str, dict]]:
    """Every row of every model (through the app registry) whose values contain a needle."""
    hits = []
    for model in apps.get_models(include_auto_created=True):
        for row in model.objects.values():
            text = json.dumps(
                row,
                default=lambda v: (
                    bytes(v).decode("utf-8", "replace")
                    if isinstance(v, bytes | memoryview)
                    else str(v)
                ),
                ensure_ascii=False,
            )
            if any(n in text for n in needles):
                hits.append((model._meta.label, row))
    return hits


def fts_terms(*terms: str) -> list[str]:
    """SQLite only: terms still present in the full-text index's own vocabulary."""
    if connection.vendor != "sqlite":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.erasure_vocab "
            "USING fts5vocab(main, records_memoryrecord_fts, 'row')"
        )
        found = []
        for term in terms:
            cursor.execute("SELECT term FROM temp.erasure_vocab WHERE term = %s", [term.lower()])
            found += [r[0] for r in cursor.fetchall()]
        return found


def redis_entries(app: str, user: str) -> list[str]:
    """Redis keys (anywhere under memadmin:) whose name or members name exactly (app, user)."""
    client = touches.redis_client()
    if client is None:
        return []
    member = touches.member(app, user)
    found = []
    for raw in client.scan_iter(match="memadmin:*", count=1000):
        key = raw.decode("utf-8", "replace")
        kind = client.type(raw).decode()
        members = []
        if kind == "set":
            members = [m.decode("utf-8", "replace") for m in client.smembers(raw)]
        elif kind == "hash":
            members = [m.decode("utf-8", "replace") for m in client.hkeys(raw)]
        elif kind == "zset":
            members = [m.decode("utf-8", "replace") for m in client.zrange(raw, 0, -1)]
        if key.endswith(":" + member) or member in members:
            found.append(key)
    return found


@pytest.fixture
def run_in_threads():
    """Run callables at once (a barrier, not sleeps), each with its own connection."""

    def run(workers):
        barrier = threading.Barrier(len(workers))
        results, errors = [None] * len(workers), []

        def wrap(i, work):
            try:
                barrier.wait(timeout=30)
                results[i] = work()
            except BaseException as exc:  # re-raised in the test's thread
                errors.append(exc)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=wrap, args=(i, w)) for i, w in enumerate(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a worker hung"
        if errors:
            raise errors[0]
        return results

    return run
