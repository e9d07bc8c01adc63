"""The ORM record store: ingest, enforce, search, touch, delete.

Everything that changes one user's memory runs under that user's lock (see
``records.locks``) in one transaction: a failure leaves nothing half-written.
Views, tasks, management commands and the ADK services all come through here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Q, Value
from django.utils.module_loading import import_string

from memadmin import counters

from . import access_log, due, erasure_guard, feedback, search_text
from . import policy as pure
from . import rules as pure_rules
from .extract import Candidate, Extractor, unmatched_importance
from .locks import acquire_user_lock, user_lock, user_lock_key
from .models import (
    APP_NAME_MAX,
    POLICY_RECORD_FIELDS,
    SESSION_ID_MAX,
    USER_ID_MAX,
    EvictionEvent,
    EvictionReason,
    ImportanceRule,
    ImportanceSource,
    MemoryRecord,
    Policy,
    UserMemoryStats,
)
from .policies import policy_for
from .summaries import summarise
from .tokens import token_counter
from .touches import apply_touches, record_touches
from .victims import SelectedVictim, select_victims

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10


# --- validation at the edge -------------------------------------------------------------


def check_scope(app_name: str, user_id: str, session_id: str | None = None) -> None:
    """Refuse ids we cannot store, with a message that says what is allowed."""
    for label, value, limit in (
        ("app_name", app_name, APP_NAME_MAX),
        ("user_id", user_id, USER_ID_MAX),
    ):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{label} must be a non-empty string")
        if len(value) > limit:
            raise ValueError(f"{label} must be at most {limit} characters (got {len(value)})")
        if "\x00" in value:
            raise ValueError(f"{label} must not contain NUL characters")
    if session_id is not None:
        if not isinstance(session_id, str):
            raise ValueError("session_id must be a string")
        if len(session_id) > SESSION_ID_MAX:
            raise ValueError(f"session_id must be at most {SESSION_ID_MAX} characters")
        if "\x00" in session_id:
            raise ValueError("session_id must not contain NUL characters")


# --- rules and extraction ----------------------------------------------------------------


def active_rules(app_name: str) -> tuple[pure_rules.Rule, ...]:
    """Shipped defaults, then all-apps overrides, then the app's own, merged by name."""
    rows = ImportanceRule.objects.filter(app_name__in=["", app_name]).order_by("app_name", "name")
    overrides = []
    for row in rows:  # "" sorts first, so the app's own rule wins
        try:
            overrides.append(row.as_rule())
        except pure_rules.RuleError:
            log.error("importance rule %s is invalid and was skipped", row)
    return pure_rules.merge_rules(pure_rules.DEFAULT_RULES, overrides)


@cache
def _classifier():
    path = settings.MEMADMIN.get("IMPORTANCE_CLASSIFIER")
    return import_string(path) if path else None


def extractor_for(app_name: str) -> Extractor:
    information = policy_for(app_name).information_importance
    return Extractor(
        active_rules(app_name), token_counter(), _classifier(), information=information
    )


# --- ingest and enforcement --------------------------------------------------------------


@dataclass
class IngestResult:
    candidates: int = 0
    added: int = 0
    duplicates: int = 0
    previously_evicted: int = 0
    refreshed: int = 0
    evicted: list[SelectedVictim] = field(default_factory=list)


