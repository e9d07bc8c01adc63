"""Vectors of the optional embedder: validation, storage bytes, similarity and fusion.

Pure Python (no Django, no numpy): ``records.embeddings`` calls the embedder and keeps the
vectors; this module says what a valid vector is, how it is stored and how the vector
ranking is fused with the lexical one.

- A vector is a sequence of 1..``MAX_DIMS`` finite numbers, not all zero. Stored
  normalised to unit length as little-endian float32 bytes, so cosine similarity is a
  dot product (``math.sumprod``, in C).
- The vector ranking orders by similarity (rounded to 9 decimals), then higher record id
  (the newer record) first.
- Reciprocal-rank fusion (Cormack, Clarke and Büttcher, 2009): a record scores
  ``1 / (RRF_K + rank)`` in each ranking it appears in (ranks from 1), summed. Ties:
  the better of its two ranks first, then the better lexical rank (a record found
  lexically before one found only by vector), then the higher id.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Sequence
from numbers import Real

MAX_DIMS = 4096
# The usual constant of reciprocal-rank fusion: a rank-1 hit in one list scores
# 1/61, so agreement between the two rankings outweighs one list's first place.
RRF_K = 60


class VectorError(ValueError):
    """An embedder returned something that is not a usable vector."""


def check_batch(vectors: object, count: int) -> list[object]:
    """The embedder's return for ``count`` texts as a list, or VectorError if its shape is
    wrong (not a list, or not one entry per text). Each entry is checked by ``unit``."""
    if isinstance(vectors, (str, bytes)) or not isinstance(vectors, Sequence):
        raise VectorError(
            "the embedder must return a list of vectors, one per text; "
            f"got {type(vectors).__name__}"
        )
    if len(vectors) != count:
        raise VectorError(
            f"the embedder returned {len(vectors)} vector(s) for {count} text(s); "
            "it must return exactly one per text, in order"
        )
    return list(vectors)


def unit(vector: object, dims: int | None = None) -> array:
    """``vector`` as a unit-length float32 array, or VectorError saying what is wrong.

    ``dims``, when given, is the length every vector of the batch must have.
    """
    if isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence | array):
        raise VectorError(f"a vector must be a list of numbers, not {type(vector).__name__}")
    n = len(vector)
    if not 1 <= n <= MAX_DIMS:
        raise VectorError(f"a vector must have 1 to {MAX_DIMS} numbers; this one has {n}")
    if dims is not None and n != dims:
        raise VectorError(f"every vector must have the same dimension: {dims}, not {n}")
    if not all(isinstance(x, Real) and not isinstance(x, bool) for x in vector):
        raise VectorError("a vector must hold numbers only")
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        raise VectorError("a vector must not hold NaN or infinity")
    norm = math.sqrt(math.sumprod(values, values))
    if norm == 0.0 or not math.isfinite(norm):
        raise VectorError("a vector must not be all zeros")
    return array("f", (x / norm for x in values))


def to_bytes(vector: array) -> bytes:
    """Little-endian float32 bytes of a ``unit`` vector (the stored form)."""
    if sys.byteorder == "little":
        return vector.tobytes()
    swapped = array("f", vector)
    swapped.byteswap()
    return swapped.tobytes()


def from_bytes(data: bytes) -> array:
    vector = array("f")
    vector.frombytes(bytes(data))
    if sys.byteorder != "little":
        vector.byteswap()
    return vector


def nearest(query: array, stored: Iterable[tuple[int, bytes]], limit: int) -> list[int]:
    """Ids of the ``limit`` stored vectors most similar to ``query`` (cosine; unit
    vectors), best first; ties by higher id. Vectors of another dimension are skipped."""
    size = len(query) * 4
    scored = [
        (-round(math.sumprod(query, from_bytes(data)), 9), -record_id)
        for record_id, data in stored
        if len(data) == size
    ]
    scored.sort()
    return [-neg_id for _, neg_id in scored[:limit]]


def fuse(lexical: Sequence[int], vector: Sequence[int], limit: int, k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion of two rankings of record ids (best first): the ``limit``
    best ids. Deterministic ties, as the module says."""
    missing = len(lexical) + len(vector) + 1
    lex_rank = {rid: i for i, rid in enumerate(lexical, 1)}
    vec_rank = {rid: i for i, rid in enumerate(vector, 1)}
    ids = dict.fromkeys([*lexical, *vector])

    def key(rid: int) -> tuple:
        ranks = [r for r in (lex_rank.get(rid), vec_rank.get(rid)) if r is not None]
        score = sum(1.0 / (k + r) for r in ranks)
        return (-round(score, 12), min(ranks), lex_rank.get(rid, missing), -rid)

    return sorted(ids, key=key)[:limit]
