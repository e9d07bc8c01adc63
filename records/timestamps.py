"""The range of event timestamps memadmin accepts, and reading stored ones safely. Pure.

ADK stamps events with float seconds since the epoch, and a session's last event
decides when it is idle. So a stamp must be a real moment: from 2000-01-01 (nothing
older is an agent's turn) to the end of tomorrow (UTC) by our own clock, at least a
day ahead. A far-future stamp would keep its session "active" until then, never
retired; the slack covers clocks that are off by hours (a wrong time zone) while
delaying a session's retirement by two days at most. The bound moves once a day, not
every second, so the API document, generated at any moment of a day, states it
exactly. Milliseconds, the usual mistake, are recognised and named in the message.

Values stored before this rule (or written around it) are still shown: ``readable``
never raises, and such sessions count as idle (see ``is_idle_stamp``).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, time, timedelta

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
EARLIEST_SECONDS = EARLIEST.timestamp()

# Units people send instead of seconds, by how many of them make a second; a value is
# taken for one of them when it is a moment of this century in that unit.
_CENTURY_END_SECONDS = datetime(2100, 1, 1, tzinfo=UTC).timestamp()
_SMALLER_UNITS = (("milliseconds", 1e3), ("microseconds", 1e6), ("nanoseconds", 1e9))


class TimestampError(ValueError):
    """A timestamp outside the accepted range; the message says why and what is allowed."""


def latest_allowed(now: float) -> float:
    """The end of tomorrow, UTC (midnight after it), as of ``now``."""
    today = datetime.fromtimestamp(now, UTC).date()
    return datetime.combine(today + timedelta(days=2), time(), UTC).timestamp()


def in_range(value: float, now: float) -> bool:
    return EARLIEST_SECONDS <= value <= latest_allowed(now)


def allowed_range(now: float) -> str:
    latest = readable(latest_allowed(now))
    return (
        f"seconds since the epoch from {EARLIEST_SECONDS:.0f} ({EARLIEST:%Y-%m-%d}) to "
        f"{latest_allowed(now):.0f} ({latest:%Y-%m-%d %H:%M} UTC, the end of tomorrow by "
        "the clock)"
    )


def check_timestamp(name: str, value: object, now: float) -> float:
    """Return ``value`` as a float if it is an accepted timestamp, else raise
    ``TimestampError`` naming the allowed range (and the unit, if it looks like one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TimestampError(
            f"{name} must be a number of {allowed_range(now)}, not {type(value).__name__}."
        )
    value = float(value)
    if not math.isfinite(value):
        raise TimestampError(f"{name} must be a finite number of {allowed_range(now)}.")
    if in_range(value, now):
        return value
    for unit, per_second in _SMALLER_UNITS:
        if EARLIEST_SECONDS <= value / per_second < _CENTURY_END_SECONDS:
            raise TimestampError(
                f"{name} {value:.0f} looks like {unit} since the epoch; send seconds "
                f"({value / per_second:.3f}). Allowed: {allowed_range(now)}."
            )
    raise TimestampError(f"{name} {value:g} is out of range; allowed: {allowed_range(now)}.")


def check_event_stamps(events, now: float) -> None:
    """``check_timestamp`` for each ADK event of a batch, naming the one refused."""
    for i, event in enumerate(events):
        check_timestamp(f"events[{i}].timestamp", event.timestamp, now)


def readable(value: object) -> datetime | None:
    """The stored stamp as an aware datetime, or None if it is no representable moment."""
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def is_idle_stamp(last_update: float, cutoff: float, now: float) -> bool:
    """Idle: updated before ``cutoff``, or stamped beyond anything accepted (a stamp
    from before this rule, or not a number at all), which can never become idle on
    its own. Its events are ingested and it is retired like any idle session."""
    return not (cutoff <= last_update <= latest_allowed(now))
