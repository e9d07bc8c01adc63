"""Text PostgreSQL can store: it refuses NUL characters and lone UTF-16 surrogates in
text and JSON. They are replaced by U+FFFD (the replacement character), on every
database alike, so stored data reads back the same everywhere; anything else is kept
exactly. The replacement is logged, never silent.

JSON has no NaN or infinity: ``storable`` refuses them (ValueError) on both databases,
which would otherwise refuse them each its own way (PostgreSQL's jsonb, SQLite's JSON
check).
"""

from __future__ import annotations

import logging
import math
from typing import Any

log = logging.getLogger(__name__)

REPLACEMENT = "\ufffd"


def _unstorable(text: str) -> bool:
    # Scans in C, no regular expression: a lone surrogate is exactly what UTF-8 refuses.
    if "\x00" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def storable_text(text: str) -> str:
    if not _unstorable(text):
        return text
    return "".join(REPLACEMENT if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in text)


def storable(value: Any, *, what: str = "value") -> Any:
    """``value`` (JSON data) with unstorable characters replaced in every string; a
    ValueError naming ``what`` if it holds a float JSON cannot (NaN, infinity)."""
    changed = False

    def clean(v):
        nonlocal changed
        if isinstance(v, str):
            if _unstorable(v):
                changed = True
                return storable_text(v)
            return v
        if isinstance(v, dict):
            return {clean(k): clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{what} holds {v!r}: JSON has no NaN or infinity")
        return v

    out = clean(value)
    if changed:
        log.warning("%s held NUL or invalid UTF-16 characters; stored as U+FFFD", what)
    return out
