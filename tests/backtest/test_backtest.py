"""manage.py backtest: replays what happened; the policy that ran reproduces it exactly."""

import json
from datetime import UTC, datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from backtest import service
from records import memory_service, store
from records.models import EvictionEvent, Policy

from .history import APP, HOUR, T0, TOPICS, entry, make_history, search, write

pytestmark = pytest.mark.django_db


def backtest(*args, end):
    out = StringIO()
    call_command("backtest", "--app", APP, "--until", end.isoformat(), *args, stdout=out)
    return out.getvalue()


def run(end, days=5, **values):
    return service.run(APP, days, service.candidate_policy(APP, values=values), end)


def test_replaying_the_policy_that_ran_reproduces_every_eviction():
    end = make_history()
    evicted = set(EvictionEvent.objects.values_list("record_id", flat=True))
    reasons = set(EvictionEvent.objects.values_list("reason", flat=True))
    assert len(evicted) > 10 and {"record_cap", "expired"} <= reasons

    report = run(end)

    e = report.exactness
    assert (e.real, e.reproduced, e.extra, e.without_metadata) == (len(evicted), len(evicted), 0, 0)
    assert e.exact
    current, candidate = report.totals()
    assert current == candidate  # the same policy twice
    assert current.evictions == len(evicted)
    assert current.lost == current.saved == 0


def test_the_policy_that_ran_is_counted_from_the_history_and_replayed_on_a_sample(monkeypatch):
    end = make_history(users=("u1", "u2", "u3"))
    start, candidate = end - timedelta(days=5), service.candidate_policy(APP, preset="article")

    everyone = service.replay(APP, start, end, end, [candidate])  # the tuner's way
    sampled = service.replay(APP, start, end, end, [candidate], check_users=1)

    # The history's figures are the exact replay's, and so are the candidate's pairings.
    assert sampled.current == everyone.current
    assert sampled.candidates == everyone.candidates
    assert (everyone.exactness.checked_users, sampled.exactness.checked_users) == (3, 1)
    assert 0 < sampled.exactness.real < everyone.exactness.real  # one user's evictions
    assert sampled.exactness.exact and everyone.exactness.exact
    out = backtest("--days", "5", end=end)
    assert "Replay of the policy that ran: exact" in out  # every user of a small app
    monkeypatch.setattr(service, "CHECKED_USERS", 2)
    out = backtest("--days", "5", end=end)
    assert "Replay of the policy that ran (checked on 2 of 3 users): exact" in out


def test_the_current_figures_are_what_happened_when_the_replay_is_not_exact():
    end = make_history()
    for i in range(5):
        write("u1", f"A late note about the {TOPICS[i]}", end - 3 * HOUR + i * timedelta(minutes=1))
    # Two evictions no policy version explains: a cap lowered and put back unversioned.
    Policy.objects.filter(app_name=APP).update(max_records=3)
    store.enforce_many(APP, ["u1"], end - HOUR)
    Policy.objects.filter(app_name=APP).update(max_records=5)

    report = run(end)

    current, _ = report.totals()
    assert current.evictions == EvictionEvent.objects.count()
    e = report.exactness
    assert (e.real - e.reproduced, e.extra, e.exact) == (2, 0, False)
    replayed = service.replay(APP, report.start, report.end, end, [Policy(app_name=APP)])
    assert sum(d.evictions for d in replayed.current) == current.evictions - 2


