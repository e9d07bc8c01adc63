"""Reading the audit log for its page: filtered, newest first, one page at a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.core.paginator import Page, Paginator
from django.utils import timezone

from .models import AuditEntry


@dataclass(frozen=True)
class AuditRow:
    entry: AuditEntry
    # (key, before, after) over the keys of both sides, in a stable order.
    changes: list[tuple[str, object, object]]


def _changes(before, after) -> list[tuple[str, object, object]]:
    before = before if isinstance(before, dict) else {}
    after = after if isinstance(after, dict) else {}
    keys = list(dict.fromkeys([*before, *after]))
    return [(k, before.get(k), after.get(k)) for k in keys]


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def audit_page(
    *,
    action: str = "",
    actor: str = "",
    app_name: str = "",
    user_id: str = "",
    since: date | None = None,
    until: date | None = None,
    page: int | str = 1,
    per_page: int = 50,
) -> Page:
    """Entries matching every given filter; ``until`` includes that whole day. Two queries."""
    qs = AuditEntry.objects.all()
    if action:
        qs = qs.filter(action=action)
    if actor:
        qs = qs.filter(actor_username=actor)
    if app_name:
        qs = qs.filter(app_name=app_name)
    if user_id:
        qs = qs.filter(user_id=user_id)
    if since:
        qs = qs.filter(created_at__gte=_start_of(since))
    if until:
        qs = qs.filter(created_at__lt=_start_of(until + timedelta(days=1)))
    page_obj = Paginator(qs.order_by("-created_at", "-id"), per_page).get_page(page)
    page_obj.object_list = [AuditRow(e, _changes(e.before, e.after)) for e in page_obj.object_list]
    return page_obj
