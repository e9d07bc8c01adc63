"""The pure part of embeddings: what a valid vector is, similarity order, and fusion."""

import math
import random
from array import array

import pytest

from records import vectors


def test_a_vector_is_stored_at_unit_length_and_read_back():
    v = vectors.unit([3, 4])
    assert list(v) == pytest.approx([0.6, 0.8])
    assert list(vectors.from_bytes(vectors.to_bytes(v))) == list(v)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0.1 0.2", "list of numbers"),
        ([], "1 to 4096"),
        ([0.0] * 4097, "1 to 4096"),
        ([1.0, "2"], "numbers only"),
        ([1.0, True], "numbers only"),
        ([1.0, math.nan], "NaN"),
        ([math.inf, 1.0], "NaN or infinity"),
        ([0.0, 0.0], "all zeros"),
    ],
)
def test_an_unusable_vector_is_refused_with_what_is_wrong(value, message):
    with pytest.raises(vectors.VectorError, match=message):
        vectors.unit(value)


def test_every_vector_of_a_batch_has_the_same_dimension():
    with pytest.raises(vectors.VectorError, match="same dimension: 3, not 2"):
        vectors.unit([1.0, 2.0], 3)


@pytest.mark.parametrize(
    ("returned", "message"),
    [("x", "list of vectors"), (None, "list of vectors"), ([[1.0]], "1 vector\\(s\\) for 2")],
)
def test_a_batch_needs_one_vector_per_text(returned, message):
    with pytest.raises(vectors.VectorError, match=message):
        vectors.check_batch(returned, 2)


def test_nearest_orders_by_similarity_then_higher_id_and_skips_other_dimensions():
    q = vectors.unit([1.0, 0.0])
    stored = [
        (1, vectors.to_bytes(vectors.unit([0.0, 1.0]))),
        (2, vectors.to_bytes(vectors.unit([1.0, 1.0]))),
        (3, vectors.to_bytes(vectors.unit([1.0, 0.0]))),
        (4, vectors.to_bytes(vectors.unit([2.0, 2.0]))),  # ties with 2: higher id first
        (5, vectors.to_bytes(vectors.unit([1.0, 0.0, 0.0]))),  # another model's vector
    ]
    assert vectors.nearest(q, stored, 10) == [3, 4, 2, 1]
    assert vectors.nearest(q, stored, 2) == [3, 4]


def test_fusion_sums_reciprocal_ranks_and_breaks_ties_deterministically():
    # 7 is 2nd in both (2/62) and beats 1, first in one list only (1/61).
    assert vectors.fuse([1, 7], [9, 7], 10)[0] == 7
    # 1 and 9 both score 1/61 + nothing: same best rank, the lexical one first.
    assert vectors.fuse([1, 7], [9, 7], 10) == [7, 1, 9]
    # Exactly mirrored lists: each id has ranks {1, 2}; equal scores and best ranks,
    # so the better lexical rank wins.
    assert vectors.fuse([4, 5], [5, 4], 10) == [4, 5]
    # One list alone keeps its order.
    assert vectors.fuse([], [3, 8], 10) == [3, 8]
    assert vectors.fuse([2], [], 10) == [2]
    # Ranks 1 and 3 (1/61 + 1/63) edge out 2 and 2 (2/62); 1 and 3 tie, 1 is first lexically.
    assert vectors.fuse([1, 2, 3], [3, 2, 1], 10) == [1, 3, 2]
    assert vectors.fuse([1, 2, 3], [3, 2, 1], 2) == [1, 3]


# --- nearest: the packed scan (and its optional numpy screen) against a plain loop ---------


def _reference_nearest(query, stored, limit):
    """The straightforward ranking: one array and one ``math.sumprod`` per stored vector,
    rounded to 9 decimals, sorted by similarity then higher id."""
    scored = []
    for record_id, data in stored:
        if len(data) != len(query) * 4:
            continue
        vector = array("f")
        vector.frombytes(data)
        scored.append((-round(math.sumprod(query, vector), 9), -record_id))
    return [-neg_id for _, neg_id in sorted(scored)[:limit]]


@pytest.fixture(params=["numpy", "pure"])
def scan(request, monkeypatch):
    """Run a test once with the numpy screen (skipped when numpy is not installed) and once
    with the pure-Python scan alone."""
    if request.param == "numpy":
        pytest.importorskip("numpy")
        assert vectors._np is not None
    else:
        monkeypatch.setattr(vectors, "_np", None)
    return request.param


def _random_stored(rng, count, dims, *, levels=None):
    """``count`` stored vectors with shuffled ids. With ``levels``, components are small
    integers, so many vectors have exactly the same similarity (ties), and some repeat."""
    stored = []
    ids = rng.sample(range(1, 10 * count), count)
    for record_id in ids:
        if levels is None:
            raw = [rng.gauss(0.0, 1.0) for _ in range(dims)]
        else:
            raw = [float(rng.randrange(levels)) for _ in range(dims)]
            if not any(raw):
                raw[0] = 1.0
        stored.append((record_id, vectors.to_bytes(vectors.unit(raw))))
    return stored


