"""When a commitment falls due: dates read from its text, relative to when it was said."""

from datetime import UTC, datetime

import pytest

from records.due import due_at

SAID = datetime(2026, 6, 1, 15, 30, tzinfo=UTC)  # a Monday


def day_after(y, m, d):
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "due"),
    [
        ("Your order ships on 12 June", day_after(2026, 6, 13)),
        ("Appointment on March 5th, 2027", day_after(2027, 3, 6)),
        ("Booked for 2026-07-01, returning 2026-07-03", day_after(2026, 7, 4)),  # the latest
        ("I will call you tomorrow", day_after(2026, 6, 3)),
        ("See you on Friday", day_after(2026, 6, 6)),
        ("See you next Monday", day_after(2026, 6, 9)),  # a week on, not today
        ("Your renewal is due in 3 weeks", day_after(2026, 6, 23)),
        ("The refill is ready in a day", day_after(2026, 6, 3)),
        ("My dentist appointment was on May 30", day_after(2026, 5, 31)),  # already past
        ("Reservation for 3 September", day_after(2026, 9, 4)),  # the nearest one
        ("Delivery by 28 Dec", day_after(2025, 12, 29)),  # nearer last December
    ],
)
def test_the_latest_date_named_is_the_due_date(text, due):
    assert due_at(text, SAID) == due


@pytest.mark.parametrize(
    "text",
    [
        "I will let you know",
        "Order #4521 is on its way",
        "Pick-up on 3/5",  # slash dates are ambiguous
        "Booked for 31 February",  # no such day
        "Booked for 2026-02-31",
    ],
)
def test_without_a_date_a_commitment_is_due_when_it_was_said(text):
    assert due_at(text, SAID) == SAID


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("My booking is valid until 9999-12-31", SAID),  # the calendar's last day
        ("I will call you tomorrow", datetime(9999, 12, 31, 12, tzinfo=UTC)),  # past it
    ],
)
def test_a_day_at_the_end_of_the_calendar_is_due_on_it_not_an_error(text, said):
    assert due_at(text, said) == datetime(9999, 12, 31, tzinfo=UTC)


@pytest.mark.django_db
def test_a_far_future_date_does_not_fail_the_ingest_of_its_neighbours():
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from records.memory_service import add_memories
    from records.models import MemoryRecord

    entries = [
        MemoryEntry(content=types.Content(parts=[types.Part(text=text)]))
        for text in ("I like tea", "My booking is valid until 9999-12-31")
    ]
    add_memories("pharmacy", "u1", entries, SAID)
    assert MemoryRecord.objects.filter(user_id="u1").count() == 2
