"""Dry-run previews: who the policy would evict now, or under other values. Read-only.

Two entry points, kept small on purpose: their bodies run the pure policy over the
records in Python today and can be swapped for a database-side selection (the store's
SQL scoring) without touching the pages that call them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby

from .models import MemoryRecord
from .policy import HybridPolicy, PolicyParams, Record, Victim

POLICY_COLUMNS = ("id", "created_at", "last_accessed_at", "hits", "importance", "pinned", "tokens")


def preview_user_victims(
    app_name: str, user_id: str, params: PolicyParams, now: datetime
) -> list[tuple[MemoryRecord, Victim]]:
    """The records ``params`` would evict from this user at ``now``, in eviction order.

    One query: the user's records are read whole (a user is bounded by the caps), which
    keeps the query count flat however many victims there are.
    """
    by_id = {r.pk: r for r in MemoryRecord.objects.filter(app_name=app_name, user_id=user_id)}
    victims = HybridPolicy(params).victims([r.as_policy_record() for r in by_id.values()], now)
    return [(by_id[v.id], v) for v in victims]


@dataclass(frozen=True)
class PolicyImpact:
    records: int = 0
    users: int = 0
    tokens: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


def policy_impact(app_name: str, params: PolicyParams, now: datetime) -> PolicyImpact:
    """What ``params`` would evict across every user of the app at ``now``.

    One streamed query over the app's records (metadata only), grouped by user.
    """
    rows = (
        MemoryRecord.objects.filter(app_name=app_name)
        .order_by("user_id")
        .values_list("user_id", *POLICY_COLUMNS)
        .iterator(chunk_size=5000)
    )
    policy = HybridPolicy(params)
    records = users = tokens = 0
    reasons: Counter[str] = Counter()
    for _user, user_rows in groupby(rows, key=lambda row: row[0]):
        victims = policy.victims([Record(*row[1:]) for row in user_rows], now)
        if victims:
            users += 1
            records += len(victims)
            tokens += sum(v.tokens for v in victims)
            reasons.update(v.reason for v in victims)
    return PolicyImpact(records=records, users=users, tokens=tokens, by_reason=dict(reasons))
