"""The pure part of embeddings: what a valid vector is, similarity order, and fusion."""

import math

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
