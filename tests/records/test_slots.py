"""Slots: which texts state a value of the delivery address, phone or email."""

import pytest

from records.slots import slot_of


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("Please deliver to 4 Mill Lane, Leeds LS1 2AB.", "delivery-address"),
        ("I've moved; my new delivery address is 12 High St, York YO1 7HH.", "delivery-address"),
        ("My address is 9 Elm Road", "delivery-address"),
        ("We moved to 3 Park Avenue last week", "delivery-address"),
        ("My phone number is +44 7700 900123", "phone"),
        ("my new mobile is 07700 900456", "phone"),
        ("My email is ana@example.org", "email"),
        ("My phone number is +44 7700 900123 and my email is a@b.org", "phone"),  # the first
    ],
)
def test_a_statement_of_a_value_has_its_slot(text, slot):
    assert slot_of(text) == slot


@pytest.mark.parametrize(
    "text",
    [
        "Done, I've updated the delivery address on your account.",  # no value
        "What is my delivery address?",  # a question
        "Can you deliver to 4 Mill Lane?",
        "I've sent the invoice to the email address on your account.",
        "My phone is broken",
        "Order #4521 should arrive on Monday.",
        "",
    ],
)
def test_texts_without_a_value_or_asking_have_no_slot(text):
    assert slot_of(text) == ""
