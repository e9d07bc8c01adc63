"""Vectors of the optional embedder: validation, storage bytes, similarity and fusion.

No Django: ``records.embeddings`` calls the embedder and keeps the vectors; this module
says what a valid vector is, how it is stored, how the nearest are found and how the
vector ranking is fused with the lexical one. Pure Python; numpy, when installed (the
``vectors`` extra), only screens out vectors that cannot rank (``nearest_packed``).

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

import heapq
import math
import sys
from array import array
from collections.abc import Iterable, Sequence
from numbers import Real

try:  # optional accelerator of ``nearest``; the pure-Python scan gives the same ids
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None

MAX_DIMS = 4096
# The usual constant of reciprocal-rank fusion: a rank-1 hit in one list scores
# 1/61, so agreement between the two rankings outweighs one list's first place.
RRF_K = 60
# ``_screen``: how far below the limit-th best approximate score a vector is still
# scored exactly (the approximation is off by under 1e-10: see ``_screen``).
SCREEN_MARGIN = 1e-6
_MAX_COMPONENT = 2.0  # a unit vector's numbers are within [-1, 1]


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
    kept = [(record_id, data) for record_id, data in stored if len(data) == size]
    packed = b"".join([data for _, data in kept])
    return nearest_packed(query, [record_id for record_id, _ in kept], packed, limit)


def nearest_packed(query: array, ids: Sequence[int], packed: bytes, limit: int) -> list[int]:
    """``nearest`` over vectors packed end to end: ``packed`` holds ``len(ids)`` stored
    vectors of ``len(query)`` dimensions, the i-th one ``ids[i]``'s.

    Every score that decides the answer is ``math.sumprod`` of the query and the stored
    vector, rounded to 9 decimals, as in a plain loop. One float32 array is built for all
    the vectors (not one per vector), each row a memoryview slice of it; the query is a
    list of floats, so ``sumprod`` boxes only the stored side. With numpy importable
    (optional), ``_screen`` first drops the vectors that cannot reach the top ``limit``,
    and only the rest are scored exactly: the same ids in the same order, faster."""
    dims = len(query)
    if len(packed) != len(ids) * dims * 4:
        raise ValueError(f"{len(packed)} bytes are not {len(ids)} vectors of {dims} float32")
    if not ids or limit < 1:
        return []
    flat = array("f")
    flat.frombytes(packed)
    if sys.byteorder != "little":
        flat.byteswap()
    rows = memoryview(flat)
    q = query.tolist()
    sumprod = math.sumprod
    candidates = _screen(q, packed, dims, limit) if len(ids) > limit else None
    if candidates is None:
        candidates = range(len(ids))
    keys = [(-round(sumprod(q, rows[i * dims : (i + 1) * dims]), 9), -ids[i]) for i in candidates]
    return [-neg_id for _, neg_id in heapq.nsmallest(limit, keys)]


def _screen(query: list[float], packed: bytes, dims: int, limit: int) -> list[int] | None:
    """Indices of the packed vectors that may be among the ``limit`` nearest: every one
    whose numpy dot product (float64) is within ``SCREEN_MARGIN`` of the ``limit``-th
    best. None without numpy, or when a stored number is not finite or above
    ``_MAX_COMPONENT`` (the bound below would not hold): then every vector is scored.

    Why nothing of the exact top ``limit`` is dropped: numpy's and ``math.sumprod``'s dot
    products of the same float64 values differ by at most dims × 2⁻⁵³ × |q||v|, and
    |v| <= sqrt(dims) × ``_MAX_COMPONENT``: under 1e-10 up to ``MAX_DIMS``. A vector
    more than ``SCREEN_MARGIN`` below the ``limit``-th best numpy score is then more than
    1e-9 below ``limit`` others exactly, so it rounds (9 decimals) strictly below all of
    them and cannot be in the top ``limit``.

    ``einsum``, not ``@``: numpy's own loop, not a multi-threaded BLAS call, which on a
    busy machine waited for its threads longer than the product takes."""
    if _np is None:
        return None
    matrix = _np.frombuffer(packed, dtype="<f4").reshape(-1, dims)
    if not _np.abs(matrix).max() <= _MAX_COMPONENT:  # also False for NaN
        return None
    approx = _np.einsum("ij,j->i", matrix, _np.asarray(query, dtype=_np.float64))
    cut = len(approx) - limit
    kth = _np.partition(approx, cut)[cut]  # the limit-th best
    return _np.flatnonzero(approx >= kth - SCREEN_MARGIN).tolist()


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
