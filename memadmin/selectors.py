"""Reading the audit log for its page: filtered, newest first, one page at a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from records.ids import decimal_id

from . import audit
from .models import AuditEntry

# Words for the keys entries hold; any other key reads with its underscores as spaces.
KEY_WORDS = {
    "max_records": "max records per user",
    "max_tokens": "max tokens per user",
    "ttl_days": "TTL (days)",
    "half_life_hours": "half-life (hours)",
    "w_recency": "recency weight",
    "w_frequency": "frequency weight",
    "w_importance": "importance weight",
    "session_idle_days": "session idle (days)",
    "importance_source": "importance set by",
    "dry_run": "dry-run",
    "as_of": "as of",
    "apply_run": "apply run",
    "sessions_pending": "sessions awaiting retirement",
    "records_pending": "records awaiting eviction",
    "sessions_to_retire": "sessions to retire",
    "records_to_evict": "records to evict",
    "kept": "records keeping their importance",
}


@dataclass(frozen=True)
class Change:
    """One key of an entry, in words: before → after when both sides hold it, else the
    one value (an entry's sides need not hold the same keys)."""

    label: str
    before: object
    after: object
    both: bool
    before_only: bool


@dataclass(frozen=True)
class AuditRow:
    entry: AuditEntry
    changes: list[Change]  # over the keys of both sides, in a stable order
    target_url: str | None  # the page of what the entry is about, when there is one


def _words(value) -> object:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return value


def _changes(before, after) -> list[Change]:
    before = before if isinstance(before, dict) else {}
    after = after if isinstance(after, dict) else {}
    keys = list(dict.fromkeys([*before, *after]))
    return [
        Change(
            label=KEY_WORDS.get(k, k.replace("_", " ")),
            before=_words(before.get(k)),
            after=_words(after.get(k)),
            both=k in before and k in after,
            before_only=k in before and k not in after,
        )
        for k in keys
    ]


def _target_url(entry: AuditEntry) -> str | None:
    """The page of the entry's target: the record's user, the policy, the run, the
    erasure. By URL name, so this module imports none of the apps it links to."""
    action, target, app = entry.action, entry.target, entry.app_name
    number = decimal_id(target.removeprefix("erasure #"))  # a record, run or erasure id
    try:
        if action in (audit.RECORD_PIN, audit.RECORD_UNPIN, audit.RECORD_IMPORTANCE):
            if app and entry.user_id:
                url = reverse("records:user", args=[app, entry.user_id])
                return f"{url}#record-{target}" if number is not None else url
        elif action in (audit.POLICY_CREATE, audit.POLICY_UPDATE) and app:
            return reverse("records:policy", args=[app])
        elif action == audit.RULE_CHANGE:
            url = reverse("records:rules")
            return f"{url}?{urlencode({'app': app})}" if app else url
        elif action in (audit.RUN_START, audit.PLAN_APPLY) and number is not None:
            return reverse("sweeper:run", args=[number])
        elif action == audit.ERASURE_SUBMIT and number is not None:
            return reverse("erasure:detail", args=[number])
    except NoReverseMatch:  # a user id no URL can hold: the text, unlinked
        return None
    return None


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
    if until and until < date.max:  # the last day there is: no end to filter by
        qs = qs.filter(created_at__lt=_start_of(until + timedelta(days=1)))
    page_obj = Paginator(qs.order_by("-created_at", "-id"), per_page).get_page(page)
    page_obj.object_list = [
        AuditRow(e, _changes(e.before, e.after), _target_url(e)) for e in page_obj.object_list
    ]
    return page_obj
