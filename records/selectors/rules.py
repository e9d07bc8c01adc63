"""Importance rules for the Rules page: the shipped defaults, staff rules, and the rule
set each app actually uses (``store.active_rules``), with where each rule comes from."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from .. import rules as pure_rules
from ..models import ImportanceRule, ImportanceSource, MemoryRecord
from ..store import active_rules
from .apps import known_apps

DEFAULT_NAMES = frozenset(r.name for r in pure_rules.DEFAULT_RULES)


def staff_rules() -> list[ImportanceRule]:
    """Every staff rule, all-apps rules first. One query (rules are few)."""
    return list(ImportanceRule.objects.select_related("updated_by").order_by("app_name", "name"))


def rule_apps(rows: list[ImportanceRule]) -> list[str]:
    """Apps to pick from: the known apps, and those a staff rule names."""
    apps = set(known_apps())
    apps |= {r.app_name for r in rows if r.app_name}
    return sorted(apps)


@dataclass(frozen=True)
class EffectiveRule:
    rule: pure_rules.Rule
    source: str  # "shipped default", "all apps" or "this app"
    replaces_default: bool
    row: ImportanceRule | None  # the staff rule it comes from, if any


@dataclass(frozen=True)
class SkippedRule:
    row: ImportanceRule
    why: str  # the problems, as sentences


@dataclass(frozen=True)
class EffectiveRules:
    app_name: str
    rules: list[EffectiveRule]
    switched_off: list[ImportanceRule]  # disabled staff rules that win over their name
    invalid: list[SkippedRule]  # rows active_rules skips because they do not validate


def effective_rules(app_name: str, rows: list[ImportanceRule]) -> EffectiveRules:
    """What ``active_rules(app_name)`` decides with, and why each rule is there.

    ``rows`` are the staff rules (``staff_rules()``); an app's own rule wins over an
    all-apps rule of the same name, which wins over the shipped default.
    """
    scope = [r for r in rows if r.app_name in ("", app_name)]
    problems = {r.pk: r.problems() for r in scope}
    invalid = [SkippedRule(r, "; ".join(problems[r.pk])) for r in scope if problems[r.pk]]
    winners: dict[str, ImportanceRule] = {}
    for row in sorted((r for r in scope if not problems[r.pk]), key=lambda r: r.app_name):
        winners[row.name] = row  # "" sorts first, so the app's own rule wins
    out = []
    for rule in active_rules(app_name):
        row = winners.get(rule.name)
        if row is None:
            out.append(EffectiveRule(rule, "shipped default", False, None))
            continue
        source = "this app" if row.app_name else "all apps"
        out.append(EffectiveRule(rule, source, rule.name in DEFAULT_NAMES, row))
    switched_off = [row for row in winners.values() if not row.enabled]
    return EffectiveRules(app_name, out, sorted(switched_off, key=lambda r: r.name), invalid)


@dataclass(frozen=True)
class RescoreScope:
    records: int
    kept: int  # staff- or caller-set importance, left as it is
    pinned: int


def rescore_scope(app_name: str) -> RescoreScope:
    """What a re-score of the app would look at. One aggregate query."""
    counts = MemoryRecord.objects.filter(app_name=app_name).aggregate(
        records=Count("id"),
        kept=Count(
            "id",
            filter=Q(importance_source__in=[ImportanceSource.STAFF, ImportanceSource.CALLER]),
        ),
        pinned=Count("id", filter=Q(pinned=True)),
    )
    return RescoreScope(**counts)


def decide_sample(app_name: str, text: str) -> pure_rules.Decision:
    """What the app's effective rules decide for ``text``. Reads only; nothing is stored."""
    return pure_rules.decide(text, active_rules(app_name))