def ingest(
    app_name: str,
    user_id: str,
    candidates: Sequence[Candidate],
    now: datetime,
    *,
    run_id: int | None = None,
    enforce: bool = True,
    count_session: bool = False,
    entry_ids: Mapping[str, int] | None = None,
    match_content: bool = False,
) -> IngestResult:
    """Store new candidates and enforce the app's policy, under the user's lock.

    ``enforce=False`` is for applying a reviewed sweep plan, which evicts exactly the
    victims it froze and nothing else. ``count_session`` also counts one ingested
    session (``add_session_to_memory``), in the same commit as the records-added count.

    Never duplicates a record (unique dedupe key) and never brings back one that was
    evicted before (its key is remembered on the eviction event).

    Explicit memories (``add_memory``) may be records this user already has, recalled
    by search and saved again: ``entry_ids`` maps a candidate's dedupe key to the record
    id its entry carries, and ``match_content`` lets a candidate without a key match a
    stored record of the same text. Such a candidate refreshes that record (see
    ``_refresh_stored``) instead of storing a copy.
    """
    check_scope(app_name, user_id)
    result = IngestResult(candidates=len(candidates))
    policy = policy_for(app_name)
    with user_lock(app_name, user_id):
        # Erasure barrier: refuse an ingest that started before an erasure of this user
        # and drop candidates stamped before it (see records.erasure_guard).
        candidates = erasure_guard.check(app_name, user_id, candidates, now)
        if entry_ids or match_content:
            candidates, result.refreshed, result.duplicates = _refresh_stored(
                app_name, user_id, candidates, entry_ids or {}, match_content, now
            )
        keys = [c.dedupe_key for c in candidates if c.dedupe_key]
        existing, evicted = _known_keys(app_name, user_id, keys)
        seen: set[str] = set()
        new = []
        for c in candidates:
            if c.dedupe_key:
                if c.dedupe_key in existing or c.dedupe_key in seen:
                    result.duplicates += 1
                    continue
                if c.dedupe_key in evicted:
                    result.previously_evicted += 1
                    continue
                seen.add(c.dedupe_key)
            new.append(_new_record(app_name, user_id, c, now, policy))
        MemoryRecord.objects.bulk_create(new, batch_size=1000)
        result.added = len(new)
        if enforce:
            result.evicted = _enforce_locked(app_name, user_id, now, policy, run_id=run_id)
    # After the lock: the app-wide counter rows must not serialise ingests.
    counts = {feedback.RECORDS_ADDED: result.added}
    if count_session:
        counts[feedback.SESSIONS_INGESTED] = 1
    feedback.bump_many(app_name, counts, now)
    counters.count_ingest(app_name, result.added)
    return result


def _refresh_stored(
    app_name: str,
    user_id: str,
    candidates: Sequence[Candidate],
    entry_ids: Mapping[str, int],
    match_content: bool,
    now: datetime,
) -> tuple[list[Candidate], int, int]:
    """Refresh the user's records that candidates are copies of: returns the other
    candidates, how many refreshed a record and how many repeated a text without id.

    A candidate is a copy when its entry carries the id of one of *this* user's records
    and the same text (an edited entry, or another user's id, is a new memory), or,
    with ``match_content``, has no id and the text of a stored record. The record
    counts one access now (as a search hit does); a pin the rules or the caller ask
    for is added and a caller's importance replaces all but a staff member's. Caller
    holds the user's lock.
    """
    ids = {entry_ids[c.dedupe_key] for c in candidates if c.dedupe_key in entry_ids}
    texts = {c.content for c in candidates if c.dedupe_key is None} if match_content else set()
    if not ids and not texts:
        return list(candidates), 0, 0
    stored = (
        MemoryRecord.objects.filter(app_name=app_name, user_id=user_id)
        .filter(Q(id__in=ids) | Q(content__in=texts))
        .only("id", "content", "pinned", "importance", "importance_source", "importance_rule")
        .order_by("id")
    )
    by_id = {r.id: r for r in stored}
    by_text: dict[str, MemoryRecord] = {}
    for r in by_id.values():
        by_text.setdefault(r.content, r)  # the oldest record of a text
    rest: list[Candidate] = []
    refreshed = repeated = 0
    new_texts: set[str] = set()
    used: set[int] = set()  # one access per record, however many entries name it
    changed: dict[int, MemoryRecord] = {}
    for c in candidates:
        if c.dedupe_key is not None:
            record = by_id.get(entry_ids.get(c.dedupe_key, -1))
            if record is not None and record.content != c.content:
                record = None
        else:
            record = by_text.get(c.content) if match_content else None
        if record is None:
            if c.dedupe_key is None and match_content:
                if c.content in new_texts:
                    repeated += 1
                    continue
                new_texts.add(c.content)
            rest.append(c)
            continue
        refreshed += 1
        used.add(record.id)
        if c.pinned and not record.pinned:
            record.pinned = True
            changed[record.id] = record
        if (
            c.importance_source == ImportanceSource.CALLER
            and record.importance_source != ImportanceSource.STAFF
            and (record.importance, record.importance_source) != (c.importance, c.importance_source)
        ):
            record.importance = c.importance
            record.importance_source = c.importance_source
            record.importance_rule = c.importance_rule
            changed[record.id] = record
    apply_touches(dict.fromkeys(used, 1), dict.fromkeys(used, now))
    MemoryRecord.objects.bulk_update(
        changed.values(), ["pinned", "importance", "importance_source", "importance_rule"]
    )
    return rest, refreshed, repeated