@pytest.mark.parametrize(
    ("count", "dims", "levels", "limit"),
    [
        (400, 64, None, 50),  # continuous similarities
        (400, 8, 3, 50),  # few distinct vectors: ties across the cut at 50
        (300, 4, 2, 50),  # almost everything ties
        (60, 16, 3, 50),  # barely more than the limit
        (30, 16, 3, 50),  # fewer than the limit: all of them
        (200, 32, None, 1),
    ],
)
def test_nearest_gives_the_ids_and_order_of_a_plain_loop(scan, count, dims, levels, limit):
    rng = random.Random(20261203 + count + dims)
    stored = _random_stored(rng, count, dims, levels=levels)
    stored.append((10**9, vectors.to_bytes(vectors.unit([1.0] * (dims + 1)))))  # other dims
    for _ in range(20):
        if levels is None:
            raw = [rng.gauss(0.0, 1.0) for _ in range(dims)]
        else:
            raw = [float(rng.randrange(1, levels + 1)) for _ in range(dims)]
        query = vectors.unit(raw)
        expected = _reference_nearest(query, stored, limit)
        assert len(expected) == min(limit, count)
        assert vectors.nearest(query, stored, limit) == expected
        # Exactly as packed by the caller, in another order of rows.
        shuffled = stored[:-1]
        rng.shuffle(shuffled)
        packed = b"".join(d for _, d in shuffled)
        assert vectors.nearest_packed(query, [i for i, _ in shuffled], packed, limit) == expected


def test_nearest_keeps_similarities_that_differ_below_the_rounding_apart_by_id(scan):
    """Vectors one float32 step apart: their similarities round to the same 9 decimals
    (a tie: higher id first) or straddle a rounding boundary, as in the plain loop."""
    rng = random.Random(7)
    query = vectors.unit([rng.gauss(0.0, 1.0) for _ in range(32)])
    base = vectors.unit([rng.gauss(0.0, 1.0) for _ in range(32)])
    stored = []
    for i in range(120):
        near = array("f", base)
        near[i % 32] = math.nextafter(near[i % 32], math.inf, steps=i // 32) if i else near[0]
        stored.append((1000 - i, vectors.to_bytes(near)))
    stored += _random_stored(rng, 200, 32)
    for limit in (1, 50, 130):
        assert vectors.nearest(query, stored, limit) == _reference_nearest(query, stored, limit)


def test_the_numpy_screen_drops_only_vectors_that_cannot_rank():
    pytest.importorskip("numpy")
    rng = random.Random(11)
    stored = _random_stored(rng, 500, 64)
    packed = b"".join(d for _, d in stored)
    query = vectors.unit([rng.gauss(0.0, 1.0) for _ in range(64)])
    kept, approx, error = vectors._screen(query.tolist(), packed, 64, 50)
    assert 0 < error < 1e-11
    assert 50 <= len(kept) < 500  # it does drop vectors
    top = set(_reference_nearest(query, stored, 50))
    assert top <= {stored[i][0] for i in kept}


def test_scores_near_a_rounding_boundary_are_computed_exactly(monkeypatch):
    """A huge error bound leaves almost every numpy score ambiguous: the exact scores
    then decide, with the same result."""
    pytest.importorskip("numpy")
    rng = random.Random(5)
    stored = _random_stored(rng, 300, 64)
    queries = [vectors.unit([rng.gauss(0.0, 1.0) for _ in range(64)]) for _ in range(10)]
    exact = []
    from_bytes = vectors.from_bytes
    monkeypatch.setattr(vectors, "from_bytes", lambda data: exact.append(1) or from_bytes(data))
    for factor in (vectors._ERROR_FACTOR, 1e6):
        monkeypatch.setattr(vectors, "_ERROR_FACTOR", factor)
        exact.clear()
        for query in queries:
            assert vectors.nearest(query, stored, 50) == _reference_nearest(query, stored, 50)
        if factor == 1e6:
            assert len(exact) >= 50 * len(queries)  # every candidate scored exactly
        else:
            assert len(exact) < 5 * len(queries)  # numpy's rounding almost always stands


def test_the_numpy_screen_stands_aside_for_numbers_no_unit_vector_holds():
    pytest.importorskip("numpy")
    good = vectors.to_bytes(vectors.unit([1.0, 0.0]))
    for bad in ([math.nan, 0.0], [0.0, math.inf], [-3.0, 0.0]):
        packed = good * 60 + array("f", bad).tobytes()
        assert vectors._screen([1.0, 0.0], packed, 2, 50) is None


def test_packed_vectors_must_match_their_ids_and_dimension():
    q = vectors.unit([1.0, 0.0])
    with pytest.raises(ValueError, match="not 2 vectors of 2 float32"):
        vectors.nearest_packed(q, [1, 2], vectors.to_bytes(q), 10)
