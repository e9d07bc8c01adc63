"""When a commitment falls due: the latest date its text names, else when it was said.

Pure Python (text and a datetime in, a datetime out). Past that moment the record's
importance decays (``PolicyParams.past_due_half_life``): an order delivered or an
appointment kept matters less every week, while a pinned fact or an address does not.
Dates are read in a few unambiguous forms, relative to when the text was said:
"2027-03-05", "5 March", "March 5th, 2027", "on Friday", "tomorrow", "next week",
"in 3 days". A date without a year is the occurrence nearest to when it was said.
Slash dates (3/5) are left alone: day and month order is ambiguous. Patterns run on
RE2: linear in the text, whatever the text.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import re2

_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False


def _compile(pattern: str):
    return re2.compile(pattern, _OPTIONS)


# Records whose deciding rule has this category fall due (see records.rules).
COMMITMENT = "commitment"

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"

_ISO = _compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = _compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}{_YEAR}\b")
_MONTH_DAY = _compile(rf"\b{_MONTH}\s+{_DAY}\b{_YEAR}")
_WEEKDAY = _compile(r"\b(?:on|next|this|by|until)\s+(" + "|".join(_WEEKDAYS) + r")\b")
_RELATIVE = _compile(r"\b(today|tonight|tomorrow|next week|next month)\b")
_IN_N = _compile(r"\bin\s+(\d{1,3}|a|one|two|three)\s+(day|week|month)s?\b")
_WORD_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}
_RELATIVE_DAYS = {"today": 0, "tonight": 0, "tomorrow": 1, "next week": 7, "next month": 30}


def _nearest_year(month: int, day: int, said: date) -> date | None:
    """The date (month, day) nearest to ``said``: this year's, last year's or next year's."""
    options = []
    for year in (said.year - 1, said.year, said.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    return min(options, key=lambda d: abs(d - said), default=None)


def _dates(text: str, said: date):
    for m in _ISO.finditer(text):
        try:
            yield date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            continue
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        for m in pattern.finditer(text):
            month, day = _MONTHS[m[month_group].lower()], int(m[day_group])
            if m[3]:
                try:
                    yield date(int(m[3]), month, day)
                except ValueError:
                    continue
            elif (found := _nearest_year(month, day, said)) is not None:
                yield found
    for m in _WEEKDAY.finditer(text):
        ahead = (_WEEKDAYS.index(m[1].lower()) - said.weekday()) % 7 or 7
        yield said + timedelta(days=ahead)
    for m in _RELATIVE.finditer(text):
        yield said + timedelta(days=_RELATIVE_DAYS[m[1].lower()])
    for m in _IN_N.finditer(text):
        n = _WORD_NUMBERS.get(m[1].lower()) or int(m[1])
        yield said + timedelta(days=n * _UNIT_DAYS[m[2].lower()])


def due_at(text: str, said_at: datetime) -> datetime:
    """The end of the latest day ``text`` names, or ``said_at`` when it names none."""
    said = said_at.astimezone(UTC)
    try:
        latest = max(_dates(text, said.date()), default=None)
    except OverflowError:  # a day past the calendar's last ("in 9000 years"): its last
        latest = date.max
    if latest is None:
        return said_at
    # The day after it begins its end; the calendar's last day has none after it.
    end = latest + timedelta(days=1) if latest < date.max else latest
    return datetime.combine(end, time(0), tzinfo=UTC)
