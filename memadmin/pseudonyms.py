"""Keyed hashes that name a memory user without keeping the id.

One key, derived from SECRET_KEY: erasure receipts, barriers and the erasure list use
``subject_hash``; memadmin's own log lines name users by its first digits (``pseudonym``),
so a log line can be matched to a receipt but not read back into an id.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from django.conf import settings

# URL keyword arguments that carry a memory user id (dashboard pages and the API).
SUBJECT_URL_KWARGS = frozenset({"user", "user_id"})
# Query parameters that carry one (or a fragment of one) on GET pages; an API sessions
# page's cursor holds the user id of the last session listed.
SUBJECT_QUERY_PARAMS = frozenset({"user", "user_id", "q", "cursor"})
# Query parameters that carry a request target (the login page's ``next``).
TARGET_QUERY_PARAMS = frozenset({"next"})
_ROUTE_PARAMETER = re.compile(r"<(?:[^<>:]+:)?(\w+)>")
# What follows a "users" segment, when no route said which part is the id.
_USERS_SEGMENT = "/users/"


def _hmac_key() -> bytes:
    # Derived from SECRET_KEY with its own label, so it is unlike any other key we use;
    # a new SECRET_KEY gives new hashes (old receipts then only match with the old key).
    return hashlib.sha256(b"memadmin-erasure-subject:" + settings.SECRET_KEY.encode()).digest()


def subject_hash(user_id: str) -> str:
    """Keyed hash of a user id: names a subject without keeping the id."""
    return hmac.new(_hmac_key(), user_id.encode("utf-8", "surrogatepass"), "sha256").hexdigest()


def hmac_key_id() -> str:
    """Names the key (not reversible), so a receipt says which key its hash needs."""
    return hashlib.sha256(b"key-id:" + _hmac_key()).hexdigest()[:16]


def pseudonym(user_id: str) -> str:
    """How logs name a user: the first 16 hex digits of ``subject_hash``."""
    return "hmac:" + subject_hash(user_id)[:16]


def route_with(match) -> str | None:
    """The matched route's path with user ids replaced by pseudonyms; None if it has none.

    Built from the route, so an id with ``/`` in it is replaced whole.
    """
    if not SUBJECT_URL_KWARGS & set(match.kwargs):
        return None

    def fill(parameter: re.Match) -> str:
        name = parameter.group(1)
        value = str(match.kwargs.get(name, parameter.group(0)))
        return pseudonym(value) if name in SUBJECT_URL_KWARGS else value

    # A regex route (re_path) keeps its pattern text, which names no user either.
    return "/" + _ROUTE_PARAMETER.sub(fill, match.route)


def unrouted_path(path: str) -> str:
    """A path no route took apart (a 404, the API's catch-all): all after ``/users/`` goes."""
    at = path.find(_USERS_SEGMENT)
    if at < 0 or at + len(_USERS_SEGMENT) == len(path):
        return path
    return path[: at + len(_USERS_SEGMENT)] + "..."


def pseudonymous_path(request) -> str:
    """``request.path`` with any user id in it replaced by its pseudonym."""
    match = getattr(request, "resolver_match", None)
    safe = route_with(match) if match is not None else None
    if safe is None:
        return unrouted_path(request.path)
    script_prefix = request.path[: len(request.path) - len(request.path_info)]
    return script_prefix.rstrip("/") + safe
