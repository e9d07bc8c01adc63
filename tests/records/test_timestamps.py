"""The accepted range of event timestamps, and reading stored ones safely (pure)."""

import math
from datetime import UTC, datetime

import pytest

from records.timestamps import (
    EARLIEST_SECONDS,
    TimestampError,
    check_timestamp,
    is_idle_stamp,
    latest_allowed,
    readable,
)

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
LATEST = datetime(2026, 12, 3, tzinfo=UTC).timestamp()  # the end of tomorrow


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2026, 12, 1, 12, tzinfo=UTC),
        datetime(2026, 12, 1, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_the_latest_stamp_is_the_end_of_tomorrow_utc_all_day(now):
    assert latest_allowed(now.timestamp()) == LATEST


@pytest.mark.parametrize("value", [EARLIEST_SECONDS, NOW, LATEST, 1_700_000_000])
def test_real_moments_are_accepted(value):
    assert check_timestamp("t", value, NOW) == float(value)


@pytest.mark.parametrize(
    ("value", "unit", "seconds"),
    [
        (1796266895557, "milliseconds", "1796266895.557"),
        (NOW * 1e3, "milliseconds", f"{NOW:.3f}"),
        (NOW * 1e6, "microseconds", f"{NOW:.3f}"),
        (NOW * 1e9, "nanoseconds", f"{NOW:.3f}"),
    ],
)
def test_a_stamp_in_a_smaller_unit_is_named_with_the_seconds_to_send(value, unit, seconds):
    with pytest.raises(TimestampError, match=unit) as refused:
        check_timestamp("event timestamp", value, NOW)
    message = str(refused.value)
    assert f"send seconds ({seconds})" in message
    assert "2000-01-01" in message and "2026-12-03 00:00 UTC, the end of tomorrow" in message


@pytest.mark.parametrize(
    "value",
    [1e308, 253402300800, -62135596801, 0, EARLIEST_SECONDS - 1, LATEST + 1],
)
def test_out_of_range_stamps_are_refused_naming_the_range(value):
    with pytest.raises(TimestampError) as refused:
        check_timestamp("event timestamp", value, NOW)
    message = str(refused.value)
    assert "out of range" in message and "milliseconds" not in message
    assert f"from {EARLIEST_SECONDS:.0f} (2000-01-01) to {LATEST:.0f}" in message


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "1700000000", None, True])
def test_non_numbers_are_refused(value):
    with pytest.raises(TimestampError, match="event timestamp must be a"):
        check_timestamp("event timestamp", value, NOW)


def test_timestamp_errors_are_value_errors_as_every_refused_input():
    assert issubclass(TimestampError, ValueError)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (NOW, datetime(2026, 12, 1, 12, tzinfo=UTC)),
        (253402300799, datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        (253402300800, None),
        (-62135596801, None),
        (1e308, None),
        (math.nan, None),
        (math.inf, None),
        (None, None),
        ("x", None),
    ],
)
def test_readable_never_raises(value, expected):
    assert readable(value) == expected


@pytest.mark.parametrize(
    ("stamp", "idle"),
    [
        (NOW - 10 * 86400, True),  # before the cutoff
        (NOW - 86400, False),
        (LATEST, False),  # ahead, but as far as anything accepted
        (LATEST + 1, True),  # no clock reaches it: never idle by itself
        (1796266895557, True),
        (math.inf, True),
        (math.nan, True),
        (-math.inf, True),
    ],
)
def test_a_stamp_beyond_anything_accepted_counts_as_idle(stamp, idle):
    assert is_idle_stamp(stamp, NOW - 7 * 86400, NOW) is idle
