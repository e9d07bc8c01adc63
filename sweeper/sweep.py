"""Retiring idle sessions: ingest, then artifacts, then the session.

Compaction never deletes events, so sessions need their own retirement. For each
session idle past the app's threshold: fetch it whole (listing omits events), ingest
it into memory, delete its artifacts while they can still be enumerated, keep a
tombstone so record provenance still resolves, and only then delete it. Every step is
idempotent, so a worker killed anywhere in between retires the session exactly once on
the re-run and creates no duplicate record.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from records import artifacts as artifact_store
from records import erasure_guard, store
from records import sessions as session_store
from records.locks import user_lock
from records.memory_service import add_session
from records.models import AgentSession, EvictionEvent, MemoryRecord, RetiredSession
from records.policies import policy_for, policy_or_default
from records.policy import idle_cutoff, session_idle
from records.policy_sql import idle_q
from records.simulation import simulation

from .models import EntryKind, ItemKind, PlanEntry, Run, WorkItem

log = logging.getLogger(__name__)


def app_idle_cutoff(app_name: str, now: datetime) -> float:
    # Read, never created: an app whose agents only used sessions has no policy yet, and
    # a dry-run changes nothing (the real sweep's ingest makes it when it writes).
    return idle_cutoff(now, policy_or_default(app_name).session_idle_days)


def sweep_apps(run: Run) -> list[str]:
    if run.app_name:
        return [run.app_name]
    return list(AgentSession.objects.values_list("app_name", flat=True).distinct().order_by())


def plan_items(run: Run) -> list[WorkItem]:
    """One item per user with idle sessions (as of the run's clock)."""
    items = []
    for app_name in sorted(sweep_apps(run)):
        users = (
            AgentSession.objects.filter(
                idle_q(app_idle_cutoff(app_name, run.as_of), run.as_of), app_name=app_name
            )
            .values_list("user_id", flat=True)
            .distinct()
            .order_by("user_id")
        )
        items.extend(
            WorkItem(run=run, kind=ItemKind.SESSIONS, app_name=app_name, user_id=u) for u in users
        )
    return items


def idle_session_ids(app_name: str, user_id: str, now: datetime) -> list[str]:
    return list(
        AgentSession.objects.filter(
            idle_q(app_idle_cutoff(app_name, now), now), app_name=app_name, user_id=user_id
        )
        .order_by("last_update_time", "session_id")
        .values_list("session_id", flat=True)
    )


def retire_session(
    app_name: str,
    user_id: str,
    session_id: str,
    now: datetime,
    *,
    run_id: int | None = None,
    enforce: bool = True,
    expect_update_time: float | None = None,
) -> str:
    """Ingest → delete artifacts → tombstone + delete. Returns what happened.

    ``expect_update_time`` (applying a plan) refuses a session that changed since.
    """
    session = session_store.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    if session is None:
        retired = RetiredSession.objects.filter(
            app_name=app_name, user_id=user_id, session_id=session_id
        ).exists()
        return "already retired" if retired else "missing"
    if expect_update_time is not None and session.last_update_time != expect_update_time:
        return "active since the preview"
    if not session_idle(session.last_update_time, now, policy_for(app_name).session_idle_days):
        return "active again"
    if enforce:
        add_session(session, now)
    else:  # applying a plan: evict exactly the plan's victims, nothing else
        candidates = store.extractor_for(app_name).from_events(
            app_name, user_id, session_id, session.events
        )
        store.ingest(app_name, user_id, candidates, now, run_id=run_id, enforce=False)
    artifact_store.delete_session_artifacts(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    with user_lock(app_name, user_id):
        row = AgentSession.objects.filter(
            app_name=app_name, user_id=user_id, session_id=session_id
        ).first()
        if row is None:
            return "already retired"
        RetiredSession.objects.update_or_create(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            defaults={
                "created_at": row.created_at,
                "last_update_time": row.last_update_time,
                "event_count": row.event_count,
                "retired_at": now,
                "run_id": run_id,
            },
        )
        session_store.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)
    return "retired"


def retire_user_sessions(item: WorkItem, now: datetime) -> str:
    outcomes: dict[str, int] = {}
    for session_id in idle_session_ids(item.app_name, item.user_id, now):
        outcome = retire_session(item.app_name, item.user_id, session_id, now, run_id=item.run_id)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items())) or "nothing idle"


def retired_totals(item: WorkItem) -> dict:
    """Sessions this item's run retired for its user, by every attempt: the tombstones
    count the ones an attempt killed half-way retired before it died."""
    retired = RetiredSession.objects.filter(
        app_name=item.app_name, user_id=item.user_id, run_id=item.run_id
    ).count()
    return {"sessions_retired": retired}


# --- dry-run ------------------------------------------------------------------------------


class _Rollback(Exception):
    """Leaves a simulation's transaction, discarding everything it wrote."""


