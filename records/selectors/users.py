"""The users list: one query per page over the per-user totals, whatever the number of
users or records."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Q

from .. import policy as pure
from ..models import Policy, UserMemoryStats

# Sort key -> aggregate or column, with its natural direction (biggest first for numbers).
USER_SORTS = {
    "records": "-records",
    "tokens": "-tokens",
    "pinned": "-pinned",
    "activity": "-last_written",
    "user": "user_id",
    "app": "app_name",
}


def natural_descending(sort: str) -> bool:
    return USER_SORTS[sort].startswith("-")


@dataclass(frozen=True)
class UserRow:
    app_name: str
    user_id: str
    records: int
    tokens: int
    pinned: int
    last_written: object
    max_records: int
    max_tokens: int

    @property
    def cap_use(self) -> float:
        """The fuller of the two caps, as a fraction (may exceed 1 before enforcement)."""
        return max(self.records / self.max_records, self.tokens / self.max_tokens)

    @property
    def cap_percent(self) -> int:
        return round(self.cap_use * 100)


def user_page(
    *,
    search: str = "",
    sort: str = "records",
    descending: bool | None = None,
    page: int = 1,
    per_page: int = 50,
):
    """One page of (app, user) rows: one aggregate query, one count, one policy lookup.

    ``descending`` None means the sort's natural direction.
    """
    sort = sort if sort in USER_SORTS else "records"
    field = USER_SORTS[sort].lstrip("-")
    if descending is None:
        descending = natural_descending(sort)
    # The trigger-kept totals: a page reads a few rows, not every record of every user.
    qs = UserMemoryStats.objects.all()
    if search:
        qs = qs.filter(Q(user_id__icontains=search) | Q(app_name__icontains=search))
    rows = qs.values("app_name", "user_id", "records", "tokens", "pinned", "last_written").order_by(
        f"-{field}" if descending else field, "app_name", "user_id"
    )
    paginator = Paginator(rows, per_page)
    page_obj: Page = paginator.get_page(page)
    apps = {row["app_name"] for row in page_obj.object_list}
    caps = {
        p.app_name: (p.max_records, p.max_tokens)
        for p in Policy.objects.filter(app_name__in=apps).only(
            "app_name", "max_records", "max_tokens"
        )
    }
    default_caps = (pure.DEFAULTS.max_records, pure.DEFAULTS.max_tokens)
    page_obj.object_list = [
        UserRow(
            app_name=row["app_name"],
            user_id=row["user_id"],
            records=row["records"],
            tokens=row["tokens"] or 0,
            pinned=row["pinned"],
            last_written=row["last_written"],
            max_records=caps.get(row["app_name"], default_caps)[0],
            max_tokens=caps.get(row["app_name"], default_caps)[1],
        )
        for row in page_obj.object_list
    ]
    return page_obj