def _known_keys(app_name: str, user_id: str, keys: list[str]) -> tuple[set[str], set[str]]:
    """(keys of stored records, keys of evicted records) among ``keys``: one query a chunk."""
    existing: set[str] = set()
    evicted: set[str] = set()
    for start in range(0, len(keys), 1000):
        chunk = keys[start : start + 1000]
        stored = MemoryRecord.objects.filter(
            app_name=app_name, user_id=user_id, dedupe_key__in=chunk
        ).values_list("dedupe_key", Value(False, output_field=BooleanField()))
        gone = EvictionEvent.objects.filter(
            app_name=app_name, user_id=user_id, dedupe_key__in=chunk
        ).values_list("dedupe_key", Value(True, output_field=BooleanField()))
        for key, was_evicted in stored.union(gone, all=True):
            (evicted if was_evicted else existing).add(key)
    return existing, evicted


def _new_record(app_name, user_id, c: Candidate, now: datetime, policy: Policy) -> MemoryRecord:
    return MemoryRecord(
        app_name=app_name,
        user_id=user_id,
        source_session_id=c.session_id,
        source_event_ids=list(c.event_ids),
        dedupe_key=c.dedupe_key,
        content=c.content,
        author=c.author,
        entry_timestamp=c.entry_timestamp,
        created_at=now,
        # Creation may not count as access: see PolicyParams.fresh_start.
        last_accessed_at=pure.fresh_last_accessed(now, policy.params()),
        hits=0,
        importance=c.importance,
        importance_source=c.importance_source,
        importance_rule=c.importance_rule,
        category=c.category,
        pinned=c.pinned,
        tokens=c.tokens,
        due_at=_due_at(c.category, c.content, c.entry_timestamp or now),
        slot=c.slot or None,
        custom_metadata=c.custom_metadata,
        search_tokens=search_text.context_tokens(c.context),  # save adds the record's own
    )


def _due_at(category: str, content: str, said_at: datetime) -> datetime | None:
    return due.due_at(content, said_at) if category == due.COMMITMENT else None


def enforce(
    app_name: str, user_id: str, now: datetime, *, run_id: int | None = None
) -> list[SelectedVictim]:
    """Apply the app's policy to one user: expired records, then caps."""
    check_scope(app_name, user_id)
    policy = policy_for(app_name)
    with user_lock(app_name, user_id):
        return _enforce_locked(app_name, user_id, now, policy, run_id=run_id)


def enforce_many(
    app_name: str, user_ids: Sequence[str], now: datetime, *, run_id: int | None = None
) -> list[SelectedVictim]:
    """Enforce for a batch of users with one set-based selection (the periodic pass).

    The users' locks are taken in key order, so two batches never deadlock.
    """
    policy = policy_for(app_name)
    users = sorted(set(user_ids), key=lambda u: user_lock_key(app_name, u))
    for user_id in users:
        check_scope(app_name, user_id)
    with transaction.atomic():
        for user_id in users:
            acquire_user_lock(app_name, user_id)
        if policy.summarise:  # clusters are per user
            return [
                v for u in users for v in _enforce_locked(app_name, u, now, policy, run_id=run_id)
            ]
        victims = select_victims(app_name, users, now, policy.params())
        evict(app_name, victims, now, policy_version=policy.version, run_id=run_id)
        return victims


def _enforce_locked(app_name, user_id, now, policy: Policy, *, run_id=None):
    params = policy.params()
    victims = select_victims(app_name, [user_id], now, params)
    if policy.summarise and victims:
        covered = summarise(app_name, user_id, victims, policy, now)
        if covered:
            summarised = [
                replace(v, reason=EvictionReason.SUMMARISED) for v in victims if v.id in covered
            ]
            evict(app_name, summarised, now, policy_version=policy.version, run_id=run_id)
            # The summaries themselves count against the caps: select once more,
            # without summarising, so the caps hold exactly after every write.
            rest = select_victims(app_name, [user_id], now, params)
            evict(app_name, rest, now, policy_version=policy.version, run_id=run_id)
            return summarised + rest
    evict(app_name, victims, now, policy_version=policy.version, run_id=run_id)
    return victims


