"""Dry-run previews: who the policy would evict now, or under other values. Read-only.

Two entry points, kept small on purpose; both use the database-side selection that
enforcement runs (``records.victims``), so a preview shows exactly what enforcement
would do, and large users and apps are never loaded into Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .models import MemoryRecord
from .policy import PolicyParams, Victim
from .victims import count_victims, select_victims


def preview_user_victims(
    app_name: str, user_id: str, params: PolicyParams, now: datetime
) -> list[tuple[MemoryRecord, Victim]]:
    """The records ``params`` would evict from this user at ``now``, in eviction order.

    The database-side selection (the same one enforcement uses) picks the victims, so a
    user with 100k records is never loaded into Python; one more query fetches only
    the victims' rows for display.
    """
    selected = select_victims(app_name, [user_id], now, params)
    by_id = MemoryRecord.objects.in_bulk([v.id for v in selected])
    return [
        (by_id[v.id], Victim(v.id, v.reason, v.score, v.tokens)) for v in selected if v.id in by_id
    ]


@dataclass(frozen=True)
class PolicyImpact:
    records: int = 0
    users: int = 0
    tokens: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


def policy_impact(app_name: str, params: PolicyParams, now: datetime) -> PolicyImpact:
    """What ``params`` would evict across every user of the app at ``now``.

    Counted in the database from the same set-based selection enforcement runs.
    """
    totals = count_victims(app_name, None, now, params)
    return PolicyImpact(
        records=totals.records,
        users=totals.users,
        tokens=totals.tokens,
        by_reason=totals.by_reason,
    )
