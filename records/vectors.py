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
# Reciprocal-rank fusion's constant. The usual 60 lets agreement between the two
# rankings outweigh either list's first places; measured on LoCoMo with a real model
# (docs/embeddings.md), 10 keeps lexical search's first hits and did better on both
# halves (60 lost to lexical search alone).
RRF_K = 10
# ``_screen``: how far below the limit-th best approximate score a vector is still
# kept (the approximation is off by under 1e-9: see ``_screen``).
SCREEN_MARGIN = 1e-6
_MAX_COMPONENT = 2.0  # a unit vector's numbers are within [-1, 1]
_ERROR_FACTOR = 4.0  # the safety factor of ``_screen``'s error bound


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


def _is_list(vector: object) -> bool:
    return isinstance(vector, Sequence | array) and not isinstance(vector, (str, bytes))


def dimension(vector: object) -> int | None:
    """How many numbers ``vector`` holds, if it is a list of 1 to MAX_DIMS things."""
    return len(vector) if _is_list(vector) and 1 <= len(vector) <= MAX_DIMS else None


def unit(vector: object, dims: int | None = None) -> array:
    """``vector`` as a unit-length float32 array, or VectorError saying what is wrong.

    ``dims``, when given, is the length every vector of the batch must have.
    """
    if not _is_list(vector):
        raise VectorError(f"a vector must be a list of numbers, not {type(vector).__name__}")
    n = dimension(vector)
    if n is None:
        raise VectorError(f"a vector must have 1 to {MAX_DIMS} numbers; this one has {len(vector)}")
    if dims is not None and n != dims:
        raise VectorError(f"every vector must have the same dimension: {dims}, not {n}")
    if not all(isinstance(x, Real) and not isinstance(x, bool) for x in vector):
        raise VectorError("a vector must hold numbers only")
    try:
        values = [float(x) for x in vector]
    except OverflowError:  # an int or fraction beyond a float's range
        raise VectorError("a vector must not hold NaN or infinity") from None
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

    The ranking of a plain loop: ``round(math.sumprod(query, vector), 9)`` per vector,
    then the higher id. With numpy importable (optional) ``_screen`` computes all the dot
    products at once, drops the vectors that cannot reach the top ``limit``, and takes a
    numpy score's rounding only where it provably equals the exact one's; otherwise (no
    numpy, or stored numbers no unit vector has) every vector is scored as in the loop,
    over one float32 array (not one array per vector)."""
    dims = len(query)
    if len(packed) != len(ids) * dims * 4:
        raise ValueError(f"{len(packed)} bytes are not {len(ids)} vectors of {dims} float32")
    if not ids or limit < 1:
        return []
    q = query.tolist()  # floats boxed once: sumprod then boxes only the stored side
    screened = _screen(q, packed, dims, limit)
    if screened is None:
        keys = _exact_keys(q, ids, packed, dims)
    else:
        size = dims * 4
        keys = []
        candidates, approx, error = screened
        for i, score in zip(candidates, approx, strict=True):
            rounded = round(score - error, 9)
            if rounded != round(score + error, 9):  # near a rounding boundary: exact
                rounded = round(math.sumprod(q, from_bytes(packed[i * size : (i + 1) * size])), 9)
            keys.append((-rounded, -ids[i]))
    return [-neg_id for _, neg_id in heapq.nsmallest(limit, keys)]


def ranked(query: array, stored: Sequence[tuple[int, bytes]]) -> list[tuple[int, float]]:
    """Every stored vector of ``query``'s dimension as (id, score), best first: the
    exact scores and order of ``nearest`` (``records.pgvector`` ranks its candidates
    with it)."""
    size = len(query) * 4
    kept = [(record_id, data) for record_id, data in stored if len(data) == size]
    packed = b"".join([data for _, data in kept])
    keys = _exact_keys(query.tolist(), [rid for rid, _ in kept], packed, len(query))
    keys.sort()
    return [(-neg_id, -neg_score) for neg_score, neg_id in keys]


def _exact_keys(q: list[float], ids: Sequence[int], packed: bytes, dims: int) -> list[tuple]:
    flat = array("f")
    flat.frombytes(packed)
    if sys.byteorder != "little":
        flat.byteswap()
    rows = memoryview(flat)
    sumprod = math.sumprod
    return [
        (-round(sumprod(q, rows[start : start + dims]), 9), -record_id)
        for record_id, start in zip(ids, range(0, len(flat), dims), strict=True)
    ]


def _screen(
    query: list[float], packed: bytes, dims: int, limit: int
) -> tuple[list[int], list[float], float] | None:
    """With numpy: the indices of the packed vectors that may be among the ``limit``
    nearest, their numpy dot products (float64), and a bound on how far those are from
    ``math.sumprod``'s. None without numpy, or when a stored number is not finite or
    above ``_MAX_COMPONENT`` (the bound would not hold): then every vector is scored.

    The bound: two sums of the same ``dims`` float64 products differ from the exact sum
    by at most dims × 2⁻⁵³ × |q||v| each, with |v| <= sqrt(dims) × the largest number;
    ``error`` is four times that (under 1e-9 up to ``MAX_DIMS``; about 2e-12 for
    256-dimension unit vectors). So the exact score lies within ``error`` of the numpy
    one: where ``score ± error`` round (9 decimals) alike, the exact score rounds the
    same (rounding is monotone); elsewhere the caller computes it. A vector more than
    ``SCREEN_MARGIN`` below the ``limit``-th best numpy score is more than 1e-9 below
    ``limit`` others exactly, so it rounds strictly below all of them: dropped.

    ``einsum``, not ``@``: numpy's own loop, not a multi-threaded BLAS call, which on a
    busy machine waited for its threads longer than the product takes."""
    if _np is None:
        return None
    matrix = _np.frombuffer(packed, dtype="<f4").reshape(-1, dims)
    largest = float(_np.abs(matrix).max())
    if not largest <= _MAX_COMPONENT:  # also False for NaN
        return None
    q_norm = math.sqrt(math.sumprod(query, query))
    error = max(_ERROR_FACTOR * dims * 2.0**-53 * q_norm * math.sqrt(dims) * largest, 1e-15)
    approx = _np.einsum("ij,j->i", matrix, _np.asarray(query, dtype=_np.float64))
    if len(approx) <= limit:
        return list(range(len(approx))), approx.tolist(), error
    cut = len(approx) - limit
    kth = _np.partition(approx, cut)[cut]  # the limit-th best
    candidates = _np.flatnonzero(approx >= kth - SCREEN_MARGIN)
    return candidates.tolist(), approx[candidates].tolist(), error


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