def evict(
    app_name: str,
    victims: Sequence[SelectedVictim],
    now: datetime,
    *,
    policy_version: int | None,
    run_id: int | None = None,
    reason: str | None = None,
) -> int:
    """Delete victims and log each as an EvictionEvent (no content). Caller holds the lock."""
    if not victims:
        return 0
    if not connection.in_atomic_block:
        raise RuntimeError("evict must run inside the user's locked transaction")
    _log_evictions(app_name, victims, now, policy_version, run_id, reason)
    access_log.note_evictions(app_name, victims, now)  # replay metadata, before they go
    ids = [v.id for v in victims]
    regrettable = [v for v in victims if (reason or v.reason) in REGRET_REASONS]
    if regrettable:
        contents = dict(
            MemoryRecord.objects.filter(id__in=[v.id for v in regrettable]).values_list(
                "id", "content"
            )
        )
        feedback.remember_evicted(app_name, {v.id: v.user_id for v in regrettable}, contents, now)
    deleted = 0
    for start in range(0, len(ids), 1000):
        deleted += MemoryRecord.objects.filter(id__in=ids[start : start + 1000]).delete()[0]
    return deleted


def _log_evictions(app_name, victims, now, policy_version, run_id, reason) -> None:
    """One EvictionEvent per victim (no content)."""
    if connection.vendor == "postgresql":
        # One statement over arrays: an enforcement pass logs thousands of these, and
        # building and compiling as many model instances costs more than the insert.
        table = EvictionEvent._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {table} (record_id, app_name, user_id, reason, recency,
                    frequency, importance, score, tokens, policy_version, run_id,
                    evicted_at, dedupe_key, superseded_by)
                SELECT v.id, %s, v.u, v.reason, v.r, v.f, v.i, v.s, v.t, %s, %s, %s, v.k, v.n
                FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::float8[],
                            %s::float8[], %s::float8[], %s::integer[], %s::text[],
                            %s::bigint[])
                     AS v(id, u, reason, r, f, i, s, t, k, n)
                """,
                [
                    app_name,
                    policy_version,
                    run_id,
                    now,
                    [v.id for v in victims],
                    [v.user_id for v in victims],
                    [str(reason or v.reason) for v in victims],
                    [v.score.recency for v in victims],
                    [v.score.frequency for v in victims],
                    [v.score.importance for v in victims],
                    [v.score.total for v in victims],
                    [v.tokens for v in victims],
                    [v.dedupe_key for v in victims],
                    [v.superseded_by for v in victims],
                ],
            )
        return
    EvictionEvent.objects.bulk_create(
        [
            EvictionEvent(
                record_id=v.id,
                app_name=app_name,
                user_id=v.user_id,
                reason=reason or v.reason,
                recency=v.score.recency,
                frequency=v.score.frequency,
                importance=v.score.importance,
                score=v.score.total,
                tokens=v.tokens,
                policy_version=policy_version,
                run_id=run_id,
                evicted_at=now,
                dedupe_key=v.dedupe_key,
                superseded_by=v.superseded_by,
            )
            for v in victims
        ],
        batch_size=1000,
    )


# Policy evictions may be regretted; manual deletes, summarised and superseded records
# (a newer statement replaced them) may not.
REGRET_REASONS = {EvictionReason.EXPIRED, EvictionReason.RECORD_CAP, EvictionReason.TOKEN_CAP}


def delete_records(app_name: str, user_id: str, now: datetime, record_id: int | None = None) -> int:
    """Manual eviction of one record, or (record_id None) of all of the user's records."""
    check_scope(app_name, user_id)
    policy = policy_for(app_name)
    hybrid = pure.HybridPolicy(policy.params())
    with user_lock(app_name, user_id):
        qs = MemoryRecord.objects.filter(app_name=app_name, user_id=user_id)
        if record_id is not None:
            qs = qs.filter(id=record_id)
        victims = [
            SelectedVictim(
                id=r.id,
                user_id=user_id,
                reason=EvictionReason.MANUAL,
                tokens=r.tokens,
                score=hybrid.score(r.as_policy_record(), now),
                dedupe_key=r.dedupe_key or "",
            )
            for r in qs.only(*POLICY_RECORD_FIELDS, "dedupe_key")
        ]
        return evict(app_name, victims, now, policy_version=policy.version)


# What re-scoring may change on a record.
RESCORED = ("importance", "importance_source", "importance_rule", "category", "pinned", "due_at")


