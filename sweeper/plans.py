"""Applying a reviewed dry-run plan: exactly its victims, and nothing else.

Each user's part is applied in one task: its sessions first (retired without the
usual enforcement), then its records, evicted with the reasons and scores the preview
showed. An entry that went stale since the preview is refused with a message and
changes nothing: a record pinned, re-scored or already gone; a session that was used
again or no longer exists. A dry-run that looked ahead (as of a later date) cannot be
applied before that date: its TTL victims are not due yet.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from records import store
from records.locks import user_lock
from records.models import MemoryRecord
from records.policies import policy_for
from records.policy import Score
from records.victims import SelectedVictim

from .models import ApplyStatus, EntryKind, ItemKind, PlanEntry, Run, RunStatus, WorkItem
from .sweep import retire_session


class PlanError(ValueError):
    """The plan cannot be applied; the message says why."""


def check_appliable(plan: Run) -> None:
    if not plan.dry_run:
        raise PlanError(f"Run #{plan.pk} is not a dry-run; only a dry-run's plan can be applied.")
    if plan.status != RunStatus.DONE:
        raise PlanError(f"Dry-run #{plan.pk} is {plan.status}; wait until it is done.")
    if Run.objects.filter(plan=plan).exists():
        raise PlanError(f"The plan of dry-run #{plan.pk} was applied already.")
    if plan.as_of > timezone.now():
        # Its victims are what would go then (records expired by that date): applied now,
        # they would be evicted early, and logged as expired.
        raise PlanError(
            f"Dry-run #{plan.pk} looked ahead to {plan.as_of:%Y-%m-%d %H:%M} UTC; its plan "
            "evicts what would go then. Apply it from then on, or start a dry-run as of now."
        )


def plan_items(run: Run) -> list[WorkItem]:
    users = (
        PlanEntry.objects.filter(run=run.plan, apply_status=ApplyStatus.PENDING)
        .values_list("app_name", "user_id")
        .distinct()
        .order_by("app_name", "user_id")
    )
    return [
        WorkItem(run=run, kind=ItemKind.APPLY_USER, app_name=app, user_id=user)
        for app, user in users
    ]


def _refuse(entry: PlanEntry, message: str) -> None:
    entry.apply_status, entry.apply_message = ApplyStatus.REFUSED, message
    entry.save(update_fields=["apply_status", "apply_message"])


def apply_user(item: WorkItem, now: datetime) -> str:
    run = item.run
    entries = list(
        PlanEntry.objects.filter(
            run=run.plan,
            app_name=item.app_name,
            user_id=item.user_id,
            apply_status=ApplyStatus.PENDING,
        )
    )
    applied = refused = 0
    refused_sessions: set[str] = set()
    for entry in (e for e in entries if e.kind == EntryKind.SESSION):
        outcome = retire_session(
            entry.app_name,
            entry.user_id,
            entry.session_id,
            now,
            run_id=run.id,
            enforce=False,
            expect_update_time=entry.snapshot.get("last_update_time"),
        )
        if outcome in ("retired", "already retired"):
            entry.apply_status, entry.apply_message = ApplyStatus.APPLIED, outcome
            entry.save(update_fields=["apply_status", "apply_message"])
            applied += 1
        else:
            _refuse(entry, f"Session {outcome}; left alone.")
            refused_sessions.add(entry.session_id)
            refused += 1

    record_entries = [e for e in entries if e.kind == EntryKind.RECORD]
    policy = policy_for(item.app_name)
    with user_lock(item.app_name, item.user_id):
        ids = [e.record_id for e in record_entries if e.record_id]
        keys = [e.dedupe_key for e in record_entries if not e.record_id and e.dedupe_key]
        current = {
            r.id: r
            for r in MemoryRecord.objects.filter(app_name=item.app_name, user_id=item.user_id)
            .filter(Q(id__in=ids) | Q(dedupe_key__in=keys))
            .only("id", "pinned", "importance", "dedupe_key", "tokens")
        }
        by_key = {r.dedupe_key: r for r in current.values() if r.dedupe_key}
        victims: dict[int | None, list[SelectedVictim]] = defaultdict(list)
        done = []
        for entry in record_entries:
            record = (
                current.get(entry.record_id) if entry.record_id else by_key.get(entry.dedupe_key)
            )
            problem = _stale(entry, record, refused_sessions)
            if problem:
                _refuse(entry, problem)
                refused += 1
                continue
            # Logged with the version of the policy that chose it in the preview (a
            # plan from before versions were kept: the current one).
            version = entry.snapshot.get("policy_version", policy.version)
            victims[version].append(
                SelectedVictim(
                    id=record.id,
                    user_id=item.user_id,
                    reason=entry.reason,
                    tokens=record.tokens,
                    score=Score(entry.recency, entry.frequency, entry.importance, entry.score),
                    dedupe_key=record.dedupe_key or "",
                )
            )
            done.append(entry)
        for version, chosen in victims.items():
            store.evict(item.app_name, chosen, now, policy_version=version, run_id=run.id)
        PlanEntry.objects.filter(id__in=[e.id for e in done]).update(
            apply_status=ApplyStatus.APPLIED, apply_message="evicted"
        )
        applied += len(done)
    return f"{applied} applied, {refused} refused"


def applied_totals(item: WorkItem) -> dict:
    """The plan's entries for this user applied or refused so far, by every attempt (an
    attempt killed half-way marked some before it died)."""
    return PlanEntry.objects.filter(
        run=item.run.plan, app_name=item.app_name, user_id=item.user_id
    ).aggregate(
        applied=Count("id", filter=Q(apply_status=ApplyStatus.APPLIED)),
        refused=Count("id", filter=Q(apply_status=ApplyStatus.REFUSED)),
    )


def _stale(entry: PlanEntry, record: MemoryRecord | None, refused_sessions: set[str]) -> str:
    if record is None:
        if entry.snapshot.get("new") and entry.session_id in refused_sessions:
            return "Its session was not retired, so this record was never created."
        return "The record no longer exists."
    if record.pinned:
        return "The record was pinned after the preview; it stays."
    if (
        entry.snapshot.get("importance") is not None
        and not entry.snapshot.get("new")
        and (record.importance != entry.snapshot["importance"])
    ):
        return "The record was re-scored after the preview; preview again."
    return ""
