"""Importance from the information a text carries, for text no rule matches."""

import pytest

from records.information import INFORMATION_RANGE, information_importance


def test_more_content_names_and_numbers_mean_more_importance():
    filler = information_importance("Let me check that for you.")
    chat = information_importance("Wow, that's great!")
    trip = information_importance("We're off to Lisbon for my sister's wedding on the 14th")
    assert filler < trip and chat < trip
    dense = information_importance(
        "Caroline joined the Riverside climbing club on 7 May 2023 with Melanie and Jordan"
    )
    assert dense > trip


@pytest.mark.parametrize(
    "text", ["", "ok", "a" * 5000, "Zebra " * 4000, "123 " * 4000, "Ünïcödé wörds ñ 🎉"]
)
def test_always_within_the_range_below_every_rule(text):
    low, high = INFORMATION_RANGE
    assert low <= information_importance(text) <= high < 0.5  # complaints, the lowest rule


def test_deterministic():
    text = "Our flight to Osaka leaves on Friday at 9"
    assert information_importance(text) == information_importance(text)
