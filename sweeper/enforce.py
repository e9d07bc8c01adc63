"""Cap enforcement across users, so TTL expiry happens even for users who stop writing.

The pass finds the users that need work with one aggregate per app (over a cap, or
holding expired records); most users need nothing and cost only their share of that
scan. Those users are enforced in batches: each batch is one task, takes its users'
locks in key order and selects all their victims with one set-based statement.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from records import store
from records.models import EvictionEvent, MemoryRecord
from records.policies import policy_for
from records.policy_sql import expired_q, live_q
from records.simulation import simulation

from .models import ItemKind, Run, WorkItem
from .sweep import (
    _record_entries,
    _Rollback,
    policy_versions_used,
    replace_plan_entries,
    stored_importance,
)


def default_batch_size() -> int:
    return settings.MEMADMIN["ENFORCE_BATCH"]


def enforce_apps(run: Run) -> list[str]:
    if run.app_name:
        return [run.app_name]
    return apps_with_records()


def apps_with_records() -> list[str]:
    """Every app holding records, in name order, by skipping along the (app, ...) index.

    A recursive "loose index scan": one index probe per app instead of a DISTINCT over
    every record (with a million records, the difference is most of the planning).
    """
    table = MemoryRecord._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE apps(app_name) AS (
                SELECT min(app_name) FROM {table}
                UNION ALL
                SELECT (SELECT min(m.app_name) FROM {table} m WHERE m.app_name > apps.app_name)
                FROM apps WHERE apps.app_name IS NOT NULL
            )
            SELECT app_name FROM apps WHERE app_name IS NOT NULL
            """  # noqa: S608 - the table name is the model's
        )
        return [row[0] for row in cursor.fetchall()]


def users_needing_work(app_name: str, now: datetime) -> list[str]:
    """Users over a cap or holding expired records, in one aggregate over the app."""
    params = policy_for(app_name).params()
    live = live_q(now, params)
    expired = expired_q(now, params)
    rows = (
        MemoryRecord.objects.filter(app_name=app_name)
        .values("user_id")
        .annotate(
            n=Count("id", filter=live),
            s=Sum("tokens", filter=live),
            expired=Count("id", filter=expired),
        )
        .filter(Q(n__gt=params.max_records) | Q(s__gt=params.max_tokens) | Q(expired__gt=0))
        .order_by("user_id")
        .values_list("user_id", flat=True)
    )
    return list(rows)


def plan_items(run: Run, size: int | None = None) -> list[WorkItem]:
    items = []
    batch_size = size or default_batch_size()
    for app_name in enforce_apps(run):
        users = users_needing_work(app_name, run.as_of)
        for start in range(0, len(users), batch_size):
            items.append(
                WorkItem(
                    run=run,
                    kind=ItemKind.USERS,
                    app_name=app_name,
                    users=users[start : start + batch_size],
                )
            )
    return items


def enforce_users(item: WorkItem, now: datetime) -> str:
    victims = store.enforce_many(item.app_name, item.users, now, run_id=item.run_id)
    return f"{len(victims)} evicted from {len(item.users)} user(s)"


def enforced_totals(item: WorkItem, done: bool) -> dict:
    """The evictions this item's run recorded for its users (a batch is one transaction:
    a failed one evicted nothing)."""
    evicted = EvictionEvent.objects.filter(
        app_name=item.app_name, user_id__in=item.users, run_id=item.run_id
    ).count()
    return {"users_enforced": len(item.users) if done else 0, "records_evicted": evicted}


def preview_users(item: WorkItem, as_of: datetime) -> str:
    """Store what enforcing these users at ``as_of`` would evict; change nothing."""
    started_at = timezone.now()  # before anything of the users is read
    existing = stored_importance(item.app_name, item.users)
    try:
        with transaction.atomic(), simulation():
            victims = store.enforce_many(item.app_name, item.users, as_of)
            versions = policy_versions_used(item.app_name, victims)
            raise _Rollback
    except _Rollback:
        pass
    entries = _record_entries(item.run_id, item.app_name, victims, existing, versions)
    replace_plan_entries(item.run_id, item.app_name, item.users, entries, started_at=started_at)
    return f"{len(victims)} record(s) would go"
