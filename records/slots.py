"""Slots: what a record states a value of ("the delivery address", "the phone number").

Pure Python, text in, slot name out. When a user gives a new value of a slot, the old
statement is superseded: enforcement retires it (``PolicyParams.supersede``), so an old
address neither outlives the new one nor is returned ahead of it. A slot needs both
the phrase and a value in the same text, so "I've updated the delivery address on
your account" (no value) or a question about the slot supersedes nothing.
"""

from __future__ import annotations

import re

# (slot, phrase that names it, the value that must come with it); the first match wins.
_SLOTS: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    (
        "delivery-address",
        re.compile(
            r"\b(?:deliver(?:y|ies)? (?:to|address)|ship(?:ping)? (?:to|address)|"
            r"send (?:it|them|orders?|parcels?) to|(?:my|our) (?:new |home |postal )?address|"
            r"(?:i|we)(?:'ve| have)? moved to)\b",
            re.IGNORECASE,
        ),
        re.compile(r"\d"),  # a house number or postcode
    ),
    (
        "phone",
        re.compile(
            r"\b(?:my|our) (?:new )?(?:phone|mobile|telephone)(?: number)? (?:is|has changed)",
            re.IGNORECASE,
        ),
        re.compile(r"\d{3}"),
    ),
    (
        "email",
        re.compile(r"\b(?:my|our) (?:new )?e-?mail(?: address)? (?:is|has changed)", re.I),
        re.compile(r"\S@\S+\.\w"),
    ),
)


def slot_of(text: str) -> str:
    """The slot ``text`` gives a value of, or '' (most texts; questions always)."""
    if "?" in text:
        return ""
    for name, phrase, value in _SLOTS:
        found = phrase.search(text)
        if found and value.search(text, found.end()):
            return name
    return ""
