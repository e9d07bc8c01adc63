"""The pure policy, with a fixed clock. No database."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from records.policy import (
    ARTICLE,
    DEFAULT,
    EXPIRED,
    PRESET_FIELDS,
    PRESETS,
    RECORD_CAP,
    SUPERSEDED,
    TOKEN_CAP,
    WEIGHTS,
    HybridPolicy,
    PolicyError,
    PolicyParams,
    Record,
    fresh,
    fresh_last_accessed,
    idle_cutoff,
    live,
    preset,
    preset_of,
    problems,
    session_idle,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HALF_LIFE = timedelta(days=30)
# The article's exact policy: its formula and worked example are checked under it.
ARTICLE_PARAMS = preset(ARTICLE)


def rec(
    id,
    *,
    age=timedelta(days=10),
    accessed_ago=timedelta(days=1),
    hits=0,
    importance=0.5,
    pinned=False,
    tokens=10,
    due=None,
    slot="",
    said=None,
):
    return Record(
        id=id,
        created_at=NOW - age,
        last_accessed_at=NOW - accessed_ago,
        hits=hits,
        importance=importance,
        pinned=pinned,
        tokens=tokens,
        due_at=due,
        slot=slot,
        stated_at=said,
    )


# --- score terms ---------------------------------------------------------------


def test_recency_halves_every_half_life():
    policy = HybridPolicy(ARTICLE_PARAMS)
    assert policy.score(rec(1, accessed_ago=timedelta(0)), NOW).recency == 1.0
    assert policy.score(rec(1, accessed_ago=HALF_LIFE), NOW).recency == pytest.approx(0.5)
    assert policy.score(rec(1, accessed_ago=2 * HALF_LIFE), NOW).recency == pytest.approx(0.25)


def test_frequency_is_logarithmic_and_saturates_at_100_hits():
    policy = HybridPolicy(ARTICLE_PARAMS)
    f = lambda hits: policy.score(rec(1, hits=hits), NOW).frequency  # noqa: E731
    assert f(0) == 0.0
    assert f(1) == pytest.approx(math.log(2) / math.log(101))
    assert f(100) == pytest.approx(1.0)
    assert f(10_000) == 1.0
    # the hundredth hit adds far less than the second
    assert f(2) - f(1) > 20 * (f(100) - f(99))


def test_total_is_the_article_blend():
    r = rec(1, accessed_ago=HALF_LIFE, hits=1, importance=0.8)
    s = HybridPolicy(ARTICLE_PARAMS).score(r, NOW)
    expected = 0.4 * 0.5 + 0.2 * (math.log(2) / math.log(101)) + 0.4 * 0.8
    assert s.total == pytest.approx(expected, abs=1e-9)
    assert (s.importance, s.recency) == (0.8, pytest.approx(0.5))


def test_a_record_touched_after_now_counts_as_just_touched():
    s = HybridPolicy(ARTICLE_PARAMS).score(rec(1, accessed_ago=-timedelta(days=3)), NOW)
    assert s.recency == 1.0


def test_fresh_records_start_one_half_life_old_under_the_article():
    r = fresh("n", NOW, ARTICLE_PARAMS, importance=0.1, tokens=5)
    assert r.created_at == NOW
    assert r.last_accessed_at == fresh_last_accessed(NOW, ARTICLE_PARAMS) == NOW - HALF_LIFE
    assert HybridPolicy(ARTICLE_PARAMS).score(r, NOW).recency == pytest.approx(0.5)


@pytest.mark.parametrize(("start", "recency"), [(0.0, 1.0), (0.5, 0.5**0.5), (2.0, 0.25)])
def test_fresh_start_is_a_setting_in_half_lives(start, recency):
    params = PolicyParams(half_life=HALF_LIFE, fresh_start=start)
    r = fresh("n", NOW, params, importance=0.1)
    assert r.last_accessed_at == NOW - HALF_LIFE * start
    assert HybridPolicy(params).score(r, NOW).recency == pytest.approx(recency)


# --- past-due decay -------------------------------------------------------------


def test_a_commitment_past_its_due_date_loses_half_its_importance_each_half_life():
    params = PolicyParams(past_due_half_life=timedelta(days=14))
    policy = HybridPolicy(params)
    importance = lambda due: policy.score(rec(1, importance=0.8, due=due), NOW).importance  # noqa: E731
    assert importance(None) == 0.8  # not a commitment
    assert importance(NOW + timedelta(days=3)) == 0.8  # not due yet
    assert importance(NOW) == 0.8
    assert importance(NOW - timedelta(days=14)) == pytest.approx(0.4)
    assert importance(NOW - timedelta(days=28)) == pytest.approx(0.2)


def test_without_a_past_due_half_life_importance_never_decays():
    policy = HybridPolicy(PolicyParams(past_due_half_life=timedelta(0)))
    r = rec(1, importance=0.75, due=NOW - timedelta(days=300))
    assert policy.score(r, NOW).importance == 0.75
    assert HybridPolicy(ARTICLE_PARAMS).score(r, NOW).importance == 0.75


def test_a_stale_commitment_goes_before_a_fresh_note_of_lower_importance():
    policy = HybridPolicy(PolicyParams(max_records=1, past_due_half_life=timedelta(days=14)))
    stale = rec("delivered-order", importance=0.75, due=NOW - timedelta(days=60))
    note = rec("note", importance=0.2)
    assert policy.victim_ids([stale, note], NOW) == ["delivered-order"]
    assert HybridPolicy(preset(ARTICLE, PolicyParams(max_records=1))).victim_ids(
        [stale, note], NOW
    ) == ["note"]


# --- supersession ----------------------------------------------------------------


def address(id, said_days_ago, **kw):
    return rec(id, slot="delivery-address", said=NOW - timedelta(days=said_days_ago), **kw)


def test_a_newer_statement_of_a_slot_retires_the_older_ones_even_under_the_caps():
    policy = HybridPolicy(PolicyParams(supersede=True))
    # the old address was read often and scores higher: it goes all the same
    records = [address("old", 90, hits=40), address("older", 200), address("new", 2), rec("x")]
    victims = policy.victims(records, NOW)
    assert [(v.id, v.reason, v.superseded_by) for v in victims] == [
        ("old", SUPERSEDED, "new"),
        ("older", SUPERSEDED, "new"),
    ]


def test_the_time_said_decides_not_the_time_stored():
    # an older session ingested late: its address is still the older one
    late = Record("late", NOW, NOW, stated_at=NOW - timedelta(days=30), slot="delivery-address")
    current = address("current", 5, age=timedelta(days=5))
    victims = HybridPolicy(PolicyParams(supersede=True)).victims([late, current], NOW)
    assert [(v.id, v.superseded_by) for v in victims] == [("late", "current")]


def test_supersession_keeps_pins_and_other_slots_and_needs_the_setting():
    records = [
        address("pinned-old", 90, pinned=True),
        address("new", 2),
        rec("phone", slot="phone", said=NOW - timedelta(days=100)),
    ]
    assert HybridPolicy(PolicyParams(supersede=True)).victims(records, NOW) == []
    old = [address("old", 90), address("new", 2)]
    assert HybridPolicy(PolicyParams(supersede=False)).victims(old, NOW) == []
    assert HybridPolicy(ARTICLE_PARAMS).victims(old, NOW) == []


def test_superseded_records_do_not_count_against_the_caps():
    policy = HybridPolicy(PolicyParams(supersede=True, max_records=2))
    records = [address("old", 90), address("new", 2), rec("a", importance=0.1), rec("b")]
    assert [(v.id, v.reason) for v in policy.victims(records, NOW)] == [
        ("old", SUPERSEDED),
        ("a", RECORD_CAP),
    ]


def test_an_expired_statement_supersedes_nothing():
    records = [address("old", 90), address("new", 2, age=timedelta(days=400))]
    victims = HybridPolicy(PolicyParams(supersede=True)).victims(records, NOW)
    assert [(v.id, v.reason) for v in victims] == [("new", EXPIRED)]


# --- presets -------------------------------------------------------------------


def test_the_article_preset_is_the_articles_exact_policy():
    p = preset(ARTICLE)
    assert (p.half_life, p.w_recency, p.w_frequency, p.w_importance) == (
        timedelta(days=30),
        0.4,
        0.2,
        0.4,
    )
    assert (p.saturation_hits, p.fresh_start) == (100, 1.0)
    assert p.past_due_half_life == timedelta(0)  # importance is set once, at write time
    assert p.supersede is False
    assert (p.ttl, p.max_records, p.max_tokens) == (timedelta(days=365), 500, 40_000)


def test_the_default_preset_is_what_new_policies_get():
    assert preset(DEFAULT) == PolicyParams()
    assert preset_of(PolicyParams()) == DEFAULT
    assert preset(DEFAULT) != preset(ARTICLE)


def test_a_preset_keeps_the_caps_and_ttl_it_is_applied_to():
    base = PolicyParams(max_records=50, max_tokens=900, ttl=timedelta(days=20))
    p = preset(ARTICLE, base)
    assert (p.max_records, p.max_tokens, p.ttl) == (50, 900, timedelta(days=20))
    assert preset_of(p) == ARTICLE
    assert preset_of(PolicyParams(w_recency=0.6, w_frequency=0.0, w_importance=0.4)) is None


def test_every_preset_names_every_preset_setting():
    for values in PRESETS.values():
        assert set(values) == set(PRESET_FIELDS)


def test_an_unknown_preset_is_refused_with_the_choices():
    with pytest.raises(PolicyError, match="no preset 'lru'; choose one of default, article"):
        preset("lru")


# --- expiry --------------------------------------------------------------------


def test_expired_after_ttl_but_never_when_pinned():
    policy = HybridPolicy(PolicyParams(ttl=timedelta(days=365)))
    old = rec(1, age=timedelta(days=366))
    assert policy.expired(old, NOW)
    assert not policy.expired(rec(2, age=timedelta(days=364)), NOW)
    assert not policy.expired(rec(3, age=timedelta(days=366), pinned=True), NOW)
    # exactly at the TTL is not yet expired ("isBefore")
    assert not policy.expired(rec(4, age=timedelta(days=365)), NOW)


def test_expired_records_are_victims_even_under_the_caps():
    policy = HybridPolicy(ARTICLE_PARAMS)
    victims = policy.victims([rec(1, age=timedelta(days=400)), rec(2)], NOW)
    assert [(v.id, v.reason) for v in victims] == [(1, EXPIRED)]


def test_ttl_on_a_pinned_record_keeps_it():
    policy = HybridPolicy(PolicyParams(max_records=1))
    pinned_old = rec(1, age=timedelta(days=900), pinned=True)
    victims = policy.victims([pinned_old, rec(2)], NOW)
    assert [v.id for v in victims] == [2]


# --- caps ----------------------------------------------------------------------


def test_lowest_scores_go_first_until_the_record_cap_holds():
    policy = HybridPolicy(PolicyParams(max_records=2))
    records = [
        rec(1, importance=0.9),
        rec(2, importance=0.1),
        rec(3, importance=0.5),
        rec(4, importance=0.2),
    ]
    victims = policy.victims(records, NOW)
    assert [(v.id, v.reason) for v in victims] == [(2, RECORD_CAP), (4, RECORD_CAP)]


def test_token_cap_binding_before_record_cap():
    policy = HybridPolicy(PolicyParams(max_records=100, max_tokens=100))
    records = [
        rec(1, importance=0.9, tokens=60),
        rec(2, importance=0.1, tokens=30),
        rec(3, importance=0.2, tokens=30),
    ]
    victims = policy.victims(records, NOW)
    # 120 tokens: dropping the lowest (30) gets to 90 <= 100
    assert [(v.id, v.reason) for v in victims] == [(2, TOKEN_CAP)]


def test_record_zero_tokens_never_help_the_token_cap_but_count_for_records():
    policy = HybridPolicy(PolicyParams(max_records=100, max_tokens=50))
    records = [
        rec(1, importance=0.0, tokens=0),
        rec(2, importance=0.1, tokens=60),
        rec(3, importance=0.9, tokens=10),
    ]
    victims = policy.victims(records, NOW)
    # The zero-token record scores lowest and is taken first (policy is score order),
    # then record 2, after which 10 tokens remain.
    assert [v.id for v in victims] == [1, 2]
    assert sum(r.tokens for r in records if r.id not in {v.id for v in victims}) <= 50


def test_reason_is_record_cap_while_count_is_over_even_if_tokens_are_too():
    policy = HybridPolicy(PolicyParams(max_records=1, max_tokens=10))
    victims = policy.victims([rec(1, importance=0.1, tokens=20), rec(2, tokens=5)], NOW)
    assert [(v.id, v.reason) for v in victims] == [(1, RECORD_CAP)]


def test_pinned_never_chosen_even_when_caps_cannot_be_met():
    policy = HybridPolicy(PolicyParams(max_records=1, max_tokens=1))
    records = [rec(i, pinned=True, importance=0.0, tokens=50) for i in range(3)]
    assert policy.victims(records, NOW) == []
    mixed = records + [rec(9, importance=1.0, tokens=1)]
    assert [v.id for v in policy.victims(mixed, NOW)] == [9]


def test_ties_are_broken_deterministically_oldest_access_first_then_id():
    policy = HybridPolicy(PolicyParams(max_records=1))
    same = dict(age=timedelta(days=5), accessed_ago=timedelta(days=2), importance=0.3)
    records = [rec(3, **same), rec(1, **same), rec(2, **same)]
    assert [v.id for v in policy.victims(records, NOW)] == [1, 2]
    assert [v.id for v in policy.victims(list(reversed(records)), NOW)] == [1, 2]


def test_empty_and_under_cap_give_no_victims():
    policy = HybridPolicy(ARTICLE_PARAMS)
    assert policy.victims([], NOW) == []
    assert policy.victims([rec(i) for i in range(500)], NOW) == []


# --- validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_records": 0}, "max records must be at least 1"),
        ({"max_tokens": -5}, "max tokens must be at least 1"),
        ({"half_life": timedelta(0)}, "half-life must be positive"),
        ({"ttl": timedelta(days=-1)}, "TTL must be positive"),
        ({"w_recency": 0.7}, "weights must sum to 1"),
        ({"w_recency": -0.2, "w_frequency": 0.8}, "weights must be finite and at least 0"),
        ({"w_recency": float("nan")}, "weights must be finite"),
        ({"ttl": timedelta(days=36_501)}, r"TTL must be at most 36500 days \(a century\)"),
        ({"half_life": timedelta(days=40_000)}, "half-life must be at most 876000 hours"),
        ({"max_records": 10**12}, "max records must be at most 1000000000"),
        ({"fresh_start": -1.0}, "fresh start must be from 0 to 10 half-lives"),
        ({"fresh_start": float("inf")}, "fresh start must be from 0 to 10 half-lives"),
        ({"past_due_half_life": timedelta(hours=-1)}, "past-due half-life must be 0"),
        ({"past_due_half_life": timedelta(days=40_000)}, "past-due half-life must be at most"),
    ],
)
def test_bad_params_are_refused_with_a_message(changes, message):
    with pytest.raises(PolicyError, match=message):
        PolicyParams(**changes)


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"half_life_hours": 1e-10}, "half_life_hours", "half-life must be at least a second"),
        ({"ttl_days": 1e-9}, "ttl_days", "TTL must be at least a second"),
        ({"past_due_half_life_hours": 1e-10}, "past_due_half_life_hours", "or at least a second"),
    ],
)
def test_a_duration_too_short_to_keep_is_refused_before_it_is_saved(values, field, message):
    """Kept to the microsecond, 1e-10 hours would be saved, then round to nothing: every
    enforcement would fail (half-life), or a past-due decay would never happen."""
    from django.core.exceptions import ValidationError

    from records.models import Policy

    policy = Policy(app_name="shop", **values)
    with pytest.raises(ValidationError) as refused:
        policy.clean()
    assert any(message.lower() in m.lower() for m in refused.value.message_dict[field])
    assert Policy(app_name="shop", half_life_hours=1 / 3600, ttl_days=1 / 86400).params()


# --- the article's worked example ------------------------------------------------


def pharmacy_customer():
    """498 records of ~70 tokens: the allergy (pinned), four long-unread notes, the rest busy."""
    month = timedelta(days=30)
    records = [
        rec(
            "allergy",
            age=timedelta(days=300),
            accessed_ago=7 * month,
            hits=2,
            importance=0.9,
            pinned=True,
            tokens=70,
        ),
        # "a note that the user once asked about opening hours, last read eight months ago"
        rec(
            "opening-hours",
            age=timedelta(days=320),
            accessed_ago=8 * month,
            hits=1,
            importance=0.1,
            tokens=70,
        ),
    ]
    for i in range(3):
        records.append(
            rec(
                f"old-note-{i}",
                age=timedelta(days=310),
                accessed_ago=(6 + i) * month,
                hits=0,
                importance=0.1,
                tokens=70,
            )
        )
    for i in range(493):
        records.append(
            rec(
                f"note-{i}",
                age=timedelta(days=5 + i % 300),
                accessed_ago=timedelta(days=i % 20),
                hits=1 + i % 30,
                importance=0.4 + (i % 5) / 10,
                tokens=70,
            )
        )
    return records


def new_records(now, *, naive):
    made = [("address", 0.8), ("courier-complaint", 0.5)] + [
        (f"pleasantry-{i}", 0.1) for i in range(4)
    ]
    params = ARTICLE_PARAMS
    out = []
    for id, importance in made:
        r = fresh(id, now, params, importance=importance, tokens=20)
        if naive:  # creation counted as access: the flaw the article fixes
            r = Record(r.id, r.created_at, now, r.hits, r.importance, r.pinned, r.tokens)
        out.append(r)
    return out


def test_worked_example_scores():
    policy = HybridPolicy(ARTICLE_PARAMS)
    existing = {r.id: r for r in pharmacy_customer()}
    assert len(existing) == 498
    assert sum(r.tokens for r in existing.values()) == 34_860  # "about 34,900 tokens"
    assert policy.score(existing["opening-hours"], NOW).total == pytest.approx(0.07, abs=0.005)
    naive = new_records(NOW, naive=True)
    assert policy.score(naive[2], NOW).total == pytest.approx(0.44)
    fresh_ones = new_records(NOW, naive=False)
    assert policy.score(fresh_ones[2], NOW).total == pytest.approx(0.24)


def test_worked_example_evicts_four_old_notes_and_keeps_the_allergy():
    policy = HybridPolicy(ARTICLE_PARAMS)
    everything = pharmacy_customer() + new_records(NOW, naive=False)
    assert len(everything) == 504
    victims = policy.victims(everything, NOW)
    assert len(victims) == 4
    assert {v.id for v in victims} == {"opening-hours", "old-note-0", "old-note-1", "old-note-2"}
    assert all(v.reason == RECORD_CAP for v in victims)
    assert "allergy" not in {v.id for v in victims}
    # the pleasantries survive until they age
    assert not any(str(v.id).startswith("pleasantry") for v in victims)


def test_worked_example_with_naive_recency_would_also_keep_pleasantries_at_044():
    policy = HybridPolicy(ARTICLE_PARAMS)
    victims = policy.victims(pharmacy_customer() + new_records(NOW, naive=True), NOW)
    assert not any(str(v.id).startswith("pleasantry") for v in victims)


def test_worked_example_pinned_allergy_is_never_a_candidate_even_at_the_bottom():
    policy = HybridPolicy(preset(ARTICLE, PolicyParams(max_records=10)))
    victims = policy.victims(pharmacy_customer() + new_records(NOW, naive=False), NOW)
    assert len(victims) == 494  # everything but the allergy and nine best
    assert "allergy" not in {v.id for v in victims}


def test_live_is_pinned_or_created_no_earlier_than_the_ttl_cutoff():
    p = PolicyParams(ttl=timedelta(days=10))
    at_cutoff = Record(1, NOW - timedelta(days=10), NOW)
    older = Record(2, NOW - timedelta(days=10, microseconds=1), NOW)
    pinned = Record(3, NOW - timedelta(days=400), NOW, pinned=True)
    assert [live(r, NOW, p) for r in (at_cutoff, older, pinned)] == [True, False, True]
    assert [HybridPolicy(p).expired(r, NOW) for r in (at_cutoff, older, pinned)] == [
        False,
        True,
        False,
    ]


def test_a_session_is_idle_once_updated_before_the_cutoff_or_stamped_beyond_any_accepted():
    cutoff = idle_cutoff(NOW, 7)
    assert cutoff == (NOW - timedelta(days=7)).timestamp()
    assert not session_idle(cutoff, NOW, 7)
    assert session_idle(cutoff - 0.001, NOW, 7)
    assert not session_idle(NOW.timestamp(), NOW, 7)
    assert session_idle((NOW + timedelta(days=30)).timestamp(), NOW, 7)


def test_problems_are_named_by_field_and_ignore_values_of_another_type():
    found = problems(
        {
            "ttl_days": 0,
            "max_records": "many",  # the caller's type check speaks for this one
            "session_idle_days": 0,
            "w_recency": 0.9,
            "w_frequency": 0.0,
            "w_importance": 0.5,
        }
    )
    assert found == {
        "ttl_days": ["TTL must be positive"],
        "session_idle_days": ["session idle threshold must be at least 1 day"],
        WEIGHTS: ["weights must sum to 1 (they sum to 1.4000)"],
    }
    with pytest.raises(PolicyError, match="session idle threshold must be at least 1 day"):
        PolicyParams(session_idle_days=0)


def test_scores_round_as_python_away_from_a_half_and_as_postgresql_at_one():
    """round_score: round(x, 9) wherever the two roundings agree, and at a half the
    decimal rounding PostgreSQL's numeric does (15 significant digits, half away from
    zero); tests/records/test_victims.py checks it against PostgreSQL itself."""
    import random
    from decimal import ROUND_HALF_UP, Decimal

    from records.policy import round_score

    rng = random.Random(3)
    values = [rng.random() for _ in range(20000)] + [k / 1e9 for k in range(0, 20000)]
    halves = [(k + 0.5) / 1e9 for k in rng.sample(range(10**9), 2000)]
    values += halves + [math.nextafter(h, 2) for h in halves] + [0.0, 1.0]
    for x in values:
        if abs(x * 1e9 % 1.0 - 0.5) < 1e-5:
            decimal = Decimal(f"{x:.15g}").quantize(Decimal("1e-9"), rounding=ROUND_HALF_UP)
            assert round_score(x) == float(decimal), x
        else:
            assert round_score(x) == round(x, 9), x
    assert round_score(0.5000000025) == 0.500000003 != round(0.5000000025, 9)
