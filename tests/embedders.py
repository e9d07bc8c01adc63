"""Deterministic embedders for tests (no model, no download): ``MEMADMIN_EMBEDDER`` may
name any function here.

``bag_of_concepts`` hashes each word into one of 256 dimensions after mapping a few
synonyms to one concept, so "automobile" is near "car" without sharing a word. The
counters let a test see how often, and with how many texts, the embedder was called.
"""

from __future__ import annotations

import hashlib
import math
import re

DIMS = 256
CONCEPTS = {
    "automobile": "car",
    "vehicle": "car",
    "sedan": "car",
    "feline": "cat",
    "kitten": "cat",
    "physician": "doctor",
    "medic": "doctor",
}
CALLS: list[int] = []  # len(texts) of each call of bag_of_concepts
_WORD = re.compile(r"[a-z0-9]+")


def _dimension(word: str) -> int:
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % DIMS


def vector(text: str) -> list[float]:
    out = [0.0] * DIMS
    for word in _WORD.findall(text.lower()):
        out[_dimension(CONCEPTS.get(word, word))] += 1.0
    if not any(out):
        out[0] = 1.0  # no words: still a valid (non-zero) vector
    return out


def bag_of_concepts(texts: list[str]) -> list[list[float]]:
    CALLS.append(len(texts))
    return [vector(t) for t in texts]


def failing(texts):
    raise ConnectionError("embedding service unreachable")


def one_short(texts):
    return [vector(t) for t in texts][:-1]


def with_nan(texts):
    """NaN for texts that mention "poison", good vectors for the others."""
    return [[math.nan] * DIMS if "poison" in t.lower() else vector(t) for t in texts]


def mixed_dimensions(texts):
    return [vector(t)[: DIMS if i % 2 == 0 else DIMS // 2] for i, t in enumerate(texts)]


def not_a_list(texts):
    return "0.1 0.2"


NOT_CALLABLE = [1.0, 2.0]
# Modules imported as embedders that count their imports (tests/embedder_needing_a_key.py).
IMPORTS: list[str] = []


def too_large(texts):
    """An int beyond a float's range for texts that mention "poison"."""
    return [[10**400] + vector(t)[1:] if "poison" in t.lower() else vector(t) for t in texts]


def first_refused(texts):
    """The first vector refused for its values (NaN) but of the model's dimension, then
    one of half that dimension, then one of the full."""
    found = [vector(t) for t in texts]
    return [[math.nan] * DIMS, found[1][: DIMS // 2], *found[2:]]


def time_limit_on_the_second_call(texts):
    """The Celery soft time limit fires inside the second call (a slow embedder)."""
    from celery.exceptions import SoftTimeLimitExceeded

    CALLS.append(len(texts))
    if len(CALLS) >= 2:
        raise SoftTimeLimitExceeded()
    return [vector(t) for t in texts]
