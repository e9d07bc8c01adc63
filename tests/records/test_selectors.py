"""Overview, session and policy selectors: exact numbers on both databases, bounded queries."""

import math
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records import feedback
from records.models import Artifact, PolicyVersion, RetiredSession
from records.policies import policy_for, update_policy
from records.selectors import (
    app_session_counts,
    artifacts_for_session,
    evictions_per_day,
    first_counted_day,
    forgetting_rates,
    growth_per_week,
    per_user_histogram,
    policy_changes,
    policy_history,
    session_event_spread,
    session_links,
    session_page,
    user_spread,
)
from tests.records.rows import make_eviction, make_records, make_session

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)  # a Wednesday


def percentile_cont(values, percent):
    """PostgreSQL's percentile_cont, for reference."""
    values = sorted(values)
    position = percent / 100 * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (position - low) * (values[high] - values[low])


def test_user_spread_matches_percentile_cont_per_app():
    counts = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144]
    for i, n in enumerate(counts):
        make_records("pharmacy", f"u{i}", n, tokens=7)
    make_records("travel", "solo", 4, tokens=100)
    update_policy("pharmacy", {"max_records": 50, "max_tokens": 10_000})

    with CaptureQueriesContext(connection) as ctx:
        spread = user_spread()
    assert len(ctx.captured_queries) == 2

    records = spread["pharmacy"]["records"]
    assert records.count == len(counts)
    assert records.p50 == pytest.approx(percentile_cont(counts, 50))
    assert records.p99 == pytest.approx(percentile_cont(counts, 99))
    assert records.max == 144
    tokens = spread["pharmacy"]["tokens"]
    assert tokens.p99 == pytest.approx(percentile_cont([7 * n for n in counts], 99))
    assert spread["pharmacy"]["over_cap"] == 3  # 55, 89, 144 records > 50
    solo = spread["travel"]["records"]
    assert (solo.count, solo.p50, solo.p99, solo.max) == (1, 4, 4, 4)
    assert spread["travel"]["over_cap"] == 0  # default caps 500 / 40,000


def test_session_event_spread_per_app():
    for n in (2, 4, 6, 100):
        make_session("pharmacy", events=[{"id": f"e{i}"} for i in range(n)])
    spread = session_event_spread()["pharmacy"]
    assert (spread.count, spread.p50, spread.max) == (4, 5, 100)
    assert spread.p99 == pytest.approx(percentile_cont([2, 4, 6, 100], 99))


def test_per_user_histogram_buckets_cover_the_cap():
    for i, n in enumerate([1, 2, 9, 10, 25]):
        make_records("app", f"u{i}", n)
    buckets = per_user_histogram("app", "records", upper=29, bins=3)
    assert buckets == [(0, 9, 3), (10, 19, 1), (20, 29, 1)]
    assert sum(users for *_, users in per_user_histogram("app", "tokens", upper=500)) == 5
    with pytest.raises(ValueError, match="records or tokens"):
        per_user_histogram("app", "content", upper=10)


def test_evictions_per_day_by_reason_never_counts_erasure():
    make_eviction("record_cap", NOW - timedelta(days=1))
    make_eviction("record_cap", NOW - timedelta(days=1, hours=2))
    make_eviction("expired", NOW)
    make_eviction("erasure", NOW)  # another process's figures, never an eviction
    make_eviction("expired", NOW - timedelta(days=40))  # outside the window
    data = evictions_per_day(NOW, days=7)
    assert len(data["days"]) == 7 and data["days"][-1] == NOW.date()
    assert set(data["series"]) == {"record_cap", "expired"}
    assert data["series"]["record_cap"][-2] == 2
    assert data["series"]["expired"] == [0, 0, 0, 0, 0, 0, 1]


def test_growth_per_week_counts_records_added_each_week():
    from records import feedback

    feedback.bump("app", feedback.RECORDS_ADDED, NOW, 3)
    feedback.bump("app", feedback.RECORDS_ADDED, NOW - timedelta(weeks=2), 1)
    feedback.bump("app", feedback.RECORDS_ADDED, NOW - timedelta(weeks=2, days=1), 1)
    feedback.bump("other", feedback.RECORDS_ADDED, NOW - timedelta(weeks=2), 5)
    weeks = growth_per_week(NOW, weeks=4, app_name="app")
    assert [w for w, _ in weeks][-1] == datetime(2026, 6, 8).date()  # Monday
    assert [n for _, n in weeks] == [0, 2, 0, 3]
    assert [n for _, n in growth_per_week(NOW, weeks=4)] == [0, 7, 0, 3]


def test_sessions_are_idle_after_their_apps_threshold():
    policy_for("fast")
    update_policy("fast", {"session_idle_days": 2})
    make_session("fast", idle_days=3)
    make_session("fast", idle_days=1)
    make_session("slow", idle_days=3)  # default threshold: 7 days
    make_session("slow", idle_days=10)
    now = datetime.now(UTC)  # make_session places sessions relative to the real clock
    counts = {c.app_name: (c.total, c.idle, c.active) for c in app_session_counts(now)}
    assert counts == {"fast": (2, 1, 1), "slow": (2, 1, 1)}
    idle = session_page(now, state="idle")
    assert sorted((r.app_name, r.idle) for r in idle.object_list) == [
        ("fast", True),
        ("slow", True),
    ]
    assert session_page(now, app_name="fast", state="active").paginator.count == 1


