"""The database-side victim selection chooses exactly what the pure policy chooses."""

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from records.models import POLICY_RECORD_FIELDS, MemoryRecord
from records.policy import HybridPolicy, PolicyParams
from records.victims import select_victims

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def python_victims(app, user, now, params):
    """The oracle: every record of the user through the pure policy."""
    records = MemoryRecord.objects.filter(app_name=app, user_id=user).order_by("id")
    return HybridPolicy(params).victims(
        [r.as_policy_record() for r in records.only(*POLICY_RECORD_FIELDS)], now
    )


def random_records(rng, app, user, n):
    # A small pool of values makes exact ties common, so tie-breaking is exercised too.
    ages = [timedelta(days=d, seconds=s) for d in (0, 3, 40, 200, 400) for s in (0, 17)]
    objs = []
    for _ in range(n):
        age = rng.choice(ages)
        objs.append(
            MemoryRecord(
                app_name=app,
                user_id=user,
                content="x",
                created_at=NOW - age,
                last_accessed_at=NOW - age + timedelta(seconds=rng.choice([0, 5, 3600, 86400 * 9])),
                hits=rng.choice([0, 0, 1, 2, 7, 100, 5000]),
                importance=rng.choice([0.0, 0.1, 0.2, 0.5, 0.8, 1.0, rng.random()]),
                pinned=rng.random() < 0.1,
                tokens=rng.choice([0, 1, 20, 70, 300]),
                due_at=rng.choice([None, None, NOW, NOW - age, NOW + timedelta(days=2)]),
                # few slots and stated times: newer, older and tied statements of a slot
                slot=rng.choice(["", "", "", "delivery-address", "phone"]),
                entry_timestamp=rng.choice([None, NOW - age, NOW - timedelta(days=3)]),
            )
        )
    MemoryRecord.objects.bulk_create(objs)


def random_world(rng: random.Random) -> tuple[PolicyParams, list[str]]:
    """A random policy, three users of "app" holding random records, and records of
    another app (which a selection for "app" must never touch)."""
    params = PolicyParams(
        ttl=timedelta(days=rng.choice([30, 365])),
        half_life=timedelta(hours=rng.choice([24, 720])),
        max_records=rng.choice([1, 10, 50]),
        max_tokens=rng.choice([50, 1000, 40_000]),
        w_recency=0.4,
        w_frequency=0.2,
        w_importance=0.4,
        fresh_start=rng.choice([0.0, 1.0]),
        past_due_half_life=timedelta(hours=rng.choice([0, 24, 336])),
        supersede=rng.random() < 0.7,
    )
    users = [f"u{i}" for i in range(3)]
    for user in users:
        random_records(rng, "app", user, rng.randint(0, 120))
    random_records(rng, "other-app", "u0", 30)
    return params, users


@pytest.mark.parametrize("seed", range(12))
def test_sql_selection_equals_pure_policy_on_random_data(seed):
    rng = random.Random(seed)
    params, users = random_world(rng)

    sql = select_victims("app", None, NOW, params)
    for user in users:
        expected = python_victims("app", user, NOW, params)
        got = [v for v in sql if v.user_id == user]
        assert [(v.id, v.reason, v.superseded_by) for v in got] == [
            (v.id, v.reason, v.superseded_by) for v in expected
        ]
        for g, e in zip(got, expected, strict=True):
            assert g.score.total == pytest.approx(e.score.total, abs=1e-9)
            assert g.score.recency == pytest.approx(e.score.recency, rel=1e-9)
            assert g.score.importance == pytest.approx(e.score.importance, abs=1e-12)
        # one user at a time gives the same answer as the whole-app pass
        single = select_victims("app", [user], NOW, params)
        assert [v.id for v in single] == [v.id for v in got]


def test_pinned_records_are_never_selected_even_over_cap():
    random_records(random.Random(1), "app", "u", 0)
    MemoryRecord.objects.bulk_create(
        MemoryRecord(
            app_name="app",
            user_id="u",
            content="p",
            created_at=NOW - timedelta(days=900),
            last_accessed_at=NOW - timedelta(days=900),
            pinned=True,
            tokens=100,
        )
        for _ in range(5)
    )
    params = PolicyParams(max_records=1, max_tokens=1)
    assert select_victims("app", ["u"], NOW, params) == []


def test_only_users_over_a_cap_are_scored():
    rng = random.Random(3)
    random_records(rng, "app", "small", 5)
    random_records(rng, "app", "big", 40)
    params = PolicyParams(max_records=20, ttl=timedelta(days=10_000), supersede=False)
    victims = select_victims("app", None, NOW, params)
    assert {v.user_id for v in victims} == {"big"}
    assert len(victims) >= 20


def test_scores_match_the_policy_formula():
    MemoryRecord.objects.create(
        app_name="app",
        user_id="u",
        content="x",
        created_at=NOW,
        last_accessed_at=NOW - timedelta(days=30),
        hits=1,
        importance=0.8,
        tokens=5,
    )
    MemoryRecord.objects.create(
        app_name="app",
        user_id="u",
        content="y",
        created_at=NOW,
        last_accessed_at=NOW,
        hits=50,
        importance=0.9,
        tokens=5,
    )
    [v] = select_victims("app", ["u"], NOW, PolicyParams(max_records=1))
    r = MemoryRecord.objects.get(id=v.id).as_policy_record()
    assert v.score.total == pytest.approx(HybridPolicy().score(r, NOW).total, abs=1e-12)
    assert v.score.recency == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(3))