def rescore(app_name: str, user_id: str | None = None) -> int:
    """Re-apply the current rules to existing records; returns how many changed.

    Staff- and caller-set importance is kept, as are cached classifier answers for text
    no rule matches. Rules can add pins but rescoring never removes one: a pin is a
    promise, and only a person takes it back.
    """
    check_scope(app_name, user_id if user_id is not None else "-")
    rules = active_rules(app_name)
    users = (
        [user_id]
        if user_id is not None
        else list(
            MemoryRecord.objects.filter(app_name=app_name)
            .values_list("user_id", flat=True)
            .distinct()
        )
    )
    keep = {ImportanceSource.STAFF, ImportanceSource.CALLER}
    information = policy_for(app_name).information_importance
    changed = 0
    for user in users:
        with user_lock(app_name, user):
            updates = []
            records = MemoryRecord.objects.filter(app_name=app_name, user_id=user).exclude(
                importance_source__in=keep
            )
            for r in records.only("id", "content", "entry_timestamp", "created_at", *RESCORED):
                d = pure_rules.decide(r.content, rules)
                if d.importance is not None:
                    new = (d.importance, ImportanceSource.RULE, d.rule, d.category)
                elif r.importance_source == ImportanceSource.CLASSIFIER:
                    new = (r.importance, r.importance_source, r.importance_rule, d.category)
                else:
                    new = (*unmatched_importance(r.content, information=information), d.category)
                pinned = r.pinned or d.pinned
                old = (r.importance, r.importance_source, r.importance_rule, r.category)
                due_at = r.due_at
                if new[3] != r.category:  # a record becomes, or stops being, a commitment
                    due_at = _due_at(new[3], r.content, r.entry_timestamp or r.created_at)
                if new != old or pinned != r.pinned or due_at != r.due_at:
                    (r.importance, r.importance_source, r.importance_rule, r.category) = new
                    r.pinned = pinned
                    r.due_at = due_at
                    updates.append(r)
            MemoryRecord.objects.bulk_update(
                updates,
                RESCORED,
                batch_size=500,
            )
            changed += len(updates)
    return changed


# --- search ------------------------------------------------------------------------------
# The tokenizer and the ranking are records.search_text (pure, one for both databases);
# each database only finds the candidates: the user's records sharing a query token.


def query_terms(query: str) -> list[str]:
    """The meaningful words of a query (folded, deduplicated, at most MAX_QUERY_WORDS)."""
    return search_text.query_words(query)


def search(
    app_name: str, user_id: str, query: str, now: datetime, *, limit: int = SEARCH_LIMIT
) -> list[MemoryRecord]:
    """Unexpired records sharing a token with the query, most relevant first (BM25)."""
    check_scope(app_name, user_id)
    if not isinstance(query, str):
        raise ValueError("query must be a string")
    terms = search_text.query_terms(query.replace("\x00", ""))
    counters.count_search(app_name)
    if not terms:
        return []
    if connection.vendor == "postgresql":
        rows = _candidates_postgres(app_name, user_id, terms, now)
    else:
        rows = _candidates_sqlite(app_name, user_id, terms, now)
    if not rows:
        return []
    scope = search_text.Scope(records=rows[0][5] or 0, mean_length=rows[0][6] or 0.0)
    candidates = [
        search_text.Candidate(r[0], search_text.term_counts(r[1], terms), r[2], r[3], r[4])
        for r in rows
    ]
    ids = search_text.rank(terms, candidates, scope, limit)
    if connection.vendor == "postgresql":
        by_id = {r[0]: r for r in rows}
        return [_record_from_row(by_id[i][7:]) for i in ids]
    by_id = MemoryRecord.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i in by_id]


_RECORD_FIELDS = MemoryRecord._meta.concrete_fields
_DATETIME_FIELDS = {
    i for i, f in enumerate(_RECORD_FIELDS) if f.get_internal_type() == "DateTimeField"
}
_RECORD_CONVERTERS = [(i, f) for i, f in enumerate(_RECORD_FIELDS) if hasattr(f, "from_db_value")]


