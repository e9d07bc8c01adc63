"""The sweeper's selectors the overview composes: per-user sizes over time."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records.policies import update_policy
from sweeper.metrics import rollup_day
from sweeper.selectors import size_history

from ..records.factories import make_records

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)


def test_size_history_reads_each_days_snapshot_and_the_cap_then_in_force():
    update_policy("pharmacy", {"max_records": 50})
    make_records("pharmacy", "a", 4, NOW)
    make_records("pharmacy", "b", 8, NOW)
    two_days_ago = NOW - timedelta(days=2)
    rollup_day(two_days_ago.date(), two_days_ago)  # that day's snapshot, taken that day
    update_policy("pharmacy", {"max_records": 40})
    make_records("pharmacy", "b", 2, NOW)
    rollup_day(NOW.date(), NOW)
    with CaptureQueriesContext(connection) as ctx:
        history = size_history(NOW, "pharmacy", days=3)
    assert len(ctx.captured_queries) == 1
    assert history.days == [NOW.date() - timedelta(days=i) for i in (2, 1, 0)]
    assert history.sizes["records"]["max"] == [8, None, 10]  # no roll-up yesterday: a gap
    assert history.sizes["records"]["p50"] == [6, None, 7]
    assert history.caps["records"] == [50, None, 40]
    assert history.first_measured() == two_days_ago.date()
    assert size_history(NOW, "travel", days=3).first_measured() is None
