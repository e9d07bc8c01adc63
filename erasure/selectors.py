"""Erasure figures for /metrics: how many requests are open, and since when."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min

from .models import OPEN_STATUSES, ErasureRequest


def open_backlog(now: datetime) -> tuple[dict[str, int], float]:
    """(open requests per status, age in seconds of the oldest open request or 0)."""
    open_requests = ErasureRequest.objects.filter(status__in=OPEN_STATUSES)
    per_status = dict.fromkeys((str(s) for s in OPEN_STATUSES), 0)
    for row in open_requests.values("status").annotate(n=Count("id")).order_by():
        per_status[row["status"]] = row["n"]
    oldest = open_requests.aggregate(oldest=Min("submitted_at"))["oldest"]
    return per_status, max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
