"""manage.py tune: the best three at no more storage; nothing applied."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from backtest import service, tune
from backtest.replay import ONE_DAY, DayStats
from records.models import Policy

from .history import APP, T0, make_history

pytestmark = pytest.mark.django_db


def test_the_simplex_grid_sums_to_one_and_covers_the_corners():
    points = tune.simplex(0.25)
    assert len(points) == 15
    assert all(abs(sum(p) - 1) < 1e-9 for p in points)
    assert {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)} <= set(points)


def test_tuning_finds_no_more_regret_at_no_more_storage_and_applies_nothing():
    end = make_history()
    before = list(Policy.objects.values())
    with CaptureQueriesContext(connection) as queries:
        result = tune.tune(APP, 5, end)
    assert not [
        q
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert list(Policy.objects.values()) == before
    assert result.exact and result.tried == len(tune.space(APP))
    assert 1 <= len(result.best) <= tune.BEST
    assert result.start < result.held_out_from < result.end
    chosen_current = result.current.regret - result.current_held_out.regret
    assert result.best[0].chosen_on.regret <= chosen_current
    for c in result.best:
        assert c.mean_tokens <= result.current_mean_tokens
        assert c.mean_records <= result.current_mean_records
        # The two parts make the whole window.
        both = DayStats()
        both.add(c.chosen_on)
        both.add(c.held_out)
        assert both == c.totals
    # Ranked on the first part alone.
    regrets = [(c.chosen_on.regret, c.chosen_on.evictions) for c in result.best]
    assert regrets == sorted(regrets)
    for c in result.best:
        # Paired with the policy that ran: the regret differs by the searches only one
        # of the two regrets, on the whole window and on the held-out part.
        t, h = c.totals, c.held_out
        assert t.regret - result.current.regret == t.regret_more - t.regret_fewer
        assert h.regret - result.current_held_out.regret == h.regret_more - h.regret_fewer
    same = result.current_held_out
    assert not result.beats_current(
        tune.Candidate("the same", Policy(), {}, result.current, 0.0, 0.0, held_out=same)
    )


def test_the_command_prints_the_best_three_with_their_change():
    end = make_history(users=("u1",))
    out = StringIO()
    call_command("tune", "--app", APP, "--days", "5", "--until", end.isoformat(), stdout=out)
    text = out.getvalue()
    assert "1. " in text and "regret" in text and "change:" in text
    assert "only the policy that ran" in text and ("better" in text)
    assert "held-out days from" in text and "held out: searches only it regrets" in text
    assert "Nothing was applied" in text


def test_the_command_refuses_an_unknown_app():
    make_history(users=("u1",))
    with pytest.raises(CommandError, match="shop"):
        call_command("tune", "--app", "nope", "--days", "5")


def test_the_sample_is_fixed_whatever_the_order_of_the_users():
    ids = [f"user-{i}" for i in range(50)]
    chosen = tune.sample(ids, 10)
    assert len(chosen) == 10 and set(chosen) <= set(ids)
    assert chosen == sorted(chosen) == tune.sample(list(reversed(ids)), 10)
    assert tune.sample(ids, 100) == sorted(ids)


def test_with_a_sample_the_finalists_are_the_samples_best_and_their_figures_are_full():
    end = make_history(users=("u1", "u2", "u3"))
    halved = tune.tune(APP, 5, end, sample_users=1, finalists=4)
    full = tune.tune(APP, 5, end)
    assert (halved.sampled, full.sampled) == (1, 0)
    assert halved.tried == full.tried == len(tune.space(APP))
    assert halved.current == full.current and halved.exact == full.exact
    assert 1 <= len(halved.best) <= tune.BEST
    # The finalists: the best four on the one sampled user, by the tuner's own rule.
    candidates = tune.space(APP)
    base = (Policy.objects.get(app_name=APP)).snapshot()
    first = service.replay(
        APP, halved.start, halved.end, end, [c for _, c in candidates],
        user_ids=tune.sample(["u1", "u2", "u3"], 1),
    )  # fmt: skip
    # The cut between the parts comes from the sample's policy that ran, as the
    # finalists do, and holds for the full replays too.
    split = tune.held_out_day(first.current)
    assert halved.held_out_from == halved.start + split * ONE_DAY
    ranked = tune._ranked(candidates, first, base, split, keep_all=True)
    finalists = {c.label for c in ranked[:4]}
    assert {c.label for c in halved.best} <= finalists
    # Every figure reported is the candidate's replay over every user.
    replayed = service.replay(APP, halved.start, halved.end, end, [c.policy for c in halved.best])
    for c, days in zip(halved.best, replayed.candidates, strict=True):
        assert c.totals == tune._total(days)
        assert (c.mean_records, c.mean_tokens) == tune._means(days)
    # And they are ranked over every user as the full search ranks them.
    full_rank = [c.label for c in tune._ranked(candidates, service.replay(
        APP, halved.start, halved.end, end, [c for _, c in candidates]), base, split)
        if c.label in finalists]  # fmt: skip
    assert [c.label for c in halved.best] == full_rank[: len(halved.best)]


def test_in_three_rounds_each_sample_ranks_what_the_last_let_through():
    users = ("u1", "u2", "u3")
    end = make_history(users=users)
    seen = []
    three = tune.tune(
        APP, 5, end, sample_users=1, finalists=4, second_sample_users=2,
        progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert three.samples == [[1, 4], [2, 3]] and three.sampled == 1
    assert three.rounds_text() == (
        "ranked on a sample of 1 users; the best 4 on a sample of 2; the best 3 on every user"
    )
    candidates = tune.space(APP)
    base = Policy.objects.get(app_name=APP).snapshot()

    def best_on(sample_size, among, keep, split=None):
        replayed = service.replay(
            APP, three.start, three.end, end, [c for _, c in among],
            user_ids=tune.sample(list(users), sample_size),
        )  # fmt: skip
        split = tune.held_out_day(replayed.current) if split is None else split
        ranked = tune._ranked(among, replayed, base, split, keep_all=True)
        kept = {c.label for c in ranked[:keep]}
        return [(label, p) for label, p in among if label in kept], split

    finalists, split = best_on(1, candidates, 4)
    last, _ = best_on(2, finalists, 3, split)
    assert {c.label for c in three.best} <= {label for label, _ in last}
    assert three.held_out_from == three.start + split * ONE_DAY
    # Progress runs over every round's users once: 1 + 2 + 3, never backwards.
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert {t for _, t in seen} == {6}


@pytest.mark.parametrize(
    ("users", "candidates", "plan"),
    [
        (10_000, 93, [(300, 8), (1200, 3)]),
        (1_000, 93, [(300, 8)]),  # the second sample would not be smaller than the users
        (300, 93, []),  # no sample: every candidate on every user
        (10_000, 8, [(1200, 3)]),  # too few candidates for the first round to narrow
        (10_000, 3, []),
    ],
)
def test_a_round_applies_only_when_its_sample_is_smaller_and_it_narrows(users, candidates, plan):
    assert tune._rounds(users, candidates, [(300, 8), (1200, 3)]) == plan
    assert tune._rounds(10_000, 93, [(300, 8), (300, 3)]) == [(300, 8)]  # not a larger sample


def _tuning(held_out: DayStats) -> tune.Tuning:
    """A tuning whose policy that ran had ``held_out`` on the held-out part."""
    return tune.Tuning(
        APP, T0, T0, held_out, 0.0, 0.0, 0, [], True, held_out_from=T0, current_held_out=held_out
    )


def _candidate(**held_out) -> tune.Candidate:
    """A candidate with these figures on the held-out part."""
    figures = DayStats(**held_out)
    return tune.Candidate("c", Policy(), {}, figures, 0.0, 0.0, held_out=figures)


def test_a_candidate_beats_the_policy_that_ran_only_by_more_than_chance():
    """A margin of a few searches among many each regrets alone is luck; the tuner
    takes the lowest of ~90 figures, so it would pick one such every time."""
    tuning = _tuning(DayStats(regret=40, evictions=10))
    # 23 searches only the policy that ran regrets, 16 only the candidate (z = 1.1).
    assert not tuning.beats_current(_candidate(regret=33, regret_fewer=23, regret_more=16))
    # 30 against 10 (z = 3.2).
    assert tuning.beats_current(_candidate(regret=20, regret_fewer=30, regret_more=10))
    # 3 against none: 3 < 2 * sqrt(3); 4 against none: 4 >= 2 * sqrt(4).
    assert not tuning.beats_current(_candidate(regret=37, regret_fewer=3))
    assert tuning.beats_current(_candidate(regret=36, regret_fewer=4))
    assert not tuning.beats_current(_candidate(regret=60, regret_more=20))


def test_with_the_same_searches_regretted_fewer_evictions_beat_the_policy_that_ran():
    tuning = _tuning(DayStats(regret=40, evictions=10))
    assert tuning.beats_current(_candidate(regret=40, evictions=9))
    assert not tuning.beats_current(_candidate(regret=40, evictions=10))


def test_only_the_held_out_part_says_better():
    """The first part chose the candidate as the lowest of ~90 figures: there its margin
    is partly luck. However large it is, only the held-out part can call it better."""
    tuning = _tuning(DayStats(regret=40, evictions=10))
    lucky = tune.Candidate(
        "c",
        Policy(),
        {},
        DayStats(regret=10, regret_fewer=30),
        0.0,
        0.0,
        chosen_on=DayStats(regret_fewer=30),
        held_out=DayStats(regret=40, evictions=10),
    )
    assert not tuning.beats_current(lucky)
    lucky.held_out = DayStats(regret=30, regret_fewer=10, evictions=10)
    assert tuning.beats_current(lucky)


def test_a_window_of_one_day_holds_nothing_out_and_calls_nothing_better():
    end = make_history(users=("u1",))
    result = tune.tune(APP, 1, end)
    assert result.held_out_from is None
    assert all(not result.beats_current(c) for c in result.best)
    out = StringIO()
    call_command("tune", "--app", APP, "--days", "1", "--until", end.isoformat(), stdout=out)
    assert "nothing held out" in out.getvalue()


@pytest.mark.parametrize(
    ("regrets", "day"),
    [
        ([0, 0, 0, 0], 2),  # no regret: the middle day
        ([1, 1, 1, 1], 2),
        ([0, 0, 0, 10, 10], 4),  # regret comes late, as caps fill: the cut too
        ([10, 0, 0, 0], 3),  # at least one day on each side; of equal cuts the latest
        ([0, 0, 0, 10], 3),
        ([5], 1),  # one day: nothing held out
        ([], 0),
    ],
)
def test_the_held_out_part_starts_where_the_policy_that_ran_regrets_evenly(regrets, day):
    assert tune.held_out_day([DayStats(regret=r) for r in regrets]) == day


@pytest.mark.parametrize("information", [True, False])
def test_a_preset_comes_whole_whatever_the_app_s_information_setting(information):
    """The replay gives each record the importance a candidate's information_importance
    would have written, so presets need not borrow the app's."""
    Policy.objects.create(app_name=APP, information_importance=information)
    candidates = dict(tune.space(APP))
    assert candidates["preset article"].snapshot()["information_importance"] is False
    assert candidates["preset default"].snapshot()["information_importance"] is True
    article = candidates["preset article"].snapshot()
    assert (article["w_recency"], article["fresh_start"], article["supersede"]) == (0.4, 1.0, False)