def test_an_eviction_replayed_at_another_moment_is_not_reproduced():
    # A refresh by add_memory is a touch the history does not log (a documented limit):
    # the replay evicts the same two records, each at the other's moment.
    Policy.objects.create(app_name=APP, max_records=2, ttl_days=365)
    t = T0 + 20 * HOUR  # the swap straddles midnight

    def add(text, hours, importance):
        at = t + hours * HOUR
        memory_service.add_memories(APP, "u1", [entry(text)], at, {"importance": importance})

    add("The customer prefers walnut bookshelves in the study", 1, 0.5)  # A
    add("The customer owns a copper kettle for green tea", 1.5, 0.5)  # B
    add("The customer prefers walnut bookshelves in the study", 2, 0.5)  # A refreshed
    add("The customer lives in Lisbon near the river", 3, 0.9)  # C: B goes
    search("u1", "walnut bookshelves study", t + 4 * HOUR)
    add("The customer works as a violin teacher on weekends", 5, 0.9)  # D: A goes
    end = t + 2 * 24 * HOUR
    report = service.run(APP, 3, service.candidate_policy(APP), end)
    replayed = service.replay(APP, report.start, report.end, end, [Policy(app_name=APP)])
    # The replay's figures are not what happened (its regret and day-end holdings).
    assert replayed.current != [row.current for row in report.days]

    e = report.exactness
    assert (e.real, e.reproduced, e.extra, e.exact) == (2, 0, 0, False)


def test_a_larger_cap_keeps_more_and_saves_the_searches_the_real_policy_regretted():
    end = make_history()
    report = run(end, max_records="50", ttl_days="30")

    current, candidate = report.totals()
    assert current.regret > 0  # searches for evicted topics
    assert candidate.evictions == 0 and candidate.regret == 0
    assert candidate.saved == current.regret
    assert candidate.records > current.records and candidate.tokens > current.tokens
    assert report.exactness.exact  # the current side does not depend on the candidate


def test_a_smaller_cap_loses_records_searches_returned():
    end = make_history()
    report = run(end, max_records="1")
    current, candidate = report.totals()
    assert candidate.lost > 0
    assert candidate.regret > current.regret
    assert any(r.candidate.records < r.current.records for r in report.days)
    assert all(r.candidate.records <= 2 for r in report.days)  # 1 per user


def test_per_day_rows_cover_the_window_and_held_is_the_end_of_each_day():
    end = make_history()
    report = run(end, days=3)
    assert [r.day for r in report.days] == [(end - timedelta(days=3 - i)).date() for i in range(3)]
    assert all(0 < r.current.records <= 2 * 5 for r in report.days)
    assert sum(r.current.searches for r in report.days) == report.totals()[0].searches


def test_the_command_prints_a_table_writes_json_and_never_writes_to_the_database(tmp_path):
    end = make_history()
    path = tmp_path / "report.json"
    with CaptureQueriesContext(connection) as queries:
        out = backtest("--days", "5", "--preset", "article", "--json", str(path), end=end)
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert "Replay of the policy that ran: exact" in out
    data = json.loads(path.read_text())
    assert data["exact"] is True and data["candidate"]["w_frequency"] == 0.2
    assert len(data["days"]) == 5
    assert data["totals"]["current"]["evictions"] == EvictionEvent.objects.count()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "w_recency=0.9"], "Weights must sum to 1"),
        (["--set", "half_life_hours=abc"], "half_life_hours: Enter a number."),
        (["--set", "colour=blue"], "Unknown policy field(s): colour"),
        (["--set", "max_records"], "--set takes field=value"),
        (["--set", "ttl_days=99999999"], "TTL must be at most 36500 days"),
        (["--set", "summarise=true"], "The replay does not model summarise"),
        (["--set", "session_idle_days=3"], "does not model session_idle_days"),
    ],
)
def test_an_invalid_candidate_is_refused_with_the_policy_forms_message(args, message):
    end = make_history(users=("u1",))
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        backtest("--days", "3", *args, end=end)


def test_an_unknown_app_is_refused_with_the_known_apps():
    end = make_history(users=("u1",))
    with pytest.raises(CommandError, match="shop"):
        call_command("backtest", "--app", "shopp", "--days", "3", "--until", end.isoformat())


def test_a_window_without_history_is_refused():
    end = make_history(users=("u1",))
    with pytest.raises(CommandError, match="No history for 'shop' in the last 2 days"):
        backtest("--days", "2", end=end - timedelta(days=30))


def test_a_window_longer_than_the_retention_is_refused(settings):
    settings.MEMADMIN = {**settings.MEMADMIN, "ACCESS_HISTORY_DAYS": 30}
    end = make_history(users=("u1",))
    with pytest.raises(CommandError, match="keeps 30 days.*30 days or fewer"):
        backtest("--days", "31", end=end)


