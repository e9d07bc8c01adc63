"""One user's records, scored and ranked as the policy sees them, for the user page.

Ranking needs every record of the user (the cap line depends on all of them), so it
runs in the database (``records.selectors.ranking.rank_user``, the policy's own score
expression) and returns only the page's rows and the summary; content is then read
for the records on the page only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.urls import reverse

from ..models import AgentSession, MemoryRecord, RetiredSession, UserMemoryStats
from ..policy import PolicyParams, Record, Score
from .ranking import RankedRow, rank_user


@dataclass(frozen=True)
class Ranked:
    """A record's standing: its ranked row (scores, position among live records best
    first, running tokens), and where it sits against the caps."""

    row: RankedRow
    over_record_cap: bool
    over_token_cap: bool
    first_over_cap: bool  # the cap line is drawn right above this record

    @property
    def policy_record(self) -> Record:
        return self.row.record

    @property
    def score(self) -> Score:
        return self.row.score

    @property
    def expired(self) -> bool:
        return self.row.expired

    @property
    def rank(self) -> int | None:
        return self.row.rank

    @property
    def cumulative_tokens(self) -> int | None:
        return self.row.cumulative_tokens


@dataclass(frozen=True)
class ScoredRow:
    record: MemoryRecord
    standing: Ranked
    # ("session", pk), ("retired", pk) or None when the source session left no trace.
    session_link: tuple[str, int] | None = None
    # Why it would be evicted now (expired / record_cap / token_cap), or None.
    victim_reason: str | None = None
    # The row's links, made without reversing URLs row by row (see _url_for).
    pin_url: str = ""
    unpin_url: str = ""
    importance_url: str = ""
    source_url: str = ""

    @property
    def over_cap(self) -> bool:
        return self.standing.over_record_cap or self.standing.over_token_cap


@dataclass
class UserSummary:
    records: int = 0
    tokens: int = 0
    pinned: int = 0
    expired: int = 0
    over_cap: int = 0
    max_records: int = 0
    max_tokens: int = 0


class _RankedRecords:
    """The user's ranked records as a lazy sequence for Paginator: its length comes from
    the per-user totals, and a slice is one ranking query in the database (which also
    gives the summary of all the records)."""

    def __init__(self, app_name: str, user_id: str, params: PolicyParams, now: datetime):
        self.app_name, self.user_id, self.params, self.now = app_name, user_id, params, now
        self.summary: UserSummary | None = None
        stats = UserMemoryStats.objects.filter(app_name=app_name, user_id=user_id).first()
        self._count = stats.records if stats else 0

    def count(self) -> int:
        return self._count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, window: slice) -> list[Ranked]:
        start = window.start or 0
        rows, summary = rank_user(
            self.app_name,
            self.user_id,
            self.now,
            self.params,
            offset=start,
            limit=(window.stop or self._count) - start,
        )
        self.summary = _summary(summary, self.params)
        return [_standing(row, summary, self.params) for row in rows]


def _standing(row: RankedRow, summary, params: PolicyParams) -> Ranked:
    over_records = row.rank is not None and row.rank > params.max_records
    over_tokens = row.cumulative_tokens is not None and row.cumulative_tokens > params.max_tokens
    return Ranked(
        row=row,
        over_record_cap=over_records,
        over_token_cap=over_tokens,
        first_over_cap=row.rank is not None
        and summary is not None
        and row.rank == summary.first_over_rank,
    )


def _summary(summary, params: PolicyParams) -> UserSummary:
    if summary is None:
        return UserSummary(max_records=params.max_records, max_tokens=params.max_tokens)
    return UserSummary(
        records=summary.records,
        tokens=summary.tokens,
        pinned=summary.pinned,
        expired=summary.expired,
        over_cap=summary.over_cap,
        max_records=params.max_records,
        max_tokens=params.max_tokens,
    )


def _rows(
    app_name: str,
    user_id: str,
    standings: list[Ranked],
    victim_reasons: Mapping[int, str],
) -> list[ScoredRow]:
    by_id = MemoryRecord.objects.in_bulk([s.policy_record.id for s in standings])
    links = session_links(app_name, user_id, {r.source_session_id for r in by_id.values()})
    pin = _url_for("records:pin", app_name, user_id)
    unpin = _url_for("records:unpin", app_name, user_id)
    importance = _url_for("records:importance", app_name, user_id)
    source = {
        "session": _url_for("records:session"),
        "retired": _url_for("records:retired_session"),
    }
    rows = []
    for s in standings:
        record = by_id.get(s.policy_record.id)
        if record is None:  # deleted between the two reads
            continue
        link = links.get(record.source_session_id)
        rows.append(
            ScoredRow(
                record=record,
                standing=s,
                session_link=link,
                victim_reason=victim_reasons.get(record.id),
                pin_url=pin(record.id),
                unpin_url=unpin(record.id),
                importance_url=importance(record.id),
                source_url=source[link[0]](link[1]) if link else "",
            )
        )
    return rows


_MARKER = 987654321987


def _url_for(name: str, *args):
    """pk -> URL of ``name``: reversed once per page, not once per row (reversing a URL
    with path converters is a large share of rendering fifty rows)."""
    template = reverse(name, args=[*args, _MARKER])
    head, tail = template.rsplit(str(_MARKER), 1)
    return lambda pk: f"{head}{pk}{tail}"


def scored_records(
    app_name: str,
    user_id: str,
    params: PolicyParams,
    now: datetime,
    *,
    page: int | str = 1,
    per_page: int = 50,
    victim_reasons: Mapping[int, str] | None = None,
) -> tuple[Page, UserSummary]:
    """A page of the user's records, best score first, as ScoredRow, and the summary of
    all of them. The ranking runs in the database; a constant number of queries."""
    ranked = _RankedRecords(app_name, user_id, params, now)
    page_obj = Paginator(ranked, per_page).get_page(page)
    standings = list(page_obj.object_list)
    summary = ranked.summary or _summary(None, params)
    page_obj.object_list = _rows(app_name, user_id, standings, victim_reasons or {})
    return page_obj, summary


def scored_record(
    app_name: str,
    user_id: str,
    record_id: int,
    params: PolicyParams,
    now: datetime,
    *,
    victim_reasons: Mapping[int, str] | None = None,
) -> ScoredRow | None:
    """One record's row, ranked among the user's records (for swapping a row in place)."""
    rows, summary = rank_user(app_name, user_id, now, params, record_id=record_id)
    standing = [_standing(row, summary, params) for row in rows]
    found = _rows(app_name, user_id, standing, victim_reasons or {})
    return found[0] if found else None


def session_links(
    app_name: str, user_id: str, session_ids: Iterable[str]
) -> dict[str, tuple[str, int]]:
    """Where each source session can be seen: the live session, else its tombstone."""
    wanted = {s for s in session_ids if s}
    if not wanted:
        return {}
    scope = {"app_name": app_name, "user_id": user_id, "session_id__in": wanted}
    links: dict[str, tuple[str, int]] = {
        sid: ("retired", pk)
        for pk, sid in RetiredSession.objects.filter(**scope).values_list("pk", "session_id")
    }
    links.update(
        (sid, ("session", pk))
        for pk, sid in AgentSession.objects.filter(**scope).values_list("pk", "session_id")
    )
    return links
