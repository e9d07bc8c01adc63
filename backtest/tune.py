"""Search the policy space for the lowest regret at no more storage. Reads only.

The space: weights on the simplex (steps of ``WEIGHT_STEP``), half-lives, the
fresh-start setting, and the presets; caps and TTL stay the app's. Every candidate is
replayed over the same window (``service.replay``: one read of each user's history) and
kept when it holds on average no more tokens and no more records per day than the
policy that ran. The window is cut in two (``held_out_from``): the candidates are ranked
on its first part alone (lowest regret, then fewest evictions), and a candidate is
better than the policy that ran only on its last part, the held-out one, which took no
part in choosing it (``Tuning.beats_current``). Nothing is applied: a person applies one
through the normal policy change.

With many users the search is in rounds (successive halving, ``ROUNDS``): with more
than ``SAMPLE_USERS`` users every candidate is replayed on a fixed sample of that many
(``sample``: the lowest SHA-256 of the user id, so the same users whatever the history
or its order) and ranked there by the same rule (on the first part); the ``FINALISTS``
best go on. With more than ``SECOND_SAMPLE_USERS`` users those are replayed on a sample
four times larger (which holds the first) and the ``BEST`` of them go on. What is left
is replayed on every user: the best three and all their figures come from those full
replays.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import partial
from itertools import pairwise

from records.models import Policy, preset_values
from records.policy import PRESETS

from . import history, service
from .replay import ONE_DAY, DayStats

WEIGHT_STEP = 0.25
HALF_LIVES_HOURS = (7 * 24.0, 30 * 24.0, 90 * 24.0)
FRESH_STARTS = (0.0, 1.0)
BEST = 3
# Successive halving: above SAMPLE_USERS users, all candidates are ranked on a sample of
# that many users and the FINALISTS best go on; above SECOND_SAMPLE_USERS, those are
# ranked on a sample of that many and the BEST go on; what is left is replayed on every
# user. Each round replays about as many user-candidates as the one before, except the
# last: at 10,000 users 28,000 + 11,000 + 40,000 instead of 28,000 + 90,000 with one
# sample, and 930,000 with none.
SAMPLE_USERS = 300
FINALISTS = 8
SECOND_SAMPLE_USERS = 4 * SAMPLE_USERS
# How many standard deviations a candidate's paired regret must beat the policy that
# ran by (``Tuning.beats_current``): about 2.5 % by chance alone.
SIGNIFICANCE = 2.0


@dataclass
class Candidate:
    label: str
    policy: Policy
    changes: dict  # field -> (current, candidate), only what differs
    totals: DayStats  # the whole window
    mean_records: float
    mean_tokens: float
    # The window's first part (what it was ranked on) and its last, held-out part.
    chosen_on: DayStats = field(default_factory=DayStats)
    held_out: DayStats = field(default_factory=DayStats)


@dataclass
class Tuning:
    app_name: str
    start: datetime
    end: datetime
    current: DayStats
    current_mean_records: float
    current_mean_tokens: float
    tried: int
    best: list[Candidate]
    exact: bool
    # Each sampled round: [users in its sample, candidates it let go on].
    samples: list[list[int]] = field(default_factory=list)

    @property
    def sampled(self) -> int:
        """Users of the first round (0: every candidate replayed on every user)."""
        return self.samples[0][0] if self.samples else 0

    def rounds_text(self) -> str:
        """How the candidates were narrowed, for the command and the page ("" if not)."""
        return rounds_text(self.samples)

    # The held-out part: from this moment to ``end`` (None: no day was left to hold out).
    held_out_from: datetime | None = None
    current_held_out: DayStats = field(default_factory=DayStats)

    def beats_current(self, c: Candidate) -> bool:
        """On the held-out part: less regret than the policy that ran by more than
        chance, or the same searches regretted and fewer evictions.

        Both regret the same searches but for those only one of them regrets; with no
        difference in policy those split evenly. The candidate beats the policy that ran
        when it is spared more of them than a fair split would give, by ``SIGNIFICANCE``
        standard deviations (a paired sign test). Only on the held-out part: the
        candidate was the lowest of ~90 figures on the first part, so there its margin
        is partly luck, and a test on the figures that chose it would count that luck.
        """
        if self.held_out_from is None:
            return False
        fewer, more = c.held_out.regret_fewer, c.held_out.regret_more
        if fewer == more == 0:
            return c.held_out.evictions < self.current_held_out.evictions
        return fewer - more >= SIGNIFICANCE * math.sqrt(fewer + more)

    def as_json(self) -> dict:
        """Per-app totals only: no user id, no record content."""
        return {
            "app": self.app_name,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "tried": self.tried,
            "sampled": self.sampled,
            "samples": self.samples,
            "exact": self.exact,
            "held_out_from": None if self.held_out_from is None else self.held_out_from.isoformat(),
            "current": {
                **asdict(self.current),
                "mean_records": self.current_mean_records,
                "mean_tokens": self.current_mean_tokens,
                "held_out": asdict(self.current_held_out),
            },
            "best": [
                {
                    "label": c.label,
                    "values": c.policy.snapshot(),
                    "changes": [[f, old, new] for f, (old, new) in c.changes.items()],
                    "totals": asdict(c.totals),
                    "chosen_on": asdict(c.chosen_on),
                    "held_out": asdict(c.held_out),
                    "mean_records": c.mean_records,
                    "mean_tokens": c.mean_tokens,
                    "regret_change": c.totals.regret - self.current.regret,
                    "evictions_change": c.totals.evictions - self.current.evictions,
                    "beats_current": self.beats_current(c),
                }
                for c in self.best
            ],
        }


def simplex(step: float = WEIGHT_STEP) -> list[tuple[float, float, float]]:
    """(recency, frequency, importance) weights that sum to 1, on a grid of ``step``."""
    n = round(1 / step)
    return [(a / n, b / n, (n - a - b) / n) for a in range(n + 1) for b in range(n + 1 - a)]


def space(app_name: str) -> list[tuple[str, Policy]]:
    """(label, candidate) for every point of the space, each validated as a change.

    A preset comes whole, its ``information_importance`` included: the replay gives each
    record the importance that setting would have written (``replay._importance``).
    """
    out = []
    for name in sorted(PRESETS):
        values = preset_values(name)
        out.append((f"preset {name}", service.candidate_policy(app_name, values=values)))
    for wr, wf, wi in simplex():
        for half_life in HALF_LIVES_HOURS:
            for fresh in FRESH_STARTS:
                values = {
                    "w_recency": str(wr),
                    "w_frequency": str(wf),
                    "w_importance": str(wi),
                    "half_life_hours": str(half_life),
                    "fresh_start": str(fresh),
                }
                label = (
                    f"weights {wr:g}/{wf:g}/{wi:g}, half-life {half_life / 24:g} d, "
                    f"fresh start {fresh:g}"
                )
                out.append((label, service.candidate_policy(app_name, values=values)))
    return out


def sample(user_ids: Sequence[str], size: int = SAMPLE_USERS) -> list[str]:
    """The ``size`` users whose ids have the lowest SHA-256, in id order: a fixed choice
    that depends on neither the history nor the order the users are listed in."""
    chosen = sorted(user_ids, key=lambda u: (hashlib.sha256(u.encode()).digest(), u))[:size]
    return sorted(chosen)


def tune(
    app_name: str,
    days: int,
    now: datetime,
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    sample_users: int = SAMPLE_USERS,
    finalists: int = FINALISTS,
    second_sample_users: int = SECOND_SAMPLE_USERS,
    until: datetime | None = None,
) -> Tuning:
    """``until``: the window's end, as ``service.run``'s (default ``now``, the clock)."""
    start, end = service.check_window(app_name, days, now if until is None else until)
    candidates = space(app_name)
    users = history.users(app_name, start)
    current = Policy.objects.filter(app_name=app_name).first() or Policy(app_name=app_name)
    base = current.snapshot()
    replay = partial(service.replay, app_name, start, end, now, workers=workers)
    plan = _rounds(len(users), len(candidates), [(sample_users, finalists),
                                                 (second_sample_users, BEST)])  # fmt: skip
    total = sum(size for size, _ in plan) + len(users)

    def counted(before: int):
        """``progress`` of the whole tuning, from a round that starts ``before`` users in."""
        return None if progress is None else (lambda done, _n: progress(before + done, total))

    finals = candidates
    split = None  # the first held-out day, from the policy that ran alone (first round)
    before = 0
    for size, keep in plan:
        replayed = replay(
            [c for _, c in finals], progress=counted(before), user_ids=sample(users, size)
        )
        if split is None:
            split = held_out_day(replayed.current)
        kept = {c.label for c in _ranked(finals, replayed, base, split, keep_all=True)[:keep]}
        finals = [(label, policy) for label, policy in finals if label in kept]
        before += size
    replayed = replay([c for _, c in finals], progress=counted(before), user_ids=users)
    if split is None:
        split = held_out_day(replayed.current)
    cur_records, cur_tokens = _means(replayed.current)
    n_days = len(replayed.current)
    return Tuning(
        app_name=app_name,
        start=start,
        end=end,
        current=_total(replayed.current),
        current_mean_records=cur_records,
        current_mean_tokens=cur_tokens,
        tried=len(candidates),
        best=_ranked(finals, replayed, base, split)[:BEST],
        exact=replayed.exactness.exact,
        samples=[[size, keep] for size, keep in plan],
        held_out_from=start + split * ONE_DAY if split < n_days else None,
        current_held_out=_total(replayed.current[split:]),
    )


def rounds_text(samples: Sequence[Sequence[int]]) -> str:
    """ "ranked on a sample of 300 users; the best 8 on a sample of 1,200; the best 3 on
    every user" for ``Tuning.samples`` ("" when every candidate was replayed on every
    user)."""
    if not samples:
        return ""
    parts = [f"ranked on a sample of {samples[0][0]:,} users"]
    parts += [f"the best {keep} on a sample of {size:,}" for (_, keep), (size, _) in
              pairwise(samples)]  # fmt: skip
    return "; ".join([*parts, f"the best {samples[-1][1]} on every user"])


def _rounds(users: int, candidates: int, rounds) -> list[tuple[int, int]]:
    """The (sample size, how many go on) of the rounds that apply: a round's sample must
    be smaller than the users and larger than the last round's, and it must leave fewer
    candidates than it is given."""
    plan: list[tuple[int, int]] = []
    for size, keep in rounds:
        if users > size > (plan[-1][0] if plan else 0) and candidates > keep:
            plan.append((size, keep))
            candidates = keep
    return plan


def held_out_day(current: Sequence[DayStats]) -> int:
    """The first day of the held-out part: the cut that leaves the two parts the most
    even share of the searches the policy that ran regrets (at least one day each; of
    equal cuts the latest), or the middle day when it regrets none. Regret grows as
    users fill their caps, so an even cut in days would leave the first part little to
    choose on. It depends on the policy that ran alone, never on a candidate. A one-day
    window has no held-out part (``len(current)``)."""
    n = len(current)
    if n < 2:
        return n
    total = sum(d.regret for d in current)
    if total == 0:
        return n // 2
    best, before = 1, 0
    gap = None
    for day in range(1, n):
        before += current[day - 1].regret
        g = abs(2 * before - total)
        if gap is None or g <= gap:  # ties: the latest (days without regret tell nothing)
            best, gap = day, g
    return best


def _ranked(
    candidates: Sequence[tuple[str, Policy]],
    replayed: service.Replayed,
    base: dict,
    split: int,
    *,
    keep_all: bool = False,
) -> list[Candidate]:
    """The candidates at no more storage than the policy that ran, best first on the
    days before ``split`` (then, with ``keep_all``, the others, best first)."""
    cur_records, cur_tokens = _means(replayed.current)
    scored, over = [], []
    for (label, policy), days_ in zip(candidates, replayed.candidates, strict=True):
        records, tokens = _means(days_)
        snapshot = policy.snapshot()
        changes = {f: (base[f], v) for f, v in snapshot.items() if v != base[f]}
        c = Candidate(
            label,
            policy,
            changes,
            _total(days_),
            records,
            tokens,
            chosen_on=_total(days_[:split]),
            held_out=_total(days_[split:]),
        )
        # More storage than the policy that ran: dropped.
        (over if records > cur_records or tokens > cur_tokens else scored).append(c)
    for group in (scored, over):
        group.sort(
            key=lambda c: (c.chosen_on.regret, c.chosen_on.evictions, c.mean_tokens, c.label)
        )
    return scored + over if keep_all else scored


def _total(days: list[DayStats]) -> DayStats:
    out = DayStats()
    for d in days:
        out.add(d)
    return out


def _means(days: list[DayStats]) -> tuple[float, float]:
    return (sum(d.records for d in days) / len(days), sum(d.tokens for d in days) / len(days))
