import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from google.adk.events.event import Event

from memadmin import demo
from records.models import (
    AgentSession,
    Correction,
    EvictedRecord,
    EvictionEvent,
    MemoryRecord,
    RetiredSession,
    SearchLog,
    SessionEvent,
)
from sweeper.models import DailyMetric, PlanEntry, Run

pytestmark = pytest.mark.django_db


def test_seed_demo_builds_the_articles_pharmacy_customer(capsys):
    call_command("seed_demo", "--users-per-app", "3")
    customer = MemoryRecord.objects.filter(app_name=demo.PHARMACY, user_id=demo.PHARMACY_CUSTOMER)
    assert customer.count() == 498
    tokens = sum(customer.values_list("tokens", flat=True))
    assert 30_000 < tokens < 40_000  # about 70 tokens each, under the 40k cap
    allergy = customer.get(content__icontains="allergic to penicillin")
    assert allergy.pinned and allergy.importance == 0.9
    assert "Demo data:" in capsys.readouterr().out


def test_seed_demo_sessions_hold_valid_adk_events_some_idle_some_active():
    call_command("seed_demo", "--users-per-app", "3")
    for e in SessionEvent.objects.all()[:50]:
        assert Event.model_validate(e.data).id == e.event_id
    updates = list(AgentSession.objects.values_list("last_update_time", flat=True))
    import time

    now = time.time()
    assert any(now - t > 7 * 86400 for t in updates)
    assert any(now - t < 86400 for t in updates)


def test_seed_demo_is_idempotent_and_reset_regenerates(capsys):
    call_command("seed_demo", "--users-per-app", "2")
    first = MemoryRecord.objects.count()
    call_command("seed_demo", "--users-per-app", "2")
    assert "already present" in capsys.readouterr().out
    assert MemoryRecord.objects.count() == first
    history = (SearchLog.objects.count(), EvictedRecord.objects.count())
    assert history[0] > 0 and history[1] > 0
    call_command("seed_demo", "--users-per-app", "2", "--reset")
    assert MemoryRecord.objects.count() == first  # same seed, same data, no duplicates
    # The access history too: kept by a reset, a backtest would replay it twice.
    assert (SearchLog.objects.count(), EvictedRecord.objects.count()) == history


def test_seed_demo_refuses_nonsense():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="between 0 and 10000"):
        call_command("seed_demo", "--users-per-app", "-1")
    with pytest.raises(CommandError, match="between 0 and 90"):
        call_command("seed_demo", "--history-days", "91")


def metric_rows():
    return sorted(DailyMetric.objects.values_list("day", "app_name", "name", "value"))


def test_seed_demo_has_two_weeks_of_real_history_for_the_charts():
    now = timezone.now()
    demo.seed(users_per_app=3, now=now)
    days = {now.date() - timedelta(days=k) for k in range(1, 15)}
    rolled_up = set(
        DailyMetric.objects.filter(app_name="", name="sweeps_run").values_list("day", flat=True)
    )
    assert days | {now.date()} == rolled_up  # every past day and today rolled up
    for app in demo.DEMO_APPS:
        per_day = dict(
            DailyMetric.objects.filter(app_name=app, name="evictions_record_cap").values_list(
                "day", "value"
            )
        )
        assert len(days & set(per_day)) >= 10  # evictions on most days, by real enforcement
        assert DailyMetric.objects.filter(app_name=app, name="regret_hits", value__gt=0).exists()
        assert DailyMetric.objects.filter(app_name=app, name="records_added").exists()
        [rate] = DailyMetric.objects.filter(app_name=app, name="forgot_per_1000_sessions").filter(
            value__gt=0
        )
        assert rate.day == now.date() - timedelta(days=demo.CORRECTION_DAYS[app])
    # the evictions come from enforcement at each day's time, not from today
    first = EvictionEvent.objects.order_by("evicted_at").first()
    assert first.evicted_at.date() == now.date() - timedelta(days=14)
    assert Correction.objects.count() == 3
    # today: one real sweep (the chart's bar) and one dry-run to review and apply
    sweep = Run.objects.get(kind="sweep", dry_run=False)
    assert sweep.status == "done" and sweep.app_name == demo.BANK
    assert DailyMetric.objects.get(day=now.date(), app_name="", name="sweeps_run").value == 1
    dry_run = Run.objects.get(kind="sweep", dry_run=True)
    assert dry_run.status == "done" and PlanEntry.objects.filter(run=dry_run).exists()
    # the article's customer is left as the article has her
    customer = MemoryRecord.objects.filter(app_name=demo.PHARMACY, user_id=demo.PHARMACY_CUSTOMER)
    assert customer.count() == 498


