"""RE2's own matching, without the ``re2`` wrapper's generator and match objects.

Rules, slots and the information score ask small questions of short texts on every
event of every ingest ("does it match?", "where does it end?", "what are the matches?")
and the wrapper's per-call machinery cost more than RE2's match itself. These call the
compiled program directly on UTF-8 bytes (every offset is a byte offset), and fall back
to the wrapper's public methods if its internals ever change.
"""

from __future__ import annotations

import re2

_ANCHOR = getattr(re2, "_Anchor", None)
_NO_MATCH = (-1, -1)


def _engine(regexp):
    return getattr(regexp, "_regexp", None) if _ANCHOR is not None else None


def span(regexp, encoded: bytes, pos: int = 0, *, whole: bool = False) -> tuple[int, int] | None:
    """(start, end) of the leftmost match in ``encoded[pos:]`` (of all of ``encoded`` with
    ``whole``), or None."""
    engine = _engine(regexp)
    if engine is None:
        found = regexp.fullmatch(encoded) if whole else regexp.search(encoded, pos)
        return None if found is None else found.span()
    anchor = _ANCHOR.ANCHOR_BOTH if whole else _ANCHOR.UNANCHORED
    found = engine.Match(anchor, encoded, pos, len(encoded))[0]
    return None if found == _NO_MATCH else found


def matches(regexp, encoded: bytes, *, whole: bool = False) -> bool:
    """Whether ``regexp`` matches all of ``encoded`` (``whole``) or some of it."""
    return span(regexp, encoded, whole=whole) is not None


def find_all(regexp, encoded: bytes) -> list[bytes]:
    """The non-overlapping matches, left to right, as ``findall`` of a pattern without
    groups gives them."""
    engine = _engine(regexp)
    if engine is None:
        return regexp.findall(encoded)
    out = []
    pos, end = 0, len(encoded)
    unanchored = _ANCHOR.UNANCHORED
    while pos <= end:
        start, stop = engine.Match(unanchored, encoded, pos, end)[0]
        if start < 0:
            break
        out.append(encoded[start:stop])
        pos = stop if stop > start else stop + 1  # an empty match: step past it
    return out