def test_counting_victims_in_the_database_matches_selecting_them(seed):
    from records.victims import count_victims

    rng = random.Random(seed)
    for user in ("u1", "u2", "u3"):
        random_records(rng, "app", user, rng.randint(10, 80))
    params = PolicyParams(max_records=20, max_tokens=2000)
    selected = select_victims("app", None, NOW, params)
    totals = count_victims("app", None, NOW, params)
    assert totals.records == len(selected)
    assert totals.users == len({v.user_id for v in selected})
    assert totals.tokens == sum(v.tokens for v in selected)
    by_reason = {}
    for v in selected:
        by_reason[v.reason] = by_reason.get(v.reason, 0) + 1
    assert totals.by_reason == by_reason


def test_token_cap_far_past_the_record_cap_with_zero_token_records_ranked_first():
    # PostgreSQL ranks only as many records as can be victims (a bound from the totals);
    # here the token cap needs 50 victims, 30 of them holding no tokens, against a record
    # cap that needs one.
    def record(age_days, importance, tokens):
        return MemoryRecord(
            app_name="app",
            user_id="u",
            content="x",
            created_at=NOW - timedelta(days=age_days),
            last_accessed_at=NOW - timedelta(days=age_days),
            importance=importance,
            tokens=tokens,
        )

    MemoryRecord.objects.bulk_create(
        [record(300, 0.0, 0) for _ in range(30)] + [record(10, 0.5, 10) for _ in range(70)]
    )
    params = PolicyParams(max_records=99, max_tokens=500)  # 700 tokens: 200 over
    got = select_victims("app", ["u"], NOW, params)
    expected = python_victims("app", "u", NOW, params)
    assert [(v.id, v.reason) for v in got] == [(v.id, v.reason) for v in expected]
    assert len(got) == 50
    assert [v.reason for v in got].count("token_cap") == 49


def test_float_rounding_equals_numeric_rounding_in_postgresql():
    from django.db import connection

    from records.policy import round_score
    from records.policy_sql import PG_ROUND_9

    if connection.vendor != "postgresql":
        pytest.skip("the PostgreSQL score expression")
    rng = random.Random(7)
    values = [rng.random() for _ in range(2000)]
    # Halves and their neighbours, where rounding methods disagree if any do.
    for k in (0, 1, 123456789, 500000000, 999999999, 1000000000):
        half = (k + 0.5) / 1e9
        values += [half, math.nextafter(half, 0), math.nextafter(half, 1), k / 1e9]
        values += [half + d for d in (1e-16, -1e-16, 3e-15, -3e-15, 1e-14, -1e-14)]
    values = [v for v in values if 0 <= v <= 1]
    expression = PG_ROUND_9.format(x="v")
    with connection.cursor() as cursor:
        cursor.execute(
            # The expression is the module's constant; the values go as a parameter.
            f"SELECT v, {expression}, round(v::numeric, 9)::float8"  # noqa: S608
            " FROM unnest(%s::float8[]) AS v",
            [values],
        )
        rows = cursor.fetchall()
    assert len(rows) == len(values)
    assert [(v, fast) for v, fast, _ in rows] == [(v, exact) for v, _, exact in rows]
    # and the pure policy (SQLite's scores too) rounds as PostgreSQL does, halves included
    assert [(v, round_score(v)) for v, _, _ in rows] == [(v, exact) for v, _, exact in rows]


def test_a_score_at_a_rounding_half_picks_the_same_victim_in_sql_and_in_python():
    """0.5 + 0.5 × 5e-9 = 0.5000000025: half to even (Python's round) gives 0.500000002,
    PostgreSQL's numeric rounding 0.500000003, which ties the other record's score and
    hands the choice to the tie-breakers: another victim."""
    MemoryRecord.objects.create(
        app_name="app",
        user_id="u",
        content="a",
        created_at=NOW,
        last_accessed_at=NOW + timedelta(hours=1),  # touched "after" now: recency 1
        importance=5e-9,
    )
    MemoryRecord.objects.create(
        app_name="app",
        user_id="u",
        content="b",
        created_at=NOW,
        last_accessed_at=NOW,
        importance=6e-9,
    )
    params = PolicyParams(
        max_records=1, supersede=False, w_recency=0.5, w_frequency=0.0, w_importance=0.5
    )
    held = MemoryRecord.objects.filter(user_id="u").only(*POLICY_RECORD_FIELDS)
    python = HybridPolicy(params).victims([r.as_policy_record() for r in held], NOW)
    assert [v.score.total for v in python] == [0.500000003]
    for user_ids in (["u"], None):
        chosen = select_victims("app", user_ids, NOW, params)
        assert [(v.id, v.score.total) for v in chosen] == [(v.id, v.score.total) for v in python]
