"""Free-text ids (apps, users) as one URL path segment each.

Agents choose their user ids (and app names) freely: "/" in one made a user page's URL
read as another route ("bob/preview" was the preview of "bob"), and a line break
matched no route at all, so every list linking to that user failed. In a dashboard URL
an id is one segment: "~" is written "~~", "/" "~s", and a segment of only dots
(which browsers resolve as "." and "..") has its dots written "~d". Everything else
is left to ``reverse``, which percent-encodes it. A segment with any other "~" pair, or
with a NUL (which no stored id holds), is no id (404).
"""

from __future__ import annotations

from django.urls import register_converter

_ESCAPES = {"~": "~~", "/": "~s"}
_UNESCAPES = {"~": "~", "s": "/", "d": "."}


def to_segment(value: str) -> str:
    """``value`` as one path segment (see the module)."""
    out = "".join(_ESCAPES.get(ch, ch) for ch in value)
    if out and out.strip(".") == "":
        out = "~d" * len(out)
    return out


def from_segment(segment: str) -> str:
    """The id ``to_segment`` wrote as ``segment``; ValueError if it wrote no such one,
    or if no id could hold it (NUL, refused by ``records.ids.validate_id``)."""
    if "\x00" in segment:
        raise ValueError("no id holds NUL")
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "~":
            unescaped = _UNESCAPES.get(segment[i + 1 : i + 2])
            if unescaped is None:
                raise ValueError("not an id segment")
            out.append(unescaped)
            i += 2
        else:
            out.append(ch)
            i += 1
    value = "".join(out)
    if to_segment(value) != segment:  # one spelling per id: "~d" only for all-dot ids
        raise ValueError("not an id segment")
    return value


class IdConverter:
    """``<id:name>``: one segment holding any id (``to_segment``)."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return from_segment(value)

    def to_url(self, value: str) -> str:
        return to_segment(value)


# Once per process, by the first URLconf that imports this module.
register_converter(IdConverter, "id")
