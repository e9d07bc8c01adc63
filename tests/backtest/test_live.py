"""The replay's victims against the pure policy's, on random histories (fixed seed and
clock): the same victims, in the same order, for the same reasons."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from backtest.live import Live
from records import policy as pure

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def random_params(rng: random.Random, max_records: int) -> pure.PolicyParams:
    a, b = sorted((rng.choice([0, 0.25, 0.5, 0.75, 1]), rng.choice([0, 0.25, 0.5, 0.75, 1])))
    return pure.PolicyParams(
        ttl=timedelta(days=rng.choice([5, 20, 365])),
        half_life=timedelta(hours=rng.choice([6, 48, 24 * 30])),
        max_records=max_records,
        max_tokens=rng.choice([10**9, max_records * 40]),
        w_recency=a,
        w_frequency=b - a,
        w_importance=1 - b,
        saturation_hits=rng.choice([1, 5, 100]),
        fresh_start=rng.choice([0.0, 1.0]),
        past_due_half_life=timedelta(hours=rng.choice([0, 12, 24 * 14])),
        supersede=rng.random() < 0.5,
    )


def random_record(
    rng: random.Random, i: int, now: datetime, params, ties: bool = False
) -> pure.Record:
    due = now + timedelta(hours=rng.randint(-48, 96)) if rng.random() < 0.2 else None
    importance = rng.choice([0.2, 0.5] if ties else [0.0, 0.1, 0.2, 0.5, 0.9, rng.random()])
    return pure.Record(
        id=i,
        created_at=now,
        last_accessed_at=pure.fresh_last_accessed(now, params),
        hits=0,
        importance=importance,
        pinned=rng.random() < 0.05,
        tokens=rng.randint(0, 80),
        due_at=due,
        slot=rng.choice(["", "", "", "", "address", "phone"]),
        stated_at=now - timedelta(hours=rng.randint(0, 5)) if rng.random() < 0.3 else None,
    )


def run_history(seed: int, steps: int, max_records: int, ties: bool = False) -> int:
    """Random writes, touches, removals and policy changes; compare at every write.
    ``ties``: two importances and coarse moments, so that many records score alike."""
    rng = random.Random(seed)
    policies = [random_params(rng, max_records) for _ in range(3)]
    params = policies[0]
    live = Live()
    now = T0
    compared = 0
    for i in range(steps):
        now += timedelta(minutes=rng.choice([0, 0, 60] if ties else [0, 1, 30, 90, 600, 3000]))
        if rng.random() < 0.02:
            params = rng.choice(policies)
        roll = rng.random()
        if roll < 0.35 and live.records:
            for record_id in rng.sample(sorted(live.records), min(3, len(live.records))):
                r = live.records[record_id]
                live.replace(
                    pure.Record(
                        **{
                            **{f: getattr(r, f) for f in pure.Record.__slots__},
                            "hits": r.hits + 1,
                            "last_accessed_at": max(r.last_accessed_at, now),
                        }
                    )
                )
            continue
        if roll < 0.38 and live.records:
            live.remove(rng.choice(sorted(live.records)))
            continue
        live.add(random_record(rng, i, now, params, ties), now, params)
        expected = pure.HybridPolicy(params).victims(list(live.records.values()), now)
        got = live.victims(now, params)
        assert got == expected, (seed, i)
        for v in got:
            live.remove(v.id)
        compared += bool(expected)
    return compared


@pytest.mark.parametrize("seed", range(12))
def test_the_victims_are_the_pure_policys_on_random_histories(seed):
    compared = run_history(seed, steps=700, max_records=[5, 20, 60][seed % 3])
    assert compared > 50  # the caps, TTLs and slots really were enforced


@pytest.mark.parametrize("seed", range(100, 112))
def test_the_victims_are_the_pure_policys_when_many_scores_tie(seed):
    compared = run_history(seed, steps=600, max_records=[5, 20, 60][seed % 3], ties=True)
    assert compared > 50


def test_equal_scores_are_ranked_by_the_policys_tie_breaks():
    # Equal importance, no recency: every record scores the same, so the bounds never
    # separate the victim from the rest; the pure policy's tie-breaks decide.
    params = pure.PolicyParams(max_records=50, w_recency=0.0, w_frequency=0.0, w_importance=1.0)
    live = Live()
    now = T0
    for i in range(60):
        now += timedelta(hours=1)
        r = pure.Record(id=i, created_at=now, last_accessed_at=now, importance=0.5, tokens=1)
        live.add(r, now, params)
        expected = pure.HybridPolicy(params).victims(list(live.records.values()), now)
        got = live.victims(now, params)
        assert got == expected
        for v in got:
            live.remove(v.id)
    assert len(live) == params.max_records
