"""The policies a quality replay compares, and the baselines' victim choice.

- ``default``: what a new app gets today (``policy_for`` creates the product's default
  policy row), with ``max_records`` set to the budget.
- ``article``: the article's policy exactly: weights 0.4 / 0.2 / 0.4, a 30-day half-life,
  saturation at 100 hits, a 365-day TTL, new records starting one half-life old (what
  ingest does today for every policy).
- ``fifo``, ``lru``, ``lfu``, ``random``: the baselines. The app's own policy is set so
  that it never evicts (caps and TTL out of reach); right after every
  ``add_session_to_memory`` the bench selects victims with the baseline's order and
  evicts them through ``records.store.evict`` under the user's lock, the same call the
  product's enforcement makes. Like the product they count pinned records against the
  budget and never evict one, and they have no TTL. Orders (first evicted first):
    fifo    oldest ``created_at`` (ties: id, i.e. insertion order)
    lru     oldest last use, where a use is the creation or a search that returned the
            record: greatest(created_at, last_accessed_at), then created_at, id
    lfu     fewest hits (searches that returned it), then oldest last use as in lru, id
    random  md5(seed, user, source session, source event): seeded, and the same in
            every run and app, since it does not depend on record ids or the app name
- ``keep-all``: nothing is evicted (caps and TTL out of reach): the ceiling of search.

``max_tokens`` is out of reach in every replay: the budget is a record count.
"""

from __future__ import annotations

from datetime import datetime

from records.policy import CENTURY_DAYS, LIMITS  # pure: no Django

# The names below are read without Django (bench.quality.tables); the functions below
# import the product where they run.

DEFAULT = "default"
ARTICLE = "article"
KEEP_ALL = "keep-all"
TUNED = "tuned"  # a starting policy with the tuner's values (scenario "tuning")
BASELINES = ("fifo", "lru", "lfu", "random")
POLICIES = (DEFAULT, ARTICLE, *BASELINES)

# Out of reach: the largest count and TTL a policy accepts.
UNBOUNDED = int(LIMITS["max_records"][0])
NO_TTL_DAYS = CENTURY_DAYS

# With the article preset's scoring values (records.models.preset_values).
ARTICLE_VALUES = {"ttl_days": 365, "summarise": False}

_LAST_USE = "greatest(created_at, last_accessed_at)"
ORDERS = {
    "fifo": "created_at, id",
    "lru": f"{_LAST_USE}, created_at, id",
    "lfu": f"hits, {_LAST_USE}, created_at, id",
    "random": (
        "md5(%(seed)s::text || ':' || user_id || ':' || source_session_id || ':' "
        "|| source_event_ids::text), id"
    ),
}


def configure(
    app_name: str, policy: str, budget: int | None, values: str = "", start: str = DEFAULT
) -> None:
    """Give ``app_name`` the policy row this replay runs with (for ``TUNED``: the
    ``start`` policy with ``values``, JSON policy fields, on top)."""
    import json

    from records.policies import policy_for, update_policy

    policy_for(app_name)  # the product's defaults for a new app
    if policy == TUNED:
        if start not in (DEFAULT, ARTICLE):
            raise ValueError(f"unknown starting policy {start!r}; expected default or article")
        changes = {**_changes(start, budget), **json.loads(values)}
    else:
        changes = _changes(policy, budget)
    update_policy(app_name, changes, note=f"quality bench: {policy}")


def _changes(policy: str, budget: int | None) -> dict:
    """The policy fields ``policy`` sets on a new app's default row."""
    from records.models import preset_values

    if policy == DEFAULT:
        changes = {"max_records": budget, "max_tokens": UNBOUNDED}
    elif policy == ARTICLE:
        changes = {
            **preset_values(ARTICLE),  # the article's weights, half-life, fresh start ...
            **ARTICLE_VALUES,
            "max_records": budget,
            "max_tokens": UNBOUNDED,
        }
    elif policy in BASELINES or policy == KEEP_ALL:
        # The product never evicts here: caps and TTL out of reach, nothing superseded.
        changes = {
            "max_records": UNBOUNDED,
            "max_tokens": UNBOUNDED,
            "ttl_days": NO_TTL_DAYS,
            "supersede": False,
        }
    else:
        raise ValueError(
            f"unknown policy {policy!r}; expected one of {POLICIES + (KEEP_ALL, TUNED)}"
        )
    return changes


def baseline_victims(app_name: str, user_id: str, policy: str, budget: int, seed: int) -> list:
    """The unpinned records the baseline evicts to bring the user down to ``budget``."""
    from django.db import connection

    from records import policy as pure
    from records.models import MemoryRecord
    from records.victims import SelectedVictim

    table = MemoryRecord._meta.db_table
    sql = f"""
        SELECT id, tokens, importance, dedupe_key, source_session_id
        FROM {table}
        WHERE app_name = %(app)s AND user_id = %(user)s AND NOT pinned
        ORDER BY {ORDERS[policy]}
        LIMIT greatest(0, (SELECT count(*) FROM {table}
                           WHERE app_name = %(app)s AND user_id = %(user)s) - %(budget)s)
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, {"app": app_name, "user": user_id, "budget": budget, "seed": seed})
        rows = cursor.fetchall()
    return [
        SelectedVictim(
            id=id,
            user_id=user_id,
            reason="record_cap",
            tokens=tokens,
            # A baseline has no score; the eviction log keeps the importance alone.
            score=pure.Score(0.0, 0.0, importance, 0.0),
            dedupe_key=key or "",
            session_id=session_id or "",
        )
        for id, tokens, importance, key, session_id in rows
    ]


def enforce_baseline(
    app_name: str, user_id: str, policy: str, budget: int, now: datetime, seed: int
) -> int:
    """Select and evict as the product's enforcement does, with the baseline's order."""
    from records import store
    from records.locks import user_lock
    from records.policies import policy_for

    version = policy_for(app_name).version
    with user_lock(app_name, user_id):
        victims = baseline_victims(app_name, user_id, policy, budget, seed)
        store.evict(app_name, victims, now, policy_version=version)
    return len(victims)
