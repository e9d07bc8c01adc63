"""The pure replay, on a fixed clock."""

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from backtest.replay import (
    RecordHistory,
    Schedule,
    Search,
    _initial_state,
    _state_at,
    explained,
    prepare,
    recorded,
    replay_histories,
    replay_prepared,
    replay_user,
)
from backtest.service import _spread
from records import policy as pure

T0 = datetime(2026, 5, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
END = T0 + timedelta(days=2)
PARAMS = pure.PolicyParams(max_records=2)
SCHEDULE = Schedule.fixed(PARAMS)


def written(i, at, *, last=None, hits=0, removed_at=None, reason=""):
    return RecordHistory(
        id=i,
        created_at=at,
        importance=0.1 * i,
        pinned=False,
        tokens=10,
        hits=hits,
        last_accessed_at=last or pure.fresh_last_accessed(at, PARAMS),
        known_at=removed_at or END,
        removed_at=removed_at,
        removed_reason=reason,
    )


def evicted_by_cap(i, written_at, evicted_at, hashes, *, importance=0.9):
    """A record written untouched and evicted by the record cap, with its term hashes."""
    return RecordHistory(
        id=i,
        created_at=written_at,
        importance=importance,
        pinned=False,
        tokens=10,
        hits=0,
        last_accessed_at=written_at,
        known_at=evicted_at,
        removed_at=evicted_at,
        removed_reason=pure.RECORD_CAP,
        term_hashes=frozenset(hashes),
    )


def test_a_record_no_logged_touch_explains_is_replayed_as_it_stands():
    fresh = written(1, T0)
    touched = written(2, T0, last=T0 + HOUR, hits=1)
    loaded = written(3, T0, last=T0 - timedelta(days=40), hits=7)  # straight into the database
    search = Search(T0 + HOUR, (2,), frozenset())
    marks = {r.id: r.as_it_stands for r in explained([fresh, touched, loaded], [search], SCHEDULE)}
    assert marks == {1: False, 2: False, 3: True}


def test_writes_through_the_services_are_enforced_and_loaded_records_are_not():
    records = [written(i, T0 + i * HOUR) for i in range(1, 5)]
    ran = replay_user(explained(records, [], SCHEDULE), [], SCHEDULE, T0, END)
    assert sorted(ran.evicted) == [1, 2]  # the two least important, as the cap is met
    assert ran.days[0].records == 2 and ran.days[0].evictions == 2

    loaded = [written(i, T0 + i * HOUR, last=T0 - timedelta(days=9), hits=3) for i in range(1, 5)]
    ran = replay_user(explained(loaded, [], SCHEDULE), [], SCHEDULE, T0, END)
    assert ran.evicted == {} and ran.days[-1].records == 4  # never enforced in reality


def test_the_state_at_the_start_takes_later_touches_back_off():
    # Written before the window, touched once before it and twice inside it.
    before, inside = T0 - 3 * HOUR, [T0 + HOUR, T0 + 2 * HOUR]
    record = written(1, T0 - 5 * HOUR, last=inside[-1], hits=3)
    state = _state_at(record, T0, [before, *inside], SCHEDULE)
    assert (state.hits, state.last_accessed_at) == (1, before)


def test_regret_lost_and_saved_are_counted_per_search():
    terms = frozenset({"h1", "h2"})
    gone = evicted_by_cap(9, T0 + HOUR, T0 + 5 * HOUR, terms)
    found = Search(T0 + 6 * HOUR, (), terms)
    ran = replay_user([gone], [found], Schedule.fixed(pure.PolicyParams(max_records=5)), T0, END)
    assert (ran.days[0].regret, ran.days[0].saved) == (0, 1)  # kept: the search found it
    tight = Schedule.fixed(pure.PolicyParams(max_records=1, ttl=timedelta(hours=2)))
    ran = replay_user([gone], [found], tight, T0, END)
    assert (ran.days[0].regret, ran.days[0].saved, ran.days[0].lost) == (1, 0, 0)


def _history():
    """Records written before and in the window, touched before and inside it."""
    records = [written(i, T0 - (20 - i) * HOUR) for i in range(1, 8)]
    records += [written(i, T0 + (i - 7) * HOUR) for i in range(8, 12)]
    touches = [(-10, (1, 2)), (-1, (2,)), (3, (3, 4)), (9, (2,))]
    searches = [Search(T0 + h * HOUR, ids, frozenset()) for h, ids in touches]
    touched = {}
    for s in searches:  # what the searches did to the stored state (hits, last access)
        for i in s.record_ids:
            hits, last = touched.get(i, (0, None))
            touched[i] = (hits + 1, s.at)
    records = [
        replace(r, hits=touched[r.id][0], last_accessed_at=touched[r.id][1])
        if r.id in touched
        else r
        for r in records
    ]
    return records, searches


def test_the_prepared_start_state_is_the_state_at_the_start_under_any_schedule():
    records, searches = _history()
    prep = prepare(records, searches, T0, END)
    assert len(prep.initial) == 7
    for params in (PARAMS, pure.PolicyParams(max_records=2, fresh_start=1.0)):
        schedule = Schedule.fixed(params)
        for entry in prep.initial:
            r = entry[1]
            touches = [s.at for s in searches if r.id in s.record_ids]
            assert _initial_state(entry, schedule) == _state_at(r, T0, touches, schedule)


def test_one_prepared_history_replays_under_many_schedules_as_each_alone():
    records, searches = _history()
    prep = prepare(records, searches, T0, END)
    schedules = [
        Schedule.fixed(pure.PolicyParams(max_records=n, fresh_start=f))
        for n in (2, 4)
        for f in (0.0, 1.0)
    ]
    results = [replay_prepared(prep, s) for s in schedules + schedules]
    alone = [replay_user(records, searches, s, T0, END) for s in schedules]
    assert results == alone + alone
    assert len({tuple(sorted(r.evicted)) for r in alone}) > 1  # the schedules differ


def test_a_superseded_record_a_search_returned_is_not_a_loss():
    """A newer statement of the same slot replaced it: the search has its answer."""

    def address(i, at):
        return replace(written(i, at), slot="address", importance=0.5)

    old, new = address(1, T0 + HOUR), address(2, T0 + 3 * HOUR)
    returned_old = Search(T0 + 4 * HOUR, (1,), frozenset())
    roomy = pure.PolicyParams(max_records=5)
    ran_without = Schedule.fixed(replace(roomy, supersede=False))  # the policy that ran
    history = explained([old, new], [returned_old], ran_without)
    superseding = Schedule.fixed(replace(roomy, supersede=True))
    ran = replay_user(history, [returned_old], superseding, T0, END)
    assert ran.evicted == {1: T0 + 3 * HOUR}
    assert (ran.days[0].lost, ran.days[0].regret) == (0, 0)
    # Evicted by a cap instead, the same search lost it.
    capped = Schedule.fixed(replace(roomy, max_records=1, supersede=False))
    ran = replay_user(history, [returned_old], capped, T0, END)
    # Lost, but no regret: regret is the term match, which this search (no terms) has not.
    assert 1 in ran.evicted and (ran.days[0].lost, ran.days[0].regret) == (1, 0)


# Two records, one slot at a cap of one: keeping the important one evicts the newer,
# keeping the newer one evicts the important one.
BY_RECENCY = pure.PolicyParams(max_records=1, w_recency=1.0, w_frequency=0.0, w_importance=0.0)
BY_IMPORTANCE = replace(BY_RECENCY, w_recency=0.0, w_importance=1.0)


def _swapped_history():
    """The policy that ran (by recency) evicted A, which later searches match, and kept
    B, which later searches returned; by importance, the replay keeps A and evicts B."""
    a = evicted_by_cap(1, T0 + HOUR, T0 + 2 * HOUR, {"a1", "a2"})
    b_hashes = frozenset({"b1", "b2"})
    searches = [
        Search(T0 + 3 * HOUR, (), frozenset({"a1", "a2"})),  # matches A, which was gone
        Search(T0 + 4 * HOUR, (2,), b_hashes),  # returned B and matches it
        Search(T0 + 5 * HOUR, (2,), frozenset({"b1", "x"})),  # returned B on one term
        Search(T0 + 6 * HOUR, (), frozenset({"a1", "y"})),  # one term of A: no match
    ]
    b = RecordHistory(
        id=2,
        created_at=T0 + 2 * HOUR,
        importance=0.1,
        pinned=False,
        tokens=10,
        hits=2,
        last_accessed_at=T0 + 5 * HOUR,
        known_at=END,
        term_hashes=b_hashes,
    )
    ran = Schedule.fixed(BY_RECENCY)
    return explained([a, b], searches, ran), searches, ran


def test_the_replay_of_the_policy_that_ran_evicts_what_it_evicted():
    history, searches, ran = _swapped_history()
    assert replay_user(history, searches, ran, T0, END).evicted == {1: T0 + 2 * HOUR}


def test_regret_charges_the_policy_that_ran_and_a_candidate_by_the_same_rule():
    """A search matching a record a policy evicted is its regret, whichever policy; a
    search that only returned the record (one shared term) is no regret for either,
    since what the policy that ran evicted was never returned to show the same."""
    history, searches, ran = _swapped_history()
    current = replay_user(history, searches, ran, T0, END)
    candidate = replay_user(history, searches, Schedule.fixed(BY_IMPORTANCE), T0, END)
    assert candidate.evicted == {2: T0 + 2 * HOUR}
    cur, cand = current.days[0], candidate.days[0]
    # The first search regrets A for the policy that ran; the second regrets B for the
    # candidate: one each, though only the candidate lost what a search returned (two).
    assert (cur.regret, cur.lost, cur.saved) == (1, 0, 0)
    assert (cand.regret, cand.lost, cand.saved) == (1, 2, 1)
    # Search by search: each regrets one the other does not.
    assert current.regretted == [True, False, False, False]
    assert candidate.regretted == [False, True, False, False]
    prep = prepare(history, searches, T0, END)
    paired = replay_prepared(prep, Schedule.fixed(BY_IMPORTANCE), current.regretted)
    assert (paired.days[0].regret_fewer, paired.days[0].regret_more) == (1, 1)
    itself = replay_prepared(prep, ran, current.regretted)
    assert (itself.days[0].regret_fewer, itself.days[0].regret_more) == (0, 0)


def test_a_live_records_term_hashes_make_its_eviction_regrettable():
    """Never evicted in reality, B is regretted by a candidate that evicts it only
    through the term hashes read for the records still held."""
    history, searches, _ = _swapped_history()
    without = [replace(r, term_hashes=frozenset()) if r.id == 2 else r for r in history]
    candidate = Schedule.fixed(BY_IMPORTANCE)
    assert replay_user(history, searches, candidate, T0, END).days[0].regret == 1
    assert replay_user(without, searches, candidate, T0, END).days[0].regret == 0


def test_a_candidate_s_information_setting_rewrites_the_importances_it_decided():
    # Record 1's importance is its information score (written with the setting on);
    # record 2's came from a rule; record 3 (the third write) brings the cap of 2.
    informed = replace(written(1, T0), importance=0.4, information=0.4, informed=True)
    ruled = replace(written(2, T0 + HOUR), importance=0.25)
    third = replace(written(3, T0 + 2 * HOUR), importance=0.9)
    records = explained([informed, ruled, third], [], SCHEDULE)
    on = replay_user(records, [], SCHEDULE, T0, END)
    assert sorted(on.evicted) == [2]  # 0.25 below the informed 0.4
    off = Schedule.fixed(replace(PARAMS, information_importance=False))
    assert sorted(replay_user(records, [], off, T0, END).evicted) == [1]  # 0.2, the default


def test_the_setting_that_wrote_an_importance_replays_it_as_stored():
    # Written with the setting off: the unmatched default, whatever the score would be;
    # before the window too (its state at the start).
    unmatched = replace(written(1, T0 - HOUR), importance=0.2, information=0.45, informed=False)
    off = replace(PARAMS, information_importance=False)
    assert _initial_state((None, unmatched, 0, None), Schedule.fixed(off)).importance == 0.2
    assert _initial_state((None, unmatched, 0, None), SCHEDULE).importance == 0.45
    assert _state_at(unmatched, T0, (), Schedule.fixed(off)).importance == 0.2
    without_score = replace(unmatched, information=None)  # kept before the score was
    assert _state_at(without_score, T0, (), SCHEDULE).importance == 0.2


def test_a_search_at_the_windows_first_moment_is_replayed_not_also_in_the_start_state():
    """The window replays searches from ``start`` on, so the state at the start holds
    only the touches before it: one logged hit is one hit, not two."""
    start = T0 + timedelta(days=1)
    r = written(1, T0, last=start, hits=1)
    prep = prepare([r], [Search(start, (1,), frozenset())], start, END)
    state = _initial_state(prep.initial[0], SCHEDULE)
    replayed = sum(len(s.record_ids) for step in prep.steps for s, _, _ in step[5])
    assert (state.hits, replayed) == (0, 1)
    assert state.last_accessed_at == pure.fresh_last_accessed(T0, PARAMS)
    # the same for a record the replay writes as it stands at that moment
    assert _state_at(r, start, [start], SCHEDULE).hits == 0


def test_the_history_counts_the_policy_that_ran_as_its_exact_replay_does():
    # Cap 2: the third write evicts record 1 (least important); a search at that very
    # moment matches it, one later too; records are deleted by hand on both days.
    first = evicted_by_cap(1, T0 + HOUR, T0 + 3 * HOUR, {"a", "b"}, importance=0.1)
    records = [
        first,
        written(2, T0 + 2 * HOUR, removed_at=T0 + 4 * HOUR, reason="manual"),
        written(3, T0 + 3 * HOUR),
        written(4, T0 + 5 * HOUR, removed_at=T0 + 30 * HOUR, reason="manual"),
    ]
    searches = [
        Search(T0 + 3 * HOUR, (), frozenset({"a", "b"})),
        Search(T0 + 6 * HOUR, (3,), frozenset({"a", "b", "c"})),
    ]
    prep = prepare(explained(records, searches, SCHEDULE), searches, T0, END)
    ran = replay_prepared(prep, SCHEDULE)
    assert ran.evicted == {1: T0 + 3 * HOUR}  # exact

    counted = recorded(prep)

    assert counted.days == ran.days and counted.regretted == ran.regretted == [True, True]
    assert counted.evicted == ran.evicted
    assert [(d.evictions, d.records, d.tokens) for d in counted.days] == [(1, 2, 20), (0, 1, 10)]


@pytest.mark.parametrize(
    ("users", "count", "checked"), [(3, 500, 3), (501, 500, 500), (10_001, 500, 500), (5, 2, 2)]
)
def test_the_exactness_check_takes_its_count_of_users_spread_over_all(users, count, checked):
    ids = [f"u{i:05d}" for i in range(users)]
    sample = _spread(ids, count)
    assert len(sample) == checked and ids[0] in sample
    assert max(ids.index(u) for u in sample) >= users - users // checked - 1  # to the end


def _real_history(rng: random.Random, schedule: Schedule, end: datetime):
    """Records and searches of one user whose evictions are what ``schedule`` evicts: the
    replay itself playing the real system (caps, token caps, TTL, pins, slots, manual
    removals, searches returning only what is held)."""
    vocab = [f"h{i}" for i in range(8)]
    hours = int((end - T0) / HOUR)

    def moment():
        return T0 + rng.randrange(hours) * HOUR + rng.choice([0, 0, 30]) * timedelta(minutes=1)

    drafts = []
    for i in range(1, rng.randint(3, 25) + 1):
        at = moment()
        removed = at + rng.randint(1, 48) * HOUR if rng.random() < 0.1 else None
        drafts.append(
            RecordHistory(
                id=i,
                created_at=at,
                importance=round(rng.random(), 2),
                pinned=rng.random() < 0.05,
                tokens=rng.randint(5, 20),
                hits=0,
                last_accessed_at=pure.fresh_last_accessed(at, schedule.at(at)),
                known_at=end,
                slot=rng.choice(["", "", "", "addr", "name"]),
                term_hashes=frozenset(rng.sample(vocab, rng.randint(0, 3))),
                removed_at=removed if removed is not None and removed < end else None,
                removed_reason="manual" if removed is not None and removed < end else "",
            )
        )
    asked = sorted(
        (
            Search(
                moment(),
                tuple(rng.sample(range(1, len(drafts) + 1), rng.randint(0, 3))),
                frozenset(rng.sample(vocab, rng.randint(0, 3))),
            )  # fmt: skip
            for _ in range(rng.randint(0, 30))
        ),
        key=lambda s: s.at,
    )
    ran = replay_prepared(prepare(drafts, asked, T0 - 10 * HOUR, end), schedule)
    gone = {r.id: (r.removed_at, r.removed_reason) for r in drafts if r.removed_at}
    gone.update({i: (at, ran.reasons[i]) for i, at in ran.evicted.items()})
    by_id = {r.id: r for r in drafts}

    def held(i, at):
        return by_id[i].created_at <= at and (i not in gone or gone[i][0] > at)

    searches = [Search(s.at, tuple(i for i in s.record_ids if held(i, s.at)), s.term_hashes)
                for s in asked]  # fmt: skip
    records = []
    for r in drafts:
        known, reason = gone.get(r.id, (end, ""))
        touches = [s.at for s in searches if r.id in s.record_ids and s.at <= known]
        records.append(
            replace(
                r,
                hits=len(touches),
                last_accessed_at=max([r.last_accessed_at, *touches]),
                known_at=known,
                removed_at=None if r.id not in gone else known,
                removed_reason=reason,
            )
        )
    return records, searches


def test_on_random_histories_the_policy_that_ran_counted_is_its_exact_replay():
    exact = cases = 0
    for seed in range(300):
        rng = random.Random(seed)
        params = pure.PolicyParams(
            max_records=rng.randint(2, 6),
            max_tokens=rng.choice([40_000, rng.randint(30, 80)]),
            ttl=timedelta(hours=rng.choice([24, 48, 24 * 365])),
            half_life=timedelta(hours=rng.choice([6, 24, 720])),
            fresh_start=rng.choice([0.0, 1.0]),
            supersede=rng.choice([True, False]),
        )
        schedule = Schedule.fixed(params)
        if rng.random() < 0.3:
            later = replace(params, max_records=rng.randint(2, 6))
            schedule = Schedule(((T0, params), (T0 + rng.randint(1, 71) * HOUR, later)))
        end = T0 + rng.choice([3, 5, 7]) * 24 * HOUR
        records, searches = _real_history(rng, schedule, end)
        for start in (T0 - 10 * HOUR, T0 + rng.randint(1, 30) * HOUR):
            cases += 1
            figures = replay_histories(records, searches, schedule, [], start, end,
                                       recorded_current=True)  # fmt: skip
            if figures.reproduced != figures.real or figures.extra:
                continue
            exact += 1
            prep = prepare(explained(records, searches, schedule), searches, start, end)
            ran, counted = replay_prepared(prep, schedule), recorded(prep)
            assert (counted.days, counted.regretted) == (ran.days, ran.regretted), seed
    assert exact > 0.95 * cases  # the histories are the replay's own: nearly all exact
