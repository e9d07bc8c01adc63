"""The ORM record store: ingest, enforce, evict, delete. (Search and its touches:
``records.search``; re-applying the rules to stored records: ``records.rescore``.)

Everything that changes one user's memory runs under that user's lock (see
``records.locks``) in one transaction: a failure leaves nothing half-written.
Views, tasks, management commands and the ADK services all come through here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import connection, transaction
from django.db.models import BooleanField, Q, Value

from memadmin import counters

from . import (
    access_log,
    config_cache,
    due,
    embeddings,
    erasure_guard,
    feedback,
    one_trip,
    search_text,
    server_functions,
    touches,
)
from . import policy as pure
from .config_cache import AppConfig, active_rules
from .erasure_guard import subject_lock_key
from .extract import INFORMATION_RULE, Candidate, Extractor
from .ids import check_scope
from .information import information_importance
from .locks import acquire_user_lock, user_lock, user_lock_key
from .models import (
    POLICY_RECORD_FIELDS,
    EvictedRecord,
    EvictionEvent,
    EvictionReason,
    ImportanceSource,
    MemoryRecord,
    Policy,
    RegretTerm,
)
from .policies import policy_for
from .simulation import active as simulation_active
from .summaries import summarise
from .touches import apply_touches
from .victims import (
    SelectedVictim,
    one_user_victims_query,
    select_victims,
    victims_from_rows,
)

log = logging.getLogger(__name__)

__all__ = ["active_rules", "extractor_for", "ingest", "ingest_extracted"]

# --- rules and extraction ----------------------------------------------------------------


def extractor_for(app_name: str) -> Extractor:
    """An extractor with the app's current rules (cached per process: one small read)."""
    return config_cache.current(app_name).extractor()


# --- ingest and enforcement --------------------------------------------------------------


@dataclass
class IngestResult:
    candidates: int = 0
    added: int = 0
    duplicates: int = 0
    previously_evicted: int = 0
    refreshed: int = 0
    evicted: list[SelectedVictim] = field(default_factory=list)


Extract = Callable[[Extractor], Sequence[Candidate]]


