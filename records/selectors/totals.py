"""What is held now, per app, for /metrics: counts only, no user ids, no content."""

from __future__ import annotations

from django.db.models import Count, Sum

from ..models import EvictionEvent, UserMemoryStats


def held_by_app() -> dict[str, tuple[int, int]]:
    """app -> (records, tokens), from the trigger-kept per-user totals."""
    rows = (
        UserMemoryStats.objects.values("app_name")
        .annotate(records=Sum("records"), tokens=Sum("tokens"))
        .order_by()
    )
    return {r["app_name"]: (int(r["records"] or 0), int(r["tokens"] or 0)) for r in rows}


def evictions_by_app_and_reason() -> dict[tuple[str, str], int]:
    """(app, reason) -> eviction events recorded (they are kept, so this only grows)."""
    rows = EvictionEvent.objects.values("app_name", "reason").annotate(n=Count("id")).order_by()
    return {(r["app_name"], r["reason"]): r["n"] for r in rows}
