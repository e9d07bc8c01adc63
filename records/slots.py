"""Slots: what a record states a value of ("the delivery address", "the phone number").

Pure Python, text in, slot name out. When a user gives a new value of a slot, the old
statement is superseded: enforcement retires it (``PolicyParams.supersede``), so an old
address neither outlives the new one nor is returned ahead of it. A slot needs both
the phrase and a value in the same text, so "I've updated the delivery address on
your account" (no value) or a question about the slot supersedes nothing. Patterns run
on RE2: linear in the text, whatever the text.
"""

from __future__ import annotations

import re2

from . import re2_match

_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False
_OPTIONS.never_capture = True


def _compile(pattern: str):
    return re2.compile(pattern, _OPTIONS)


# (slot, phrase that names it, the value that must come with it); the first match wins.
_SLOTS = (
    (
        "delivery-address",
        _compile(
            r"\b(?:deliver(?:y|ies)? (?:to|address)|ship(?:ping)? (?:to|address)|"
            r"send (?:it|them|orders?|parcels?) to|(?:my|our) (?:new |home |postal )?address|"
            r"(?:i|we)(?:'ve| have)? moved to)\b"
        ),
        _compile(r"\d"),  # a house number or postcode
    ),
    (
        "phone",
        _compile(
            r"\b(?:my|our) (?:new )?(?:phone|mobile|telephone)(?: number)? (?:is|has changed)"
        ),
        _compile(r"\d{3}"),
    ),
    (
        "email",
        _compile(r"\b(?:my|our) (?:new )?e-?mail(?: address)? (?:is|has changed)"),
        _compile(r"\S@\S+\.\w"),
    ),
)


def slot_of(text: str) -> str:
    """The slot ``text`` gives a value of, or '' (most texts; questions always)."""
    if "?" in text:
        return ""
    encoded = text.encode("utf-8", "surrogatepass")  # byte offsets from here on
    for name, phrase, value in _SLOTS:
        found = re2_match.span(phrase, encoded)
        if found and re2_match.span(value, encoded, found[1]):
            return name
    return ""
