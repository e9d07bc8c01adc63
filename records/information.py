"""How much a text says, for text no importance rule matches (most of a conversation).

Pure Python, text in, importance out, deterministic. "Let me check that for you" and
"Wow, that's great!" carry less than "We're off to Lisbon for my sister's wedding on
the 14th": more distinct content words, names and numbers mean more a later question
can be about. The result stays within INFORMATION_RANGE, below every shipped rule
(the lowest, complaints, is 0.5), so a rule's decision always outranks it.
Patterns run on RE2: linear in the text, whatever the text.
"""

from __future__ import annotations

import re2

from . import re2_match

INFORMATION_RANGE = (0.05, 0.45)
_OPTIONS = re2.Options()
_OPTIONS.never_capture = True
# Content words: five letters or more (function words are shorter); numbers.
_WORD = re2.compile(r"[A-Za-z][A-Za-z'-]{4,}", _OPTIONS)
_NUMBER = re2.compile(r"\d+", _OPTIONS)
# Capitalised words after a lower-case word or a comma: names, not sentence starts.
_NAME = re2.compile(r"[a-z,] +[A-Z][a-z]+", _OPTIONS)


def information_importance(text: str) -> float:
    """0.05 for an empty phrase, up to 0.45 for a text dense with names and numbers."""
    # The patterns are ASCII: on UTF-8 bytes they find the same texts, as bytes.
    encoded = text.encode("utf-8", "surrogatepass")
    words = len({w.lower() for w in re2_match.find_all(_WORD, encoded)})
    names = len(set(re2_match.find_all(_NAME, encoded)))
    numbers = len(re2_match.find_all(_NUMBER, encoded))
    low, high = INFORMATION_RANGE
    score = low + 0.03 * min(words, 10) + 0.03 * min(names, 2) + 0.02 * min(numbers, 2)
    return round(min(high, score), 4)