def test_artifacts_of_a_session_include_user_scoped_ones_with_sizes():
    session = make_session("app", "alice", session_id="s1")
    other = make_session("app", "alice", session_id="s2")
    for sid, name, data in [
        ("s1", "receipt.txt", b"12345"),
        ("s2", "other.txt", b"x"),
        ("", "profile.json", b"{}"),
    ]:
        Artifact.objects.create(
            app_name="app",
            user_id="alice",
            session_id=sid,
            filename=name,
            version=0,
            data=data,
            created_at=NOW,
        )
    rows, truncated = artifacts_for_session(session)
    assert not truncated
    assert {(r.filename, r.size, r.user_scoped) for r in rows} == {
        ("receipt.txt", 5, False),
        ("profile.json", 2, True),
    }
    assert {r.filename for r in artifacts_for_session(other)[0]} == {"other.txt", "profile.json"}


def test_session_links_prefer_the_live_session_then_the_tombstone():
    live = make_session("app", "alice", session_id="live")
    retired = RetiredSession.objects.create(
        app_name="app",
        user_id="alice",
        session_id="gone",
        created_at=NOW,
        last_update_time=NOW.timestamp(),
        event_count=3,
        retired_at=NOW,
    )
    make_session("app", "bob", session_id="bobs")  # another user's session never links
    links = session_links("app", "alice", ["live", "gone", "bobs", "never", ""])
    assert links == {"live": ("session", live.pk), "gone": ("retired", retired.pk)}


def test_policy_history_diffs_each_version_with_the_one_before():
    policy_for("app")
    update_policy("app", {"max_records": 300}, note="smaller")
    update_policy("app", {"max_tokens": 9000, "ttl_days": 30}, note="tighter")
    page = policy_history("app", per_page=2)
    v3, v2 = page.object_list
    assert (v3.version, v3.note) == (3, "tighter")
    assert v3.changes == [("ttl_days", 365, 30), ("max_tokens", 40000, 9000)]
    assert v2.changes == [("max_records", 500, 300)]  # diffed against v1 on the next page
    first = policy_history("app", page=2, per_page=2).object_list[0]
    assert (first.version, first.changes) == (1, [])


def test_forgetting_rates_divide_by_that_days_searches_and_sessions_in_one_query():
    feedback.bump("pharmacy", feedback.SEARCHES, NOW - timedelta(days=1), 400)
    feedback.bump("pharmacy", feedback.REGRET_HITS, NOW - timedelta(days=1), 3)
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, NOW, 8)
    feedback.bump("pharmacy", feedback.CORRECTIONS, NOW, 2)
    feedback.bump("travel", feedback.SEARCHES, NOW, 5)  # another app
    with CaptureQueriesContext(connection) as ctx:
        rates = forgetting_rates(NOW, "pharmacy", days=3)
    assert len(ctx.captured_queries) == 1
    assert rates.days[-1] == NOW.date() and len(rates.days) == 3
    assert rates.regret_per_1000_searches == [None, 7.5, None]  # no searches: no rate
    assert rates.corrections_per_1000_sessions == [None, None, 250.0]
    assert rates.counts["searches"] == [0, 400, 0] and rates.counts["corrections"] == [0, 0, 2]


def test_first_counted_day_is_the_apps_first_counter():
    assert first_counted_day("pharmacy") is None
    feedback.bump("pharmacy", feedback.SESSIONS_INGESTED, NOW - timedelta(days=4))
    feedback.bump("pharmacy", feedback.SEARCHES, NOW)
    feedback.bump("travel", feedback.SEARCHES, NOW - timedelta(days=9))
    assert first_counted_day("pharmacy") == (NOW - timedelta(days=4)).date()


def test_first_counted_day_ignores_back_dated_records_added():
    """Imported records are counted on the day they say they were written: no traffic."""
    feedback.bump("pharmacy", feedback.RECORDS_ADDED, NOW - timedelta(days=300))
    assert first_counted_day("pharmacy") is None
    feedback.bump("pharmacy", feedback.SEARCHES, NOW - timedelta(days=2))
    assert first_counted_day("pharmacy") == (NOW - timedelta(days=2)).date()


def test_policy_changes_since_a_moment_each_with_its_diff():
    policy_for("pharmacy")
    update_policy("pharmacy", {"max_records": 400})
    update_policy("pharmacy", {"max_records": 300, "ttl_days": 30})
    PolicyVersion.objects.filter(app_name="pharmacy", version__lte=2).update(
        created_at=NOW - timedelta(days=60)
    )
    PolicyVersion.objects.filter(app_name="pharmacy", version=3).update(created_at=NOW)
    (change,) = policy_changes("pharmacy", NOW - timedelta(days=30))
    assert change.version == 3 and change.at == NOW
    # diffed against v2, which is older than the window
    assert sorted(change.changes) == [("max_records", 400, 300), ("ttl_days", 365, 30)]
    everything = policy_changes("pharmacy", NOW - timedelta(days=90))
    assert [c.version for c in everything] == [2, 3]  # v1 is the start, not a change
    assert policy_changes("travel", NOW - timedelta(days=90)) == []