def test_seed_demo_history_searches_through_the_search_path_most_finding_no_regret():
    from records import feedback
    from records.access_log import SearchLog
    from records.models import DailyCounter

    now = timezone.now()
    demo.seed(users_per_app=3, now=now)
    history = [now.date() - timedelta(days=k) for k in range(1, 15)]
    total = {"searches": 0, "regret": 0}
    for app in demo.DEMO_APPS:
        counted = DailyCounter.objects.filter(app_name=app, day__in=history)
        searches = dict(counted.filter(name=feedback.SEARCHES).values_list("day", "value"))
        regret = dict(counted.filter(name=feedback.REGRET_HITS).values_list("day", "value"))
        assert set(searches) == set(history), app  # searches every day, not only regrets
        for day in history:  # most searches find what is there, even after a tightening
            assert searches[day] > 2 * regret.get(day, 0), (app, day)
        assert sum(regret.values()) > 0, app
        total["searches"] += sum(searches.values())
        total["regret"] += sum(regret.values())
        # real searches of the memory service: each one kept in the search history
        logged = SearchLog.objects.filter(app_name=app, searched_at__date__in=history)
        assert logged.count() == sum(searches.values())
    assert 1000 * total["regret"] / total["searches"] < 100  # tens per 1,000, not 1,000


def test_seed_demo_rolls_each_history_day_up_as_of_that_day():
    from sweeper.selectors import size_history

    now = timezone.now()
    demo.seed(users_per_app=3, now=now)
    for app in demo.DEMO_APPS:
        sizes = size_history(now, app, days=15)
        assert sizes.days[0] == now.date() - timedelta(days=14)
        for stat in ("p50", "max"):
            assert None not in sizes.sizes["records"][stat], (app, stat)
        assert None not in sizes.caps["records"], app
    # the travel caps in force each day: the defaults, then the tightening
    caps = size_history(now, demo.TRAVEL, days=15).caps["records"]
    change = 14 - demo.TIGHTEN_DAY
    assert set(caps[:change]) == {500} and set(caps[change:]) == {200}


def test_seed_demo_dates_the_policy_change_inside_the_history():
    from records.models import PolicyVersion
    from records.selectors import policy_changes

    now = timezone.now()
    demo.seed(users_per_app=3, now=now)
    [change] = policy_changes(demo.TRAVEL, now - timedelta(days=30))
    assert change.at.date() == now.date() - timedelta(days=demo.TIGHTEN_DAY)
    assert ("max_records", 500, 200) in change.changes
    for app in (demo.PHARMACY, demo.BANK):
        assert policy_changes(app, now - timedelta(days=400)) == []
    first = PolicyVersion.objects.filter(version=1, app_name__in=demo.DEMO_APPS)
    assert all(v.created_at < change.at for v in first)  # no version older than its app
    # the change cut the travel regulars to the new cap on that day: more evictions
    cut = DailyMetric.objects.get(
        day=change.at.date(), app_name=demo.TRAVEL, name="evictions_record_cap"
    )
    before = DailyMetric.objects.get(
        day=change.at.date() - timedelta(days=1), app_name=demo.TRAVEL, name="evictions_record_cap"
    )
    assert cut.value > 10 * before.value


def test_seed_demo_history_is_deterministic():
    now = timezone.now()
    demo.seed(users_per_app=2, now=now)
    first = metric_rows()
    demo.clear_demo()
    assert not DailyMetric.objects.exclude(app_name="").exists()
    assert not Run.objects.exists() and not Correction.objects.exists()
    demo.seed(users_per_app=2, now=now)
    assert metric_rows() == first


def test_seed_demo_counts_its_records_as_added_on_their_creation_days():
    from records import feedback
    from records.models import DailyCounter
    from records.selectors.overview import growth_per_week

    now = timezone.now()
    demo.seed(users_per_app=3, now=now, history_days=0)
    for app in demo.DEMO_APPS:
        stored = MemoryRecord.objects.filter(app_name=app)
        added = DailyCounter.objects.filter(app_name=app, name=feedback.RECORDS_ADDED)
        assert sum(added.values_list("value", flat=True)) == stored.count()
        oldest = stored.order_by("created_at").first().created_at.date()
        assert added.order_by("day").first().day == oldest
    # the overview's weeks count them: twelve weeks of the demo's records, not zeros
    weeks = growth_per_week(now, weeks=12)
    recent = MemoryRecord.objects.filter(created_at__date__gte=weeks[0][0]).count()
    assert sum(n for _, n in weeks) == recent > 0