def test_a_window_reaching_before_the_history_kept_is_refused(settings):
    """The daily prune keeps the retention back from today: a window ending long ago
    would be replayed with part of its history gone."""
    end = make_history(users=("u1",))  # its clock: 30 days after the history's start
    settings.MEMADMIN = {**settings.MEMADMIN, "ACCESS_HISTORY_DAYS": 28}
    with pytest.raises(CommandError, match="nothing before .* is kept; 5 days up to"):
        backtest("--days", "5", end=end)
    with pytest.raises(CommandError, match="before year 1"):
        backtest("--days", "5", end=datetime(1, 1, 2, tzinfo=UTC))


def test_a_window_ending_before_now_replays_it_as_it_was_then():
    """The records are read as they are now: touches logged after ``until`` are taken
    back off them, so the report is the one a backtest run at ``until`` gave. (Read as
    of ``until``, B, touched later, kept its later hits and access in the window, and a
    candidate with a smaller cap kept it over C.)"""
    Policy.objects.create(app_name=APP, max_records=2, ttl_days=30)
    for hour, topic in enumerate(TOPICS[:3]):  # A, B, C: C's write evicts A
        write("u1", f"The customer ordered a {topic}", T0 + hour * HOUR)
    until = T0 + 3 * HOUR
    candidate = service.candidate_policy(APP, values={"max_records": "1"})
    then = service.run(APP, 1, candidate, until)  # at until: nothing later exists yet
    assert [e.content.parts[0].text for e in search("u1", TOPICS[1], T0 + 5 * HOUR)] == [
        f"The customer ordered a {TOPICS[1]}"
    ]
    now = service.run(APP, 1, candidate, T0 + timedelta(days=30), until=until)
    assert (now.start, now.end) == (until - timedelta(days=1), until)
    assert now.days == then.days and now.exactness == then.exactness
    assert now.exactness.exact and sum(d.candidate.evictions for d in now.days) == 2


def test_until_in_the_future_is_refused():
    end = make_history(users=("u1",))  # the commands' clock: a month after the history
    with pytest.raises(CommandError, match="is in the future"):
        backtest("--days", "3", end=T0 + timedelta(days=31))
    with pytest.raises(CommandError, match="is in the future"):
        call_command(
            "tune", "--app", APP, "--days", "3", "--until", (end + timedelta(days=60)).isoformat()
        )


def test_until_is_read_in_utc_whatever_its_offset():
    end = make_history(users=("u1",))
    assert end.tzinfo is not None
    as_utc = backtest("--days", "3", end=end)
    elsewhere = backtest("--days", "3", end=end.astimezone(timezone(timedelta(hours=5))))
    assert elsewhere == as_utc  # the same window, its times printed in UTC
    with pytest.raises(CommandError, match="not a date UTC can hold"):
        call_command(
            "backtest", "--app", APP, "--days", "3", "--until", "9999-12-31T23:00:00-05:00"
        )


def test_an_unwritable_report_path_is_refused_before_the_replay(tmp_path):
    end = make_history(users=("u1",))
    for path, message in [
        (tmp_path / "no-such-folder" / "r.json", "does not exist"),
        (tmp_path, "is a folder"),
    ]:
        with pytest.raises(CommandError, match=message):
            backtest("--days", "3", "--json", str(path), end=end)
    written = tmp_path / "r.json"
    assert "Report written" in backtest("--days", "3", "--json", str(written), end=end)
    assert json.loads(written.read_text())["app"] == APP


@pytest.mark.parametrize(
    ("value", "expected"), [("0", False), ("no", False), ("OFF", False), ("1", True), ("yes", True)]
)
def test_yes_no_settings_are_read_strictly(value, expected):
    make_history(users=("u1",))
    candidate = service.candidate_policy(APP, preset="article", values={"supersede": value})
    assert candidate.supersede is expected


