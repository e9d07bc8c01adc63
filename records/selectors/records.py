"""One user's records, scored and ranked as the policy sees them, for the user page.

Ranking needs every record of the user (the cap line depends on all of them), so the
metadata of all of them is read in one query, without content; content is then read
for the records on the page only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator

from ..models import AgentSession, MemoryRecord, RetiredSession
from ..policy import HybridPolicy, PolicyParams, Record, Score

POLICY_COLUMNS = ("id", "created_at", "last_accessed_at", "hits", "importance", "pinned", "tokens")


@dataclass(frozen=True)
class Ranked:
    """A record's standing: scores, and where it sits against the caps."""

    policy_record: Record
    score: Score
    expired: bool
    # Position among unexpired records, best first, and the tokens of it and all above.
    rank: int | None
    cumulative_tokens: int | None
    over_record_cap: bool
    over_token_cap: bool
    first_over_cap: bool  # the cap line is drawn right above this record


@dataclass(frozen=True)
class ScoredRow:
    record: MemoryRecord
    standing: Ranked
    # ("session", pk), ("retired", pk) or None when the source session left no trace.
    session_link: tuple[str, int] | None = None
    # Why it would be evicted now (expired / record_cap / token_cap), or None.
    victim_reason: str | None = None

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


def rank_user_records(
    app_name: str, user_id: str, params: PolicyParams, now: datetime
) -> tuple[list[Ranked], UserSummary]:
    """Every record of the user, best first, expired ones last. One query."""
    policy = HybridPolicy(params)
    rows = MemoryRecord.objects.filter(app_name=app_name, user_id=user_id).values_list(
        *POLICY_COLUMNS
    )
    records = [Record(*row) for row in rows]
    live = policy.ranked(records, now)
    live.reverse()  # the policy ranks the next victim first; the page shows the best first
    expired = [(r, policy.score(r, now)) for r in records if policy.expired(r, now)]
    expired.sort(key=lambda rs: (-rs[1].total, rs[0].id))

    ranked: list[Ranked] = []
    cumulative = 0
    line_drawn = False
    for rank, (r, score) in enumerate(live, start=1):
        cumulative += r.tokens
        over_records = rank > params.max_records
        over_tokens = cumulative > params.max_tokens
        first = (over_records or over_tokens) and not line_drawn
        line_drawn = line_drawn or first
        ranked.append(Ranked(r, score, False, rank, cumulative, over_records, over_tokens, first))
    ranked.extend(Ranked(r, s, True, None, None, False, False, False) for r, s in expired)

    summary = UserSummary(
        records=len(records),
        tokens=sum(r.tokens for r in records),
        pinned=sum(1 for r in records if r.pinned),
        expired=len(expired),
        over_cap=sum(1 for x in ranked if x.over_record_cap or x.over_token_cap),
        max_records=params.max_records,
        max_tokens=params.max_tokens,
    )
    return ranked, summary


def _rows(
    app_name: str,
    user_id: str,
    standings: list[Ranked],
    victim_reasons: Mapping[int, str],
) -> list[ScoredRow]:
    by_id = MemoryRecord.objects.in_bulk([s.policy_record.id for s in standings])
    links = session_links(app_name, user_id, {r.source_session_id for r in by_id.values()})
    return [
        ScoredRow(
            record=by_id[s.policy_record.id],
            standing=s,
            session_link=links.get(by_id[s.policy_record.id].source_session_id),
            victim_reason=victim_reasons.get(s.policy_record.id),
        )
        for s in standings
        if s.policy_record.id in by_id  # deleted between the two reads
    ]


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
    """A page of the user's records, best score first, as ScoredRow. Four queries."""
    ranked, summary = rank_user_records(app_name, user_id, params, now)
    page_obj = Paginator(ranked, per_page).get_page(page)
    standings = list(page_obj.object_list)
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
    ranked, _ = rank_user_records(app_name, user_id, params, now)
    standing = [s for s in ranked if s.policy_record.id == record_id]
    rows = _rows(app_name, user_id, standing, victim_reasons or {})
    return rows[0] if rows else None


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