def preview_user_sessions(item: WorkItem, as_of: datetime) -> str:
    """Store what retiring this user's idle sessions would do; change nothing.

    The sweep's own code runs inside a transaction that is then rolled back, so the
    report shows exactly the victims the real sweep would choose at ``as_of``.
    """
    app_name, user_id, run_id = item.app_name, item.user_id, item.run_id
    started_at = timezone.now()  # before anything of the user is read
    entries: list[PlanEntry] = []
    sessions = [
        session_store.get_session(app_name=app_name, user_id=user_id, session_id=sid)
        for sid in idle_session_ids(app_name, user_id, as_of)
    ]
    sessions = [s for s in sessions if s is not None]
    existing = stored_importance(app_name, [user_id])
    try:
        with transaction.atomic(), simulation():
            victims = []
            for session in sessions:
                victims.extend(add_session(session, as_of).evicted)
            versions = policy_versions_used(app_name, victims)
            raise _Rollback
    except _Rollback:
        pass
    for session in sessions:
        entries.append(
            PlanEntry(
                run_id=run_id,
                kind=EntryKind.SESSION,
                app_name=app_name,
                user_id=user_id,
                session_id=session.id,
                reason="idle",
                snapshot={
                    "last_update_time": session.last_update_time,
                    "events": len(session.events),
                },
            )
        )
    entries.extend(_record_entries(run_id, app_name, victims, existing, versions))
    replace_plan_entries(run_id, app_name, [user_id], entries, started_at=started_at)
    return f"{len(sessions)} session(s), {len(victims)} record(s) would go"


def replace_plan_entries(
    run_id: int, app_name: str, user_ids: list[str], entries, *, started_at: datetime
) -> None:
    """Store an item's report lines; a retried item replaces, not repeats, an earlier
    attempt's (its worker may have died after writing them).

    Lines about a user whose erasure had not finished deleting at ``started_at`` (when
    the item began reading) are not written: they may describe erased data, and
    writing them after the erasure would bring the subject back
    (``erasure_guard.erased_since``, under the subject locks)."""
    with transaction.atomic():
        erased = erasure_guard.erased_since(app_name, user_ids, started_at)
        if erased:
            log.info("dry-run lines of %d erased user(s) not written", len(erased))
        PlanEntry.objects.filter(run_id=run_id, app_name=app_name, user_id__in=user_ids).delete()
        PlanEntry.objects.bulk_create([e for e in entries if e.user_id not in erased])


def planned_totals(run_id: int, app_name: str, user_ids: list[str]) -> dict:
    """What an item's report lines plan (dry-runs)."""
    rows = PlanEntry.objects.filter(run_id=run_id, app_name=app_name, user_id__in=user_ids)
    return rows.aggregate(
        sessions_planned=Count("id", filter=Q(kind=EntryKind.SESSION)),
        records_planned=Count("id", filter=Q(kind=EntryKind.RECORD)),
    )


def stored_importance(app_name: str, user_ids: list[str]) -> dict[int, float]:
    """The users' records (id -> stored importance) before a simulation: which victims
    exist, and what ``plans`` compares on apply to see a record re-scored since."""
    rows = MemoryRecord.objects.filter(app_name=app_name, user_id__in=user_ids)
    return dict(rows.values_list("id", "importance"))


def policy_versions_used(app_name: str, victims) -> dict[int, int | None]:
    """Inside a simulation, before its rollback: the policy version each victim's
    eviction was logged with (the policy that chose it), for ``plans`` to log the same
    when the plan is applied, whatever the policy is by then."""
    if not victims:
        return {}
    return dict(
        EvictionEvent.objects.filter(
            app_name=app_name, record_id__in=[v.id for v in victims]
        ).values_list("record_id", "policy_version")
    )


def _record_entries(
    run_id, app_name, victims, existing: dict[int, float], versions: dict[int, int | None]
) -> list[PlanEntry]:
    """Report lines for victims; ``existing`` is ``stored_importance`` before the
    simulation, ``versions`` ``policy_versions_used`` in it. The snapshot keeps the
    stored importance, not the score's term: that one decays once a commitment is past
    due, so it never equals the stored column."""
    out = []
    for v in victims:
        new = v.id not in existing
        out.append(
            PlanEntry(
                run_id=run_id,
                kind=EntryKind.RECORD,
                app_name=app_name,
                user_id=v.user_id,
                session_id=v.session_id,
                # a record the plan's own ingest would create has no id yet: find it by key
                record_id=None if new else v.id,
                dedupe_key=v.dedupe_key,
                reason=v.reason,
                recency=v.score.recency,
                frequency=v.score.frequency,
                importance=v.score.importance,
                score=v.score.total,
                tokens=v.tokens,
                snapshot={
                    "importance": existing.get(v.id),
                    "new": new,
                    "policy_version": versions.get(v.id),
                },
            )
        )
    return out
