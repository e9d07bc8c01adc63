"""Was an eviction a mistake? Regret hits, user corrections and daily counters.

Regret hits: when records are evicted by policy, a keyed hash of each of their terms
is kept for ``REGRET_WINDOW`` (the terms themselves are not). A later search whose
terms match enough of one evicted record's hashes counts as a regret hit.
Corrections: agents report "I told you before…" moments (a service call, or the ADK
function tool below); charted per 1,000 ingested sessions next to evictions.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from functools import lru_cache

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from . import search_text
from .ids import check_scope
from .models import Correction, DailyCounter, RegretTerm

REGRET_WINDOW = timedelta(days=30)
MAX_TERMS_PER_RECORD = 64
# A search is a regret hit when one evicted record shares this many of its terms
# (or all of them, for shorter queries).
REGRET_MIN_MATCH = 2

SESSIONS_INGESTED = "sessions_ingested"
RECORDS_ADDED = "records_added"
SEARCHES = "searches"
REGRET_HITS = "regret_hits"
CORRECTIONS = "corrections"


def _key() -> bytes:
    # Derived, so the hashes change when the secret key does and cannot be reversed
    # by anyone without it.
    return _derived_key(settings.SECRET_KEY)


@lru_cache(maxsize=4)
def _derived_key(secret_key: str) -> bytes:
    return hashlib.sha256(b"memadmin-regret:" + secret_key.encode()).digest()


def term_hash(term: str) -> str:
    keyed = _keyed(settings.SECRET_KEY).copy()  # the key's pads, computed once
    keyed.update(term.encode("utf-8", "surrogatepass"))
    return keyed.hexdigest()[:32]


@lru_cache(maxsize=4)
def _keyed(secret_key: str) -> hmac.HMAC:
    return hmac.new(_derived_key(secret_key), digestmod="sha256")


def _terms(text: str) -> list[str]:
    return search_text.query_words(text)[:MAX_TERMS_PER_RECORD]


def remember_evicted(
    app_name: str, user_id_by_record: dict[int, str], contents: dict[int, str], now: datetime
) -> int:
    """Keep the keyed hashes of evicted records' terms (call before the records go)."""
    rows = [
        (user_id_by_record[record_id], record_id, term_hash(term))
        for record_id, text in contents.items()
        for term in dict.fromkeys(_terms(text))
    ]
    if connection.vendor == "postgresql":
        # Every ingest that evicts writes a few hundred of these: one statement over
        # arrays costs a fraction of building and compiling as many model instances.
        table = RegretTerm._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {table} (app_name, user_id, record_id, term_hash, evicted_at)
                SELECT %s, u, r, h, %s
                FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS x(u, r, h)
                """,  # noqa: S608 - the table name is the model's; values are parameters
                [app_name, now, *(list(column) for column in zip(*rows, strict=True))]
                if rows
                else [app_name, now, [], [], []],
            )
        return len(rows)
    RegretTerm.objects.bulk_create(
        [
            RegretTerm(
                app_name=app_name,
                user_id=user_id,
                record_id=record_id,
                term_hash=hashed,
                evicted_at=now,
            )
            for user_id, record_id, hashed in rows
        ],
        batch_size=2000,
    )
    return len(rows)


def is_regret(app_name: str, user_id: str, terms: Iterable[str], now: datetime) -> bool:
    """Whether ``terms`` match a record of this user evicted within the window."""
    hashes = list(dict.fromkeys(term_hash(t) for t in terms))
    if not hashes:
        return False
    sql, params = regret_sql(app_name, user_id, hashes, now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        return bool(cursor.fetchone()[0])


def regret_sql(
    app_name: str, user_id: str, hashes: list[str], now: datetime
) -> tuple[str, list[object]]:
    """The regret rule as one boolean SQL expression and its parameters, so search can
    fold it into its own statement (one round trip per turn). ``hashes`` not empty."""
    needed = min(REGRET_MIN_MATCH, len(hashes))
    if connection.vendor == "postgresql":
        match, match_params = "= ANY(%s)", [hashes]
    else:
        match, match_params = "IN (" + ", ".join(["%s"] * len(hashes)) + ")", hashes
    sql = f"""EXISTS (
        SELECT 1 FROM {RegretTerm._meta.db_table}
        WHERE app_name = %s AND user_id = %s AND term_hash {match} AND evicted_at >= %s
        GROUP BY record_id HAVING count(DISTINCT term_hash) >= %s)"""  # noqa: S608 - the model's table; values are parameters
    cutoff = connection.ops.adapt_datetimefield_value(now - REGRET_WINDOW)
    return sql, [app_name, user_id, *match_params, cutoff, needed]


def bump(app_name: str, name: str, now: datetime, by: int = 1) -> None:
    """Add to today's counter (one UPDATE, or an INSERT the first time in a day)."""
    _bump_day(app_name, name, now.date(), by)


def _bump_day(app_name: str, name: str, day: date, by: int) -> None:
    updated = DailyCounter.objects.filter(day=day, app_name=app_name, name=name).update(
        value=F("value") + by
    )
    if updated:
        return
    try:
        with transaction.atomic():
            DailyCounter.objects.create(day=day, app_name=app_name, name=name, value=by)
    except IntegrityError:  # created concurrently: add to it
        DailyCounter.objects.filter(day=day, app_name=app_name, name=name).update(
            value=F("value") + by
        )


def bump_many(app_name: str, counts: Mapping[str, int], now: datetime) -> None:
    """Several counters in one transaction: one commit instead of one per counter."""
    add_to_day(app_name, now.date(), counts)


def add_to_day(app_name: str, day: date, counts: Mapping[str, int]) -> None:
    """``bump_many`` for a given day (buffered counters are flushed later)."""
    counts = {name: by for name, by in sorted(counts.items()) if by}
    if not counts:
        return
    with transaction.atomic():
        for name, by in counts.items():  # always the same order: no deadlock
            _bump_day(app_name, name, day, by)


def report_correction(
    app_name: str, user_id: str, now: datetime, *, session_id: str = "", about: str = ""
) -> Correction:
    """Record that the user had to repeat something. ``about`` is matched, never stored."""
    check_scope(app_name, user_id, session_id)
    matched = bool(about) and is_regret(app_name, user_id, _terms(about), now)
    with transaction.atomic():  # the correction and the day's counter, or neither
        correction = Correction.objects.create(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            matched_eviction=matched,
            reported_at=now,
        )
        bump(app_name, CORRECTIONS, now)
    return correction


def prune_regret_terms(now: datetime) -> int:
    return RegretTerm.objects.filter(evicted_at__lt=now - REGRET_WINDOW).delete()[0]
