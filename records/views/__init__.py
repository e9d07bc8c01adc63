"""Pages of the memory domain. Views stay thin: selectors read, services write."""

from .embeddings import embeddings_backfill, embeddings_page
from .policies import policies, policy
from .rules import rule, rule_new, rule_rescore, rule_try, rules
from .sessions import retired_session, session, sessions
from .users import importance, pin, preview, unpin, user_detail, users

__all__ = [
    "embeddings_backfill",
    "embeddings_page",
    "importance",
    "pin",
    "policies",
    "policy",
    "preview",
    "retired_session",
    "rule",
    "rule_new",
    "rule_rescore",
    "rule_try",
    "rules",
    "session",
    "sessions",
    "unpin",
    "user_detail",
    "users",
]
