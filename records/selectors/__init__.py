"""Read-only queries for pages. Each returns plain values in a bounded number of queries:
the count never grows with the number of users, records, sessions or events."""

from .apps import UnknownApp, check_known_app, is_known_app, known_apps
from .overview import (
    ForgettingRates,
    Spread,
    eviction_reasons,
    evictions_per_day,
    first_counted_day,
    forgetting_rates,
    growth_per_week,
    per_user_histogram,
    session_event_spread,
    spread_by_group,
    user_spread,
    users_pinned_over_cap,
)
from .policies import PolicyChange, policy_changes, policy_history, policy_rows
from .records import ScoredRow, scored_record, scored_records, session_links
from .rules import (
    EffectiveRules,
    decide_sample,
    effective_rules,
    rescore_scope,
    rule_apps,
    staff_rules,
)
from .sessions import (
    app_session_counts,
    artifacts_for_session,
    session_events_page,
    session_page,
)
from .users import USER_SORTS, UserRow, natural_descending, user_page

__all__ = [
    "USER_SORTS",
    "EffectiveRules",
    "ForgettingRates",
    "PolicyChange",
    "ScoredRow",
    "Spread",
    "UnknownApp",
    "UserRow",
    "app_session_counts",
    "artifacts_for_session",
    "check_known_app",
    "decide_sample",
    "effective_rules",
    "eviction_reasons",
    "evictions_per_day",
    "first_counted_day",
    "forgetting_rates",
    "growth_per_week",
    "is_known_app",
    "known_apps",
    "natural_descending",
    "per_user_histogram",
    "policy_changes",
    "policy_history",
    "policy_rows",
    "rescore_scope",
    "rule_apps",
    "scored_record",
    "scored_records",
    "session_event_spread",
    "session_events_page",
    "session_links",
    "session_page",
    "spread_by_group",
    "staff_rules",
    "user_page",
    "user_spread",
    "users_pinned_over_cap",
]