def test_a_yes_no_setting_that_is_neither_is_refused():
    end = make_history(users=("u1",))
    with pytest.raises(CommandError, match="supersede is a yes/no setting.*'maybe'"):
        backtest("--days", "3", "--set", "supersede=maybe", end=end)


def test_a_policy_change_in_the_window_is_replayed_from_its_moment_and_reported():
    from records.models import PolicyVersion
    from records.policies import create_policy_row, update_policy

    from .history import HOUR, T0, TOPICS, search, write

    create_policy_row(APP)
    update_policy(APP, {"max_records": 6, "ttl_days": 30})
    PolicyVersion.objects.filter(app_name=APP).update(created_at=T0 - HOUR)
    at = T0
    for i, topic in enumerate(TOPICS):
        at += 3 * HOUR
        if i == 8:  # the cap tightens mid-way
            update_policy(APP, {"max_records": 3})
            PolicyVersion.objects.filter(app_name=APP, version=3).update(created_at=at)
        write("u1", f"The customer ordered a {topic} number {i}", at)
        search("u1", f"{topic} number", at + HOUR)
    end = at + 2 * HOUR

    report = run(end, days=1)  # starts after 6 writes: their state at the start is rebuilt

    assert report.exactness.exact and report.exactness.real > 3
    assert [v for _, v in report.policy_changes] == [3]
    current, candidate = report.totals()  # the candidate keeps 3 from the start
    assert candidate.lost > 0 and candidate.regret > current.regret


def test_held_records_are_read_with_the_term_hashes_their_eviction_keeps():
    """The regret rule needs the terms of what the policy that ran still holds, hashed as
    an eviction hashes them; no content is kept. Only hashes some search has can match:
    the read keeps those."""
    from backtest import history
    from records import access_log
    from records.models import EvictedRecord, MemoryRecord

    end = make_history(users=("u1",))
    [(_, records, searches, _)] = history.user_histories(APP, ["u1"], T0, T0, end)
    searched = {h for s in searches for h in s.term_hashes}
    held = {r.id: r for r in records if r.removed_at is None}
    assert set(held) == set(MemoryRecord.objects.values_list("id", flat=True))
    matchable = 0
    for record in MemoryRecord.objects.all():
        hashes = held[record.id].term_hashes
        assert hashes == frozenset(access_log.record_hashes(record.content)) & searched
        assert not {w for w in record.content.lower().split()} & hashes
        matchable += bool(hashes)
    assert matchable
    evicted = {r.id: r.term_hashes for r in records if r.removed_at is not None}
    kept = dict(EvictedRecord.objects.values_list("record_id", "term_hashes"))
    assert evicted and evicted == {i: frozenset(h) & searched for i, h in kept.items()}
    assert any(evicted.values())


def test_records_are_read_with_the_information_score_an_eviction_keeps():
    """What a candidate's information_importance would have written: the score of a
    record no rule decided, live (from its content) or evicted (as the eviction kept it)."""
    from backtest import history
    from records.extract import follows_information
    from records.information import information_importance
    from records.models import EvictedRecord, MemoryRecord

    end = make_history(users=("u1",))
    [(_, records, _, _)] = history.user_histories(APP, ["u1"], T0, T0, end)
    read = {r.id: (r.information, r.informed) for r in records}
    scored = 0
    for record in MemoryRecord.objects.all():
        if follows_information(record.importance_source, record.importance_rule):
            expected = (information_importance(record.content), record.importance_rule != "")
            scored += 1
        else:
            expected = (None, False)
        assert read[record.id] == expected
    assert scored
    kept = EvictedRecord.objects.values_list("record_id", "information", "informed")
    assert kept and all(read[i] == (information, informed) for i, information, informed in kept)


def test_the_regret_of_the_policy_that_ran_is_the_live_regret_checks():
    """Replayed, the policy that ran regrets the searches the live check counted."""
    from django.db.models import Sum

    from records import feedback
    from records.models import DailyCounter

    end = make_history()
    current, _ = run(end).totals()
    live = DailyCounter.objects.filter(app_name=APP, name=feedback.REGRET_HITS)
    assert current.regret > 0 and current.regret == live.aggregate(n=Sum("value"))["n"]
