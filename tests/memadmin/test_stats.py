import pytest

from memadmin.stats import percentile


def test_percentile_interpolates_between_the_closest_ranks_as_percentile_cont():
    assert percentile([4, 1, 3, 2], 0.5) == 2.5  # any order
    # Nearest rank would say 20 (an observed value); percentile_cont interpolates.
    assert percentile([10, 20], 0.99) == pytest.approx(19.9)
    assert percentile([10, 20], 0.0) == 10 and percentile([10, 20], 1.0) == 20


def test_percentile_of_nothing_is_zero():
    assert percentile([], 0.99) == 0.0
