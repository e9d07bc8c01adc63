"""Daily roll-ups: counts and sizes only, idempotent, separate from erasure."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from records import feedback, store, touches
from records.memory_service import add_session
from records.models import MemoryRecord
from records.policies import update_policy
from sweeper.metrics import measure, percentile, rollup_day
from sweeper.models import DailyMetric

from ..records.factories import make_records, session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def metrics(day=None):
    day = day or NOW.date()
    return {(m.app_name, m.name): m.value for m in DailyMetric.objects.filter(day=day)}


def test_percentile_matches_percentile_cont():
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([10], 0.99) == 10
    assert percentile([], 0.5) == 0.0
    assert percentile(list(range(101)), 0.99) == pytest.approx(99.0)


def test_rollup_counts_evictions_by_reason_sessions_corrections_and_sizes():
    update_policy("a", {"max_records": 2})
    add_session(
        session(["What time do you open?", "My name is Ana", "Deliver to 4 Mill Lane"], app="a"),
        NOW,
    )
    make_records("a", "u2", 1, NOW, age=timedelta(days=400))
    store.enforce("a", "u2", NOW)
    feedback.report_correction("a", "u1", NOW, about="opening hours")
    touches.flush_touches()  # with Redis the ingest's counts wait for the touch flush
    n = rollup_day(NOW.date(), NOW)
    m = metrics()
    assert m["a", "evictions_record_cap"] == 1 and m["a", "evictions_expired"] == 1
    assert m["a", "sessions_ingested"] == 1 and m["a", "corrections"] == 1
    assert m["a", "forgot_per_1000_sessions"] == 1000
    assert m["a", "records_added"] == 3
    assert m["a", "records_max"] == 2 and m["a", "max_records"] == 2
    assert n == len(m)
    rollup_day(NOW.date(), NOW)  # idempotent
    assert metrics() == m


def test_an_erasure_does_not_move_the_eviction_counts_already_rolled_up():
    """Erasure deletes the subject's eviction events; the day's roll-up, run again after
    it, keeps the count (a drop would move a chart and show that an erasure happened)."""
    from erasure import jobs

    update_policy("a", {"max_records": 1})
    for user in ("u1", "u2"):
        add_session(session(["My name is Ana", "Deliver to 4 Mill Lane"], app="a", user=user), NOW)
    rollup_day(NOW.date(), NOW)
    before = metrics()["a", "evictions_record_cap"]
    assert before == 2
    req = jobs.submit(
        app_name="a", user_id="u1", user_id_again="u1", ticket="T-1", reason="asked", actor="t"
    )
    assert jobs.run(req.pk) == "verified"
    rollup_day(NOW.date(), NOW)
    assert metrics()["a", "evictions_record_cap"] == before


def test_a_finished_day_keeps_its_snapshot_when_recomputed_later():
    make_records("a", "u1", 3, NOW)
    rollup_day(NOW.date(), NOW)
    make_records("a", "u1", 10, NOW)
    rollup_day(NOW.date(), NOW + timedelta(days=1))
    assert metrics()["a", "records_max"] == 3


def test_metrics_hold_no_content_and_no_user_ids():
    make_records("a", "secret-user", 2, NOW, content="secret content {i}")
    rollup_day(NOW.date(), NOW)
    for row in DailyMetric.objects.values_list("app_name", "name"):
        assert "secret" not in " ".join(row)


def test_measure_command_prints_the_articles_numbers(capsys):
    make_records("a", "u1", 4, NOW, tokens=10)
    make_records("a", "u2", 2, NOW, tokens=10)
    [m] = measure(NOW)
    assert (m.records_per_user.max, m.tokens_per_user.p50, m.records_per_user.count) == (4, 30, 2)
    call_command("measure")
    out = capsys.readouterr().out
    assert "records per user" in out and "max 4" in out
    assert MemoryRecord.objects.count() == 6


@pytest.mark.redis
def test_the_scheduled_rollup_counts_ingests_still_in_the_touch_buffer():
    from django.utils import timezone

    from sweeper import tasks

    now = timezone.now()
    add_session(session(["My name is Ana", "Deliver to 4 Mill Lane"], app="a"), now)
    # The counts wait in Redis: the roll-up task moves them before counting.
    tasks.rollup_metrics()
    assert metrics(now.date())["a", "sessions_ingested"] == 1