# --- one person per user, conversations that fit the app, provenance that resolves ------

NAME = re.compile(r"name is (\w+ \w+)")
NICK = re.compile(r"call(?:ed)? (?:me )?(\w+)")
ADDRESS = re.compile(r"\d+ \w+ (?:Street|Road|Lane|Avenue|Way|Verte), \w+")
PHONE = re.compile(r"\+44 7\d+ \d+")


@pytest.fixture
def seeded():
    now = timezone.now()
    demo.seed(users_per_app=4, now=now, history_days=3)
    return now


def user_texts() -> dict[tuple[str, str], list[str]]:
    texts: dict[tuple[str, str], list[str]] = {}
    for app, user, content in MemoryRecord.objects.values_list("app_name", "user_id", "content"):
        texts.setdefault((app, user), []).append(content)
    for app, user, data in SessionEvent.objects.values_list(
        "session__app_name", "session__user_id", "data"
    ):
        for part in data.get("content", {}).get("parts", []):
            texts.setdefault((app, user), []).append(part.get("text", ""))
    return texts


def test_every_demo_user_is_one_person(seeded):
    texts = user_texts()
    assert len(texts) >= 3 * 4
    named = 0
    for key, contents in texts.items():
        joined = "\n".join(contents)
        for pattern in (NAME, NICK, ADDRESS, PHONE):
            found = set(pattern.findall(joined))
            assert len(found) <= 1, (key, pattern.pattern, found)
        name, nick = set(NAME.findall(joined)), set(NICK.findall(joined))
        if name and nick:
            assert next(iter(name)).split()[0] == next(iter(nick)), key  # called by own name
            named += 1
    assert named >= 3 * 4 - 2  # nearly every user says who they are somewhere


def test_the_articles_customer_is_one_person_as_the_worked_example_needs(seeded):
    customer = MemoryRecord.objects.filter(app_name=demo.PHARMACY, user_id=demo.PHARMACY_CUSTOMER)
    joined = "\n".join(customer.values_list("content", flat=True))
    assert set(NAME.findall(joined)) == {"Ana Novak"}
    assert set(ADDRESS.findall(joined)) <= {"12 Elm Street, Leeds"}
    assert customer.filter(pinned=True).count() == 1
    assert customer.get(pinned=True).content.startswith("The customer is allergic to penicillin")
    low = customer.filter(importance=0.1)
    assert low.count() == 4 and low.filter(content__contains="opening hours").exists()


def test_each_apps_conversations_fit_the_app(seeded):
    for app, agent in demo.AGENTS.items():
        authors = set(
            SessionEvent.objects.filter(session__app_name=app).values_list("author", flat=True)
        )
        assert authors == {"user", agent}, app
    off_topic = {
        demo.TRAVEL: demo.DRUGS + ["prescription", "account"],
        demo.BANK: demo.DRUGS + ["flight", "prescription"],
        demo.PHARMACY: ["flight", "hotel", "account"],
    }
    texts = user_texts()
    for (app, user), contents in texts.items():
        joined = "\n".join(contents).lower()
        for word in off_topic[app]:
            assert word not in joined, (app, user, word)


def test_every_record_names_a_stored_session_or_its_tombstone(seeded):
    named = set(
        MemoryRecord.objects.filter(app_name__in=demo.DEMO_APPS).values_list(
            "app_name", "user_id", "source_session_id"
        )
    )
    live = set(AgentSession.objects.values_list("app_name", "user_id", "session_id"))
    retired = set(RetiredSession.objects.values_list("app_name", "user_id", "session_id"))
    assert named and not (named - live - retired)
    assert named & live and named & retired  # recent notes from live chats, old from retired
    assert not live & retired


def test_the_backtest_reproduces_every_eviction_of_the_demo_history():
    """Issue 17's exactness check on the demo: replaying the policy that ran over the
    history evicts exactly the records that were evicted, in every app (the travel app's
    cap change inside the window included)."""
    from backtest import service
    from records.models import Policy

    now = timezone.now()
    demo.seed(users_per_app=4, now=now, history_days=demo.TIGHTEN_DAY + 1)
    for app in demo.DEMO_APPS:
        current = Policy.objects.get(app_name=app)
        report = service.run(app, demo.TIGHTEN_DAY + 1, current, now)
        exactness = report.exactness
        assert exactness.real > 0, app
        assert (exactness.reproduced, exactness.extra) == (exactness.real, 0), app
        assert exactness.exact, app
        # Exact, so the figures the report takes from the history are the replay's.
        replayed = service.replay(app, report.start, report.end, now, [current])
        assert [row.current for row in report.days] == replayed.current, app