def ingest_extracted(app_name: str, user_id: str, extract: Extract, now: datetime, **kwargs):
    """``ingest`` of what ``extract`` finds with the app's rules: extraction runs before
    the lock with the rules this process has cached, and ingest runs it again under the
    lock if they have changed since (``records.config_cache``)."""
    check_scope(app_name, user_id)
    config = config_cache.cached(app_name) or config_cache.load(app_name)
    candidates = extract(config.extractor())
    return ingest(app_name, user_id, candidates, now, config=config, reextract=extract, **kwargs)


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
    config: AppConfig | None = None,
    reextract: Extract | None = None,
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

    The policy used is the app's current one, checked under the lock (``config``, when
    given, is what the caller extracted with; ``reextract`` extracts again if it is no
    longer current). On PostgreSQL the steady state is five statements in three round
    trips and one commit: the locks, then the configuration generation, the erasure
    barrier and the known keys (``_locked_state``); the insert, then the victims
    (``_pg_insert``); their eviction (``_pg_evict``). The counters go to the touch
    buffer when there is one. SQLite takes the ORM's path (``_new_record``), which
    ``_pg_insert`` writes the same columns as (``tests/records/test_ingest_path.py``).
    """
    check_scope(app_name, user_id)
    if enforce and connection.vendor == "postgresql":
        server_functions.ensure()  # once per connection, before the transaction
    with transaction.atomic():
        keys = [c.dedupe_key for c in candidates if c.dedupe_key]
        generation, barrier, existing, evicted = _locked_state(app_name, user_id, keys)
        if config is None or generation is None or config.generation != generation:
            current = config_cache.current(app_name, generation)
        else:
            current = config
        if reextract is not None and current is not config:
            candidates = reextract(current.extractor())
            keys = [c.dedupe_key for c in candidates if c.dedupe_key]
            existing, evicted = _known_keys(app_name, user_id, keys)
        policy = current.policy
        result = IngestResult(candidates=len(candidates))
        # Erasure barrier: refuse an ingest that started before an erasure of this user
        # and drop candidates stamped before it (see records.erasure_guard).
        candidates = erasure_guard.apply(barrier, candidates, now)
        candidates = _said_by_now(candidates, now)
        if entry_ids or match_content:
            candidates, result.refreshed, result.duplicates = _refresh_stored(
                app_name, user_id, candidates, entry_ids or {}, match_content, now
            )
        params = policy.params()
        seen: set[str] = set()
        fresh: list[Candidate] = []
        for c in candidates:
            if c.dedupe_key:
                if c.dedupe_key in existing or c.dedupe_key in seen:
                    result.duplicates += 1
                    continue
                if c.dedupe_key in evicted:
                    result.previously_evicted += 1
                    continue
                seen.add(c.dedupe_key)
            fresh.append(c)
        selected = None
        if connection.vendor == "postgresql":
            new, selected = _pg_insert(app_name, user_id, fresh, now, params, select=enforce)
        else:
            new = [_new_record(app_name, user_id, c, now, params) for c in fresh]
            MemoryRecord.objects.bulk_create(new, batch_size=1000)
        result.added = len(new)
        if enforce:
            result.evicted = _enforce_locked(
                app_name, user_id, now, policy, run_id=run_id, selected=selected
            )
    if simulation_active():  # a dry-run: its writes are rolled back; nothing leaves them
        return result
    # After the lock; never fails the ingest. Each record with the turns before it in
    # this ingest, which are not stored (see records.embeddings.embedding_text).
    embeddings.embed_new(new, fresh, result.evicted)
    # After the lock: the app-wide counter rows must not serialise ingests. With Redis
    # they wait in the touch buffer for its flush, as a search's counts do.
    counts = {feedback.RECORDS_ADDED: result.added}
    if count_session:
        counts[feedback.SESSIONS_INGESTED] = 1
    if not touches.buffer_counts(app_name, counts, now):
        feedback.bump_many(app_name, counts, now)
    counters.count_ingest(app_name, result.added)
    return result


def _said_by_now(candidates: Sequence[Candidate], now: datetime) -> list[Candidate]:
    """Nothing was said after it was stored: a timestamp later than the ingest (a clock
    ahead, a local time read as UTC) is stored as the ingest's time. Later, it would
    make its slot's statement newer than any real one that follows, which would be
    evicted as superseded until then."""
    return [
        replace(c, entry_timestamp=now)
        if c.entry_timestamp is not None and c.entry_timestamp > now
        else c
        for c in candidates
    ]


_PG_LOCKS = "SELECT pg_advisory_xact_lock(%s), pg_advisory_xact_lock_shared(%s)"


def _locked_state(app_name: str, user_id: str, keys: list[str]):
    """Take the user's lock, then the subject's shared lock of the erasure barrier (see
    ``records.erasure_guard``), and read (configuration generation, newest erasure
    barrier, stored keys, evicted keys) of the user under them. Inside the ingest's
    transaction.

    PostgreSQL: two statements in one round trip (one query string, run in order); the
    read is a statement of its own, begun after the locks were taken, so it sees every
    commit before them (a barrier, another ingest)."""
    locks = [user_lock_key(app_name, user_id), subject_lock_key(user_id)]
    barrier_sql = erasure_guard.barrier_sql(app_name, user_id)
    if connection.vendor != "postgresql" or barrier_sql is None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(_PG_LOCKS, locks)
        else:
            acquire_user_lock(app_name, user_id)  # SQLite: the transaction is the lock
        generation = config_cache.read_generation()
        barrier = erasure_guard.barrier_held(app_name, user_id)
        return (generation, barrier, *_known_keys(app_name, user_id, keys))
    sql, barrier_params = barrier_sql
    with connection.cursor() as cursor:
        _locked, [state] = one_trip.execute(
            cursor,
            [
                _PG_LOCKS,
                f"""SELECT {config_cache.GENERATION_SQL}, b.raised_at, b.request_id,
                ARRAY({_known_key_sql(MemoryRecord)}), ARRAY({_known_key_sql(EvictionEvent)})
            FROM (SELECT 1) AS one LEFT JOIN LATERAL ({sql}) AS b(raised_at, request_id) ON true
            """,  # noqa: S608 - the models' tables and the ORM's own SQL; values are parameters
            ],
            [*locks, keys, app_name, user_id, keys, app_name, user_id, *barrier_params],
        )
    generation, raised_at, request_id, stored, gone = state
    barrier = None if raised_at is None else (raised_at, request_id)
    return generation, barrier, set(stored), set(gone)


def _known_key_sql(model) -> str:
    """Which of the keys (parameters: keys, app, user) ``model`` has for the user: one
    index lookup per key. (With ``dedupe_key = ANY(keys)`` the planner, whose statistics
    lag behind a table that grows with every eviction, scanned all of a user's eviction
    events and filtered them: a cost that grew with the user's history.)"""
    return f"""SELECT m.dedupe_key FROM unnest(%s::text[]) AS k(key) CROSS JOIN LATERAL (
                    SELECT dedupe_key FROM {model._meta.db_table}
                    WHERE app_name = %s AND user_id = %s AND dedupe_key = k.key LIMIT 1
                ) AS m"""  # noqa: S608 - the model's table; values are parameters


@dataclass(frozen=True, slots=True)
class NewRecord:
    """What the ingest hooks need of a record stored without a model instance."""

    id: int
    content: str


# PostgreSQL: the new records travel as one JSON parameter (json.dumps is C; the ORM
# built a model instance per record and quoted each value of a dozen arrays, about half
# of a session's time), their constant columns as scalars. Rows are inserted, and their
# ids returned, in the order given, as the ORM's own bulk insert relies on.
_PG_INSERT = f"""
    INSERT INTO {MemoryRecord._meta.db_table} (app_name, user_id, source_session_id,
        source_event_ids, dedupe_key, content, author, role, entry_timestamp, created_at,
        last_accessed_at, hits, importance, importance_source, importance_rule, category,
        pinned, tokens, due_at, slot, is_summary, summary_sources, custom_metadata,
        search_tokens)
    SELECT %(new_app)s, %(new_user)s, r.s, r.e, r.k, r.c, r.a, r.role, r.t, %(new_now)s,
        %(new_accessed)s, 0, r.i, r.src, r.rule, r.cat, r.p, r.n, r.d, r.slot, false,
        '[]'::jsonb, r.m, r.x
    FROM jsonb_to_recordset(%(new_rows)s::jsonb) AS r(s text, e jsonb, k text, c text,
        a text, role text, t timestamptz, i float8, src text, rule text, cat text, p boolean,
        n integer, d timestamptz, slot text, m jsonb, x text)
    RETURNING id"""  # noqa: S608 - the model's table; values are parameters


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _pg_insert(
    app_name: str,
    user_id: str,
    candidates: Sequence[Candidate],
    now: datetime,
    params: pure.PolicyParams,
    *,
    select: bool,
) -> tuple[list[NewRecord], tuple[list[SelectedVictim], dict[int, str]] | None]:
    """PostgreSQL: store ``candidates`` (the columns ``_new_record`` sets) and, with
    ``select``, select the user's victims after them, in one round trip: the selection
    is a statement of its own, so it sees the new records. Returns the new records and
    (victims, their texts) for ``_enforce_locked``."""
    statements: list[str] = []
    values: dict = {}
    indexed = search_text.index_all((c.content, c.author, c.context) for c in candidates)
    rows = [
        {
            "s": c.session_id,
            "e": list(c.event_ids),
            "k": c.dedupe_key,
            "c": c.content,
            "a": c.author,
            "role": c.role,
            "t": _iso(c.entry_timestamp),
            "i": c.importance,
            "src": str(c.importance_source),
            "rule": c.importance_rule,
            "cat": c.category,
            "p": c.pinned,
            "n": c.tokens,
            "d": _iso(due_at_for(c.category, c.content, c.entry_timestamp or now)),
            "slot": c.slot or None,
            "m": c.custom_metadata,
            "x": tokens,
        }
        for c, tokens in zip(candidates, indexed, strict=True)
    ]
    if rows:
        statements.append(_PG_INSERT)
        values.update(
            new_app=app_name,
            new_user=user_id,
            new_now=now,
            # Creation may not count as access: see PolicyParams.fresh_start.
            new_accessed=pure.fresh_last_accessed(now, params),
            new_rows=json.dumps(rows),
        )
    if select:
        sql, victim_params = one_user_victims_query(app_name, user_id, now, params)
        if values.keys() & victim_params.keys():
            raise RuntimeError("the insert's and the victims' parameters must not share names")
        statements.append(sql)
        values.update(victim_params)
    if not statements:
        return [], None
    new: list[NewRecord] = []
    selected = None
    with connection.cursor() as cursor:
        results = one_trip.execute(cursor, statements, values)
    if rows:
        ids = [i for (i,) in results[0]]
        if len(ids) != len(candidates):
            raise RuntimeError("the insert returned fewer ids than it was given rows")
        new = [NewRecord(i, c.content) for i, c in zip(ids, candidates, strict=True)]
    if select:
        contents: dict[int, str] = {}
        selected = (victims_from_rows(results[-1], contents), contents)
    return new, selected


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


def _new_record(
    app_name, user_id, c: Candidate, now: datetime, params: pure.PolicyParams
) -> MemoryRecord:
    return MemoryRecord(
        app_name=app_name,
        user_id=user_id,
        source_session_id=c.session_id,
        source_event_ids=list(c.event_ids),
        dedupe_key=c.dedupe_key,
        content=c.content,
        author=c.author,
        role=c.role,
        entry_timestamp=c.entry_timestamp,
        created_at=now,
        # Creation may not count as access: see PolicyParams.fresh_start.
        last_accessed_at=pure.fresh_last_accessed(now, params),
        hits=0,
        importance=c.importance,
        importance_source=c.importance_source,
        importance_rule=c.importance_rule,
        category=c.category,
        pinned=c.pinned,
        tokens=c.tokens,
        due_at=due_at_for(c.category, c.content, c.entry_timestamp or now),
        slot=c.slot or None,
        custom_metadata=c.custom_metadata,
        search_tokens=search_text.context_tokens(c.context),  # save adds the record's own
    )


def due_at_for(category: str, content: str, said_at: datetime) -> datetime | None:
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
        contents: dict[int, str] = {}
        victims = select_victims(app_name, users, now, policy.params(), contents)
        evict(
            app_name,
            victims,
            now,
            policy_version=policy.version,
            run_id=run_id,
            contents=contents,
        )
        return victims


def _enforce_locked(app_name, user_id, now, policy: Policy, *, run_id=None, selected=None):
    """``selected``: (victims, their texts) when the caller has just selected them
    under the lock (``_pg_insert``)."""
    params = policy.params()
    if selected is None:
        contents: dict[int, str] = {}
        victims = select_victims(app_name, [user_id], now, params, contents)
    else:
        victims, contents = selected
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
    evict(app_name, victims, now, policy_version=policy.version, run_id=run_id, contents=contents)
    return victims


def evict(
    app_name: str,
    victims: Sequence[SelectedVictim],
    now: datetime,
    *,
    policy_version: int | None,
    run_id: int | None = None,
    reason: str | None = None,
    contents: Mapping[int, str] | None = None,
) -> int:
    """Delete victims and log each as an EvictionEvent (no content), with its replay
    metadata (``access_log``) and, for policy evictions, its regret terms
    (``feedback``). ``contents``: the victims' texts, when the caller has them (their
    terms are hashed). Caller holds the lock."""
    if not victims:
        return 0
    if not connection.in_atomic_block:
        raise RuntimeError("evict must run inside the user's locked transaction")
    if connection.vendor == "postgresql":
        return _pg_evict(app_name, victims, now, policy_version, run_id, reason, contents)
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


# ``_pg_evict``'s statement; on PostgreSQL also a server-side function (its plan kept:
# records.server_functions), returning the count.
_PG_EVICT = f"""
    WITH v AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(%(victims)s::jsonb)
            AS v(id bigint, u text, reason text, r float8, f float8, i float8, s float8,
                 t integer, k text, n bigint, h jsonb, inf float8, g boolean)
    ), gone AS (
        DELETE FROM {MemoryRecord._meta.db_table} WHERE id IN (SELECT id FROM v)
        RETURNING id, user_id, created_at, last_accessed_at, hits, importance, pinned,
                  due_at, slot, entry_timestamp,
                  -- records.extract.follows_information
                  importance_source = '{ImportanceSource.DEFAULT.value}'
                      AND importance_rule IN ('', '{INFORMATION_RULE}') AS follows,
                  importance_rule = '{INFORMATION_RULE}' AS informed
    ), events AS (
        INSERT INTO {EvictionEvent._meta.db_table} (record_id, app_name, user_id, reason,
            recency, frequency, importance, score, tokens, policy_version, run_id,
            evicted_at, dedupe_key, superseded_by)
        SELECT v.id, %(app)s, v.u, v.reason, v.r, v.f, v.i, v.s, v.t, %(version)s::integer,
               %(run)s::bigint, %(now)s, v.k, v.n
        FROM v
    ), replay AS (
        INSERT INTO {EvictedRecord._meta.db_table} (record_id, app_name, user_id,
            evicted_at, created_at, last_accessed_at, hits, importance, pinned, due_at,
            slot, stated_at, term_hashes, information, informed)
        SELECT g.id, %(app)s, g.user_id, %(now)s, g.created_at, g.last_accessed_at, g.hits,
               g.importance, g.pinned, g.due_at, COALESCE(g.slot, ''), g.entry_timestamp,
               COALESCE(v.h, '[]'::jsonb), CASE WHEN g.follows THEN v.inf END,
               g.follows AND g.informed
        FROM gone g JOIN v ON v.id = g.id
    ), regret AS (
        INSERT INTO {RegretTerm._meta.db_table} (app_name, user_id, record_id, term_hash,
            evicted_at)
        SELECT %(app)s, v.u, v.id, x.h, %(now)s
        FROM v CROSS JOIN LATERAL jsonb_array_elements_text(v.h) AS x(h)
        WHERE v.g AND v.h IS NOT NULL
    )
    SELECT count(*) FROM gone
"""  # noqa: S608 - the models' tables; values are parameters
server_functions.register(
    server_functions.Statement(
        "evict",
        lambda: (_PG_EVICT, {}),
        types={
            "victims": "jsonb",
            "app": "text",
            "now": "timestamptz",
            "version": "integer",
            "run": "bigint",
        },
        returns=("bigint",),
        volatile=True,
    )
)


def _pg_evict(app_name, victims, now, policy_version, run_id, reason, contents) -> int:
    """PostgreSQL: ``evict`` in one statement (with the victims' texts at hand): delete
    the records and, from the deleted rows, write their eviction events, replay
    metadata and regret terms. Only the term hashes are computed here (keyed, in
    Python). The victims travel as one JSON parameter: quoting a dozen arrays
    element by element cost more than the statement."""
    ids = [v.id for v in victims]
    if contents is None or any(i not in contents for i in ids):
        contents = dict(MemoryRecord.objects.filter(id__in=ids).values_list("id", "content"))
    known: dict[str, str] = {}  # a term's hash, once per eviction (a user's words repeat)
    rows = [
        {
            "id": v.id,
            "u": v.user_id,
            "reason": str(reason or v.reason),
            "r": v.score.recency,
            "f": v.score.frequency,
            "i": v.score.importance,
            "s": v.score.total,
            "t": v.tokens,
            "k": v.dedupe_key,
            "n": v.superseded_by,
            "h": access_log.record_hashes(contents[v.id], known) if v.id in contents else None,
            "inf": information_importance(contents[v.id]) if v.id in contents else None,
            "g": (reason or v.reason) in REGRET_REASONS,
        }
        for v in victims
    ]
    sql = server_functions.call("evict") or _PG_EVICT
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "app": app_name,
                "now": now,
                "version": policy_version,
                "run": run_id,
                "victims": json.dumps(rows),
            },
        )
        return cursor.fetchone()[0]


def _log_evictions(app_name, victims, now, policy_version, run_id, reason) -> None:
    """One EvictionEvent per victim (no content); PostgreSQL writes them in ``_pg_evict``."""
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