def _candidates_postgres(app_name, user_id, terms, now) -> list[tuple]:
    """(id, search tokens, length, written_at, live, user's records, their mean length,
    then every column of the record).

    One statement, one round trip (search is on every turn): the app's TTL (the model's
    default when the app has no policy row yet) and the user's totals (UserMemoryStats)
    are read in it. Datetime columns come as text: parsing them for every candidate
    cost more than the rest; only the records returned are parsed (``_record_from_row``).
    """
    table = MemoryRecord._meta.db_table
    columns = ", ".join(
        f"r.{f.column}::text" if i in _DATETIME_FIELDS else f"r.{f.column}"
        for i, f in enumerate(_RECORD_FIELDS)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT r.id, r.search_tokens, r.tokens,
                   (extract(epoch FROM COALESCE(r.entry_timestamp, r.created_at))
                    * 1000000)::int8,
                   r.pinned OR r.created_at >= %s - make_interval(days => COALESCE(
                       (SELECT ttl_days FROM {Policy._meta.db_table} WHERE app_name = %s),
                       %s)),
                   s.records, s.tokens::float8 / NULLIF(s.records, 0),
                   {columns}
            FROM {table} AS r
            LEFT JOIN {UserMemoryStats._meta.db_table} AS s
              ON s.app_name = %s AND s.user_id = %s
            WHERE r.app_name = %s AND r.user_id = %s AND r.search_vector @@ %s::tsquery
            """,  # noqa: S608 - table names are the models'; values are parameters
            [
                now,
                app_name,
                Policy._meta.get_field("ttl_days").default,
                app_name,
                user_id,
                app_name,
                user_id,
                " | ".join(_tsquery_lexeme(t.token) for t in terms),
            ],
        )
        return cursor.fetchall()


def _record_from_row(values: tuple) -> MemoryRecord:
    """A record from its columns as ``_candidates_postgres`` selects them."""
    values = list(values)
    for i in _DATETIME_FIELDS:
        if values[i] is not None:
            values[i] = datetime.fromisoformat(values[i]).astimezone(UTC)
    for i, model_field in _RECORD_CONVERTERS:
        values[i] = model_field.from_db_value(values[i], None, connection)
    return MemoryRecord.from_db(connection.alias, [f.attname for f in _RECORD_FIELDS], values)


def _tsquery_lexeme(token: str) -> str:
    """A lexeme quoted for tsquery input, taken verbatim (no parser, no stemming)."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _candidates_sqlite(app_name, user_id, terms, now) -> list[tuple]:
    """The same rows as ``_candidates_postgres``."""
    table = MemoryRecord._meta.db_table
    fts = f"{table}_fts"
    cutoff = now - policy_for(app_name).params().ttl
    match = " OR ".join('"' + t.token.replace('"', '""') + '"' for t in terms)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT r.id, r.search_tokens, r.tokens,
                   COALESCE(r.entry_timestamp, r.created_at), r.pinned OR r.created_at >= %s,
                   s.records, CAST(s.tokens AS REAL) / NULLIF(s.records, 0)
            FROM {table} AS r
            LEFT JOIN {UserMemoryStats._meta.db_table} AS s
              ON s.app_name = %s AND s.user_id = %s
            WHERE r.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)
              AND r.app_name = %s AND r.user_id = %s
            """,  # noqa: S608 - table names are the models'; values are parameters
            [
                connection.ops.adapt_datetimefield_value(cutoff),
                app_name,
                user_id,
                match,
                app_name,
                user_id,
            ],
        )
        return [
            (r[0], r[1], r[2], _microseconds(r[3]), bool(r[4]), r[5], r[6])
            for r in cursor.fetchall()
        ]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _microseconds(stored: str) -> int:
    """A datetime as SQLite stores it (UTC text), in microseconds since the epoch."""
    moment = datetime.fromisoformat(stored)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def note_regret(app_name: str, user_id: str, query: str, now: datetime) -> bool:
    """Count a regret hit if the query matches a recently evicted record. Never raises."""
    try:
        if feedback.is_regret(app_name, user_id, query_terms(query), now):
            feedback.bump(app_name, feedback.REGRET_HITS, now)
            return True
    except Exception:
        log.exception("regret check failed; search result unaffected")
    return False


def touch(app_name: str, user_id: str, ids: Sequence[int], now: datetime) -> str:
    """Record that ``ids`` were returned. Never raises: a lost touch is only logged."""
    try:
        outcome = record_touches(app_name, user_id, ids, now)
    except Exception:
        log.exception("touch failed for %d records; search result unaffected", len(ids))
        outcome = "dropped"
    counters.count_touches(app_name, len(ids), outcome)
    return outcome
