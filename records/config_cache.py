"""Each process's cache of the apps' policies and importance rules.

Ingest needs an app's policy and rules every time, and they rarely change, so each
process (web, Celery worker, command) keeps them, keyed by the configuration
generation: one row (``ConfigGeneration``) that database triggers change whenever any
policy or rule row is inserted, updated or deleted, however it is changed (a form, the
admin, a management command, raw SQL). Ingest reads the generation in a statement it
runs anyway, under the user's lock (``records.store.ingest``), and uses the cached
values only when the generation is still the one they were read at; otherwise it
reads them again (and extracts again with the new rules). So a change is seen by the
next ingest in every process.

Values are read *after* the generation they are cached under, never before: a change
that lands in between makes the cached values newer than their key, which costs one
more read later and is never stale. No generation row (a flushed table) means nothing
is cached.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from . import rules as pure_rules
from .extract import Extractor
from .models import ConfigGeneration, ImportanceRule, Policy
from .policies import policy_for
from .tokens import token_counter

log = logging.getLogger(__name__)

GENERATION_TABLE = ConfigGeneration._meta.db_table
# A scalar subquery, so other statements can carry it (NULL when there is no row).
GENERATION_SQL = f"(SELECT value FROM {GENERATION_TABLE} WHERE id = 1)"  # noqa: S608 - the model's table


@dataclass(frozen=True, slots=True)
class AppConfig:
    """An app's policy and merged rules as read at ``generation`` (None: not cached)."""

    app_name: str
    generation: int | None
    policy: Policy
    rules: tuple[pure_rules.Rule, ...]

    def extractor(self) -> Extractor:
        # Built each time (cheap): the token counter and classifier come from settings.
        return Extractor(
            self.rules,
            token_counter(),
            _classifier(),
            information=self.policy.information_importance,
        )


_cache: dict[str, AppConfig] = {}


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


def read_generation() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {GENERATION_SQL}")
        return cursor.fetchone()[0]


def load(app_name: str, generation: int | None = None) -> AppConfig:
    """Read the app's policy and rules (creating the policy on first use) and cache
    them. ``generation``: the value a statement just read, before this call.

    Cached only if the generation is the same after reading: creating the policy here
    changes it, and in a transaction that may yet roll back, the row would be cached
    under a generation that comes back without it."""
    if generation is None:
        generation = read_generation()
    config = AppConfig(app_name, generation, policy_for(app_name), active_rules(app_name))
    if generation is not None and read_generation() == generation:
        _cache[app_name] = config
    return config


def cached(app_name: str) -> AppConfig | None:
    """The cached values, unchecked: only for work that is checked again under the
    lock (``records.store.ingest_extracted``)."""
    return _cache.get(app_name)


def current(app_name: str, generation: int | None = None) -> AppConfig:
    """The app's current values: the cached ones if ``generation`` (read now when not
    given) is theirs, else read again."""
    if generation is None:
        generation = read_generation()
    config = _cache.get(app_name)
    if config is not None and generation is not None and config.generation == generation:
        return config
    return load(app_name, generation)


def clear() -> None:
    _cache.clear()
