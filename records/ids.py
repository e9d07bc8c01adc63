"""The one id validator: app, user and session ids (and file names) memadmin can store.

Every edge calls it, the ADK services, the HTTP API, the store and erasure, so an id is
refused with the same sentence wherever it comes in.
"""

from __future__ import annotations

import unicodedata

from .models import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX


def validate_id(
    name: str,
    value: object,
    max_length: int,
    *,
    error: type[ValueError] = ValueError,
    blank: bool = False,
) -> str:
    """Return ``value`` if it is a usable id, else raise ``error`` saying why.
    ``blank`` accepts an empty or blank string (an optional id)."""
    if not isinstance(value, str):
        raise error(f"{name} must be a string, not {type(value).__name__}.")
    if not blank and not value.strip():
        raise error(f"{name} must not be empty or blank.")
    if "\x00" in value:
        raise error(f"{name} must not contain NUL characters.")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # else a bare codec error deep in a write or a hash
            raise error(f"{name} must be valid Unicode: it holds a lone surrogate.") from None
    if len(value) > max_length:
        raise error(f"{name} is {len(value)} characters long; at most {max_length} are allowed.")
    return value


def stored_session_id(session_id: str) -> str:
    """A session id as the services store and look it up: ADK's own session services
    ignore surrounding whitespace in it, and so do ours (sessions, memory, HTTP API)."""
    return session_id.strip()


BIGINT_MAX = 2**63 - 1


def decimal_id(text: str) -> int | None:
    """``text`` as a row id, when it is one as we write them: ASCII digits ("²" is a digit
    to ``str.isdigit``, not to ``int``; "05" is not how we write 5) of a number a bigint
    holds. Else None: never an error from ``int``."""
    if not (text.isascii() and text.isdigit() and len(text) <= 19):
        return None
    value = int(text)
    return value if value <= BIGINT_MAX and str(value) == text else None


def record_id(value: object, name: str = "memory_id") -> int:
    """A record id as search returns it, from a caller: its digits (``decimal_id``) or
    the int itself; else a ValueError. Not True (an int to Python, 1 to pydantic's lax
    mode), nor 5.0, " 5 ", "05" or "٥": a confused argument must not delete a record."""
    found = None
    if isinstance(value, str):
        found = decimal_id(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value <= BIGINT_MAX:
        found = value
    if found is None:
        raise ValueError(f"{name} must be a record id as returned by search, not {value!r}")
    return found


def validate_app_name(value: object, *, error: type[ValueError] = ValueError) -> str:
    """``validate_id`` of an app name, which also may not hold control characters: the
    touch buffer joins an app and a user with one (``touches.SEP``) and splits at the
    first, so only the user's part may hold it."""
    validate_id("app_name", value, APP_NAME_MAX, error=error)
    if any(unicodedata.category(ch) == "Cc" for ch in value):  # type: ignore[union-attr]
        raise error("app_name must not contain control characters.")
    return value  # type: ignore[return-value]


def check_scope(app_name: str, user_id: str, session_id: str | None = None) -> None:
    """Refuse an (app, user[, session]) we cannot store; the session id may be empty."""
    validate_app_name(app_name)
    validate_id("user_id", user_id, USER_ID_MAX)
    if session_id is not None:
        validate_id("session_id", session_id, SESSION_ID_MAX, blank=True)
