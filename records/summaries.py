"""Summarise before evicting (optional per app: ``Policy.summarise``).

Before a cluster of low-score cap victims is evicted, it is merged into one summary
record that keeps provenance to every source record and session; the summary is
written before the sources are deleted. A cluster is the victims sharing a source
session, or (for the rest) a rule category, with at least
``Policy.summarise_min_cluster`` records. Expired records are never summarised: the
TTL is a compliance promise, and a summary would keep their content past it. For the
same reason a summary is dated as its oldest source: it expires when that one would.

The default summariser is extractive (the first sentence of each source) and needs no
network. Plug in another (an LLM call) with MEMADMIN_SUMMARISER=pkg.module.function,
a ``callable(texts: list[str], max_tokens: int) -> str``. Whatever it returns, a
summary never has more tokens than its sources.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

from . import plugins, simulation
from . import policy as pure
from .models import ImportanceSource, MemoryRecord
from .tokens import token_counter

log = logging.getLogger(__name__)

SUMMARY_RULE = "summary"
# What a dry-run plans a plugged-in summariser to write where the extractive one does not fit.
PLANNED_SUMMARY = "Summary of earlier notes."
FIRST_SENTENCE_CHARS = 300


def first_sentence(text: str) -> str:
    """``text`` up to the first whitespace after ``.``, ``!`` or ``?``, at most
    ``FIRST_SENTENCE_CHARS`` characters: a scan, not a regular expression."""
    text = text.strip()
    head = text[: FIRST_SENTENCE_CHARS + 1]
    for i in range(1, len(head)):
        if head[i].isspace() and head[i - 1] in ".!?":
            return head[:i].strip()
    return text[:FIRST_SENTENCE_CHARS].strip()


def extractive_summary(texts: Sequence[str], max_tokens: int) -> str:
    """The first sentence of each text, without repeats, within the token budget."""
    count = token_counter()
    lines: list[str] = []
    seen: set[str] = set()
    for text in texts:
        first = first_sentence(text)
        if first and first.lower() not in seen:
            seen.add(first.lower())
            lines.append(f"- {first}")
    summary = "Summary of earlier notes:\n" + "\n".join(lines)
    while lines and count(summary) > max_tokens:
        lines.pop()
        summary = "Summary of earlier notes:\n" + "\n".join(lines)
    return summary if lines else ""


def _plugged_in() -> str:
    """The dotted path of a plugged-in summariser (MEMADMIN_SUMMARISER), '' for none."""
    return settings.MEMADMIN.get("SUMMARISER") or ""


@cache
def summariser() -> Callable[[Sequence[str], int], str]:
    path = _plugged_in()
    return import_string(path) if path else extractive_summary


def _within_budget(texts: Sequence[str], budget: int) -> str:
    if simulation.active():
        return _planned_summary(texts, budget)
    try:
        text = summariser()(list(texts), budget)
    except Exception as exc:  # a broken plug-in must not block eviction
        log.error("summariser failed: %s; using the extractive summary", plugins.failure(exc))
        text = ""
    if not text or token_counter()(text) > budget:
        text = extractive_summary(texts, budget)
    return text


def _planned_summary(texts: Sequence[str], budget: int) -> str:
    """A dry-run's summary (rolled back): no memory text goes out to a plugged-in
    summariser (an LLM call per cluster, for every user planned) for a summary never
    kept. The extractive one stands in; where it does not fit the budget, a plug-in is
    taken to write one that does (its short stand-in), so the cluster is planned as
    summarised, as the real run would most likely summarise it."""
    text = extractive_summary(texts, budget)
    if text or not _plugged_in():
        return text  # the default summariser: exactly what the real run writes
    return PLANNED_SUMMARY if token_counter()(PLANNED_SUMMARY) <= budget else ""


def clusters(victims, records: dict[int, MemoryRecord], min_size: int) -> list[list[int]]:
    """Group cap victims by source session, then the rest by category."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for v in victims:
        if v.reason in (pure.RECORD_CAP, pure.TOKEN_CAP) and v.id in records:
            by_session[records[v.id].source_session_id].append(v.id)
    out: list[list[int]] = []
    leftovers: list[int] = list(by_session.pop("", []))
    for ids in by_session.values():
        if len(ids) >= min_size:
            out.append(ids)
        else:
            leftovers.extend(ids)
    by_category: dict[str, list[int]] = defaultdict(list)
    for record_id in leftovers:
        by_category[records[record_id].category].append(record_id)
    out.extend(ids for ids in by_category.values() if len(ids) >= min_size)
    return out


def summarise(app_name: str, user_id: str, victims, policy, now: datetime) -> set[int]:
    """Write summaries for clusters of ``victims``; returns the ids they now cover.

    The caller evicts those ids with reason "summarised" after this returns, in the
    same locked transaction.
    """
    ids = [v.id for v in victims if v.reason in (pure.RECORD_CAP, pure.TOKEN_CAP)]
    records = (
        MemoryRecord.objects.filter(app_name=app_name, user_id=user_id, id__in=ids)
        .only(
            "id",
            "content",
            "tokens",
            "importance",
            "category",
            "source_session_id",
            "is_summary",
            "summary_sources",
        )
        .in_bulk()
    )
    covered: set[int] = set()
    params = policy.params()
    for cluster in clusters(victims, records, policy.summarise_min_cluster):
        sources = [records[i] for i in sorted(cluster)]
        budget = sum(r.tokens for r in sources)
        text = _within_budget([r.content for r in sources], budget)
        if not text:
            continue
        sessions = {r.source_session_id for r in sources}
        provenance = []
        for r in sources:  # a summary of summaries keeps the original provenance
            provenance.extend(
                r.summary_sources
                if r.is_summary
                else [{"record_id": r.id, "session_id": r.source_session_id}]
            )
        MemoryRecord.objects.create(
            app_name=app_name,
            user_id=user_id,
            source_session_id=sessions.pop() if len(sessions) == 1 else "",
            content=text,
            author="memadmin",
            role="model",  # memadmin's words, not the user's
            # Its content is its sources': it expires when the oldest of them would (TTL
            # counts from creation), not a whole TTL after the summarising.
            created_at=min(r.created_at for r in sources),
            last_accessed_at=pure.fresh_last_accessed(now, params),
            importance=max(r.importance for r in sources),
            importance_source=ImportanceSource.DEFAULT,
            importance_rule=SUMMARY_RULE,
            category=sources[0].category if len({r.category for r in sources}) == 1 else "",
            tokens=token_counter()(text),
            is_summary=True,
            summary_sources=provenance,
        )
        covered.update(cluster)
    return covered
