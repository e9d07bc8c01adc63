"""One user's live records during a replay, and their victims: pure Python, no I/O.

``Live.victims(t, params)`` returns exactly what
``records.policy.HybridPolicy(params).victims(all live records, t)`` returns, without
scoring every record on every write. It keeps a heap of lower bounds on the scores and
hands the pure policy only the records that can be victims; the policy's own functions
decide, so there is no second definition of the score.

Why the bounds hold: every term of the score is at least 0, and between two moments
none falls by more than its own half-life's factor (recency by ``half_life``, a past-due
importance by ``past_due_half_life``; frequency never falls, nor does an importance
without a due date that decays). So with ``f`` the weighted terms that never fall (the
floor), a record's score at ``t`` is at least ``f + (s - f) * 0.5 ** ((t - τ) / h)``,
``s`` its score at ``τ``. Keyed as ``(s - f) * 2 ** ((τ - origin) / h)``, records
scored at different moments with the same floor compare in one heap: one heap per
floor (rounded down to 1/64: a lower floor is still one) and per ``h`` (records with a
due date may decay faster). A touch only raises a score and its floor, so an old key
stays a lower bound after it. (Without the floor, the bound of a record that its
importance keeps fell with recency, and it was scored again and again: 46 % of the
bench backtest's scores; now 12 %, and half as many scores in all.)

How the victims are found: the expired records, every record with a slot (what
supersedes what depends on all of them) and the lowest keys go to the pure policy, with
the caps lowered by what stays outside. Its answer is the full answer when the caps are
met inside that set and every record outside scores, by its bound, above the last
victim: then the full ranking starts with the same records in the same order. Otherwise
the records whose bound is not above it are scored: those that score above it go back
keyed afresh, the others come in.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import fields
from datetime import datetime

from records import policy as pure

# Far above the error of rounding a score to ``SCORE_DECIMALS`` and of the float maths.
EPSILON = 1e-8
# Half-lives since a heap's origin before it is keyed afresh (2 ** 500 is far from
# overflowing a float).
MAX_HALF_LIVES = 500
# Floors are rounded down to multiples of 1 / FLOOR_STEPS: at most FLOOR_STEPS + 1 heaps.
FLOOR_STEPS = 64
CAP_REASONS = frozenset({pure.RECORD_CAP, pure.TOKEN_CAP})


_PARAM_FIELDS = tuple(f.name for f in fields(pure.PolicyParams))


def _with_caps(params: pure.PolicyParams, max_records: int, max_tokens: int):
    """``replace(params, max_records=..., max_tokens=...)`` without validating again:
    ``params`` was validated, and ``_answer`` passes caps of at least 1 only. (Validating
    took an eighth of a backtest: the lowered token cap differs at almost every call.)"""
    inner = object.__new__(pure.PolicyParams)
    for name in _PARAM_FIELDS:
        object.__setattr__(inner, name, getattr(params, name))
    object.__setattr__(inner, "max_records", max_records)
    object.__setattr__(inner, "max_tokens", max_tokens)
    return inner


class _Bounds:
    """Lower bounds on scores whose part above a floor falls by at most half every
    ``hours``, the floor never falling: one heap per floor (rounded down to a step)."""

    def __init__(self, hours: float, origin: datetime) -> None:
        self.hours = hours
        self.origin = origin
        # floor -> heap of (key, id); one entry per id across the heaps.
        self.heaps: dict[float, list[tuple[float, int | str]]] = {}
        # 2 ** and 0.5 ** the half-lives at the last moment asked: many keys and bounds
        # are taken at one moment (an enforcement).
        self._at: datetime | None = None
        self._up = self._down = 1.0

    def _half_lives(self, t: datetime) -> float:
        return (t - self.origin).total_seconds() / 3600.0 / self.hours

    def _factors(self, t: datetime) -> None:
        if t is not self._at:
            half_lives = self._half_lives(t)
            self._at, self._up, self._down = t, 2.0**half_lives, 0.5**half_lives

    def push(self, score: float, floor: float, record_id, t: datetime) -> None:
        """``score`` at ``t``, of which ``floor`` never falls."""
        self._factors(t)
        # Rounded down: a lower floor is still a floor, and few heaps are compared.
        base = math.floor(floor * FLOOR_STEPS) / FLOOR_STEPS if floor > 0 else 0.0
        heap = self.heaps.get(base)
        if heap is None:
            heap = self.heaps[base] = []
        heapq.heappush(heap, ((score - base) * self._up, record_id))

    def lowest(self, live: dict, t: datetime) -> tuple[float, int | str, list] | None:
        """(bound at ``t``, id, its heap) of the lowest bound, dropping dead entries."""
        self._factors(t)
        down = self._down
        best = None
        for base, heap in self.heaps.items():
            while heap and heap[0][1] not in live:
                heapq.heappop(heap)
            if heap:
                key, i = heap[0]
                bound = base + key * down - EPSILON
                if best is None or (bound, i) < best[:2]:
                    best = (bound, i, heap)
        return best

    def band(self, live: dict, t: datetime, last: float) -> list[int | str]:
        """Take out the live ids whose bound at ``t`` is not above ``last``."""
        self._factors(t)
        down = self._down
        out = []
        for base, heap in self.heaps.items():
            while heap:
                key, i = heap[0]
                if i in live and base + key * down - EPSILON > last:
                    break
                heapq.heappop(heap)
                if i in live:
                    out.append(i)
        return out

    def stale(self, t: datetime) -> bool:
        return self._half_lives(t) > MAX_HALF_LIVES


class _Memo:
    """The scores of one policy at one moment, each computed once: an enforcement
    scores a record in its band, then again each time the pure policy ranks the
    chosen records, then to key it back. A record's state is immutable, so the same
    object at the same moment has the same score."""

    def __init__(self, policy: pure.HybridPolicy) -> None:
        self.policy = policy
        self.at: datetime | None = None
        self.known: dict[int | str, tuple[pure.Record, pure.Score]] = {}

    def score(self, r: pure.Record, t: datetime) -> pure.Score:
        if t is not self.at:
            self.at, self.known = t, {}
        hit = self.known.get(r.id)
        if hit is not None and hit[0] is r:
            return hit[1]
        score = self.policy.score(r, t)
        self.known[r.id] = (r, score)
        return score


class _Scored(pure.HybridPolicy):
    """``HybridPolicy`` (lowered caps) whose scores come from the memo of the policy
    with the same scoring values: same records, same moment, same scores."""

    def __init__(self, params: pure.PolicyParams, memo: _Memo) -> None:
        super().__init__(params)
        self._memo = memo

    def score(self, r: pure.Record, now: datetime) -> pure.Score:
        return self._memo.score(r, now)


class Live:
    def __init__(self) -> None:
        self.records: dict[int | str, pure.Record] = {}
        self.tokens = 0
        self._params: pure.PolicyParams | None = None
        self._policy: pure.HybridPolicy | None = None  # of _params
        self._memo: _Memo | None = None  # of _policy
        self._plain: _Bounds | None = None  # scores that fall with recency only, above floors
        self._due: _Bounds | None = None  # with a due date: importance may fall too
        self._by_age: list[tuple[datetime, int | str]] = []  # unpinned, by created_at
        self._slotted: dict[int | str, pure.Record] = {}
        self._slot_counts: dict[str, int] = {}
        self._shared_slots = 0  # slots with two live records or more
        self._inner_of: pure.PolicyParams | None = None
        self._inner_cache: dict[tuple[int, int], pure.HybridPolicy] = {}

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, record_id) -> bool:
        return record_id in self.records

    def get(self, record_id) -> pure.Record | None:
        return self.records.get(record_id)

    def add(self, r: pure.Record, t: datetime, params: pure.PolicyParams) -> None:
        self.records[r.id] = r
        self.tokens += r.tokens
        if not r.pinned:
            heapq.heappush(self._by_age, (r.created_at, r.id))
        if r.slot:
            self._slotted[r.id] = r
            n = self._slot_counts.get(r.slot, 0) + 1
            self._slot_counts[r.slot] = n
            self._shared_slots += n == 2
        elif self._params is not None:
            # Keyed under the policy the heaps hold; a change of policy rebuilds them.
            self._push(r, self._memo.score(r, t), t)  # type: ignore[union-attr]

    def remove(self, record_id) -> pure.Record | None:
        r = self.records.pop(record_id, None)
        if r is None:
            return None
        self.tokens -= r.tokens
        if r.slot:
            del self._slotted[record_id]
            n = self._slot_counts[r.slot] - 1
            self._shared_slots -= n == 1
            if n:
                self._slot_counts[r.slot] = n
            else:
                del self._slot_counts[r.slot]
        return r  # its key and age entries are dropped when they surface

    def replace(self, r: pure.Record) -> None:
        """A new state of a live record whose score only rose (a touch)."""
        self.records[r.id] = r
        if r.slot:
            self._slotted[r.id] = r

    def victims(self, t: datetime, params: pure.PolicyParams) -> list[pure.Victim]:
        """``HybridPolicy(params).victims(every live record, t)``; removes nothing."""
        over = len(self.records) > params.max_records or self.tokens > params.max_tokens
        expired = self._expired(t, params)
        if not over and not expired and not (params.supersede and self._shared_slots):
            return []
        if self._params is not params or self._plain.stale(t) or self._due.stale(t):  # type: ignore[union-attr]
            self._rebuild(t, params)
        chosen = {r.id: r for r in expired}
        chosen.update(self._slotted)
        policy = self._memo  # params' scores
        taken: list[int | str] = []  # out of the heaps: back in unless evicted
        while True:
            answer = self._answer(chosen, t, params)
            if answer is None:  # the caps cannot be met inside: the lowest keys come in
                short = len(self.records) - params.max_records + 1 - len(chosen)
                for _ in range(max(1, short)):
                    lowest = self._pop_lowest(t)
                    if lowest is None:
                        break
                    chosen[lowest] = self.records[lowest]
                    taken.append(lowest)
                continue
            victims, last = answer
            if not self._score_band(chosen, taken, t, policy, last):
                break
        evicted = {v.id for v in victims}
        for i in taken:
            if i not in evicted:
                r = self.records[i]
                self._push(r, policy.score(r, t), t)  # the memo's: scored at t already
        return victims

    def _score_band(self, chosen, taken, t, policy, last) -> bool:
        """Score every keyed record whose bound is not above ``last``: those at or
        below it come into ``chosen``, the others go back keyed at ``t``. False: none."""
        records = self.records
        band = self._plain.band(records, t, last) + self._due.band(records, t, last)  # type: ignore[union-attr]
        moved = False
        for i in band:
            r = self.records[i]
            score = policy.score(r, t)
            if score.total > last + 2 * EPSILON:
                self._push(r, score, t)
            else:
                chosen[i] = r
                taken.append(i)
                moved = True
        return moved

    def _lowest_of(self, t) -> tuple[float, int | str, list] | None:
        """(bound, id, its heap) of the lowest bound of both kinds."""
        records = self.records
        best = None
        for bounds in (self._plain, self._due):
            lowest = bounds.lowest(records, t)  # type: ignore[union-attr]
            if lowest is not None and (best is None or lowest[:2] < best[:2]):
                best = lowest
        return best

    def _pop_lowest(self, t) -> int | str | None:
        lowest = self._lowest_of(t)
        if lowest is None:
            return None
        heapq.heappop(lowest[2])
        return lowest[1]

    def _push(self, r: pure.Record, score: pure.Score, t: datetime) -> None:
        """Key ``r`` by ``score`` (its score at ``t``) above its floor: what of the
        score never falls. Frequency never falls, nor does importance without a due
        date that decays; recency, and such an importance, fall by at most half a
        half-life (the heap's)."""
        params = self._params
        decays = r.due_at is not None and params.past_due_half_life_hours > 0  # type: ignore[union-attr]
        floor = params.w_frequency * score.frequency  # type: ignore[union-attr]
        if decays:
            self._due.push(score.total, floor, r.id, t)  # type: ignore[union-attr]
        else:
            floor += params.w_importance * score.importance  # type: ignore[union-attr]
            self._plain.push(score.total, floor, r.id, t)  # type: ignore[union-attr]

    def _answer(self, chosen, t, params):
        """(victims, score of the last cap victim) from the pure policy over ``chosen``
        with the caps lowered by what is outside, or None when they cannot be met
        inside (a cap below 1, or every unpinned record inside is a victim)."""
        chosen_tokens = sum(r.tokens for r in chosen.values())
        max_records = params.max_records - (len(self.records) - len(chosen))
        max_tokens = params.max_tokens - (self.tokens - chosen_tokens)
        everything = len(chosen) == len(self.records)
        if max_records < 1 or max_tokens < 1:
            return None
        victims = self._inner(params, max_records, max_tokens).victims(list(chosen.values()), t)
        if everything:
            return victims, float("-inf")
        gone = {v.id for v in victims}
        held = [r for r in chosen.values() if r.id not in gone]
        if len(held) > max_records or sum(r.tokens for r in held) > max_tokens:
            return None
        last = max((v.score.total for v in victims if v.reason in CAP_REASONS), default=None)
        return victims, (float("-inf") if last is None else last)

    def _inner(self, params, max_records, max_tokens) -> pure.HybridPolicy:
        """The policy ``params`` with lowered caps."""
        if self._inner_of is not params or len(self._inner_cache) > 256:
            self._inner_of, self._inner_cache = params, {}
        policy = self._inner_cache.get((max_records, max_tokens))
        if policy is None:
            inner = _with_caps(params, max_records, max_tokens)
            policy = self._inner_cache[(max_records, max_tokens)] = _Scored(inner, self._memo)  # type: ignore[arg-type]
        return policy

    def _expired(self, t: datetime, params: pure.PolicyParams) -> list[pure.Record]:
        """The live records past their TTL at ``t``; the pure policy confirms each."""
        out = []
        by_age = self._by_age
        cutoff = t - params.ttl
        while by_age and by_age[0][0] < cutoff:
            _, i = heapq.heappop(by_age)
            r = self.records.get(i)
            if r is not None:
                out.append(r)
        # A later, longer TTL may keep them: back in the heap until they are evicted.
        for r in out:
            heapq.heappush(by_age, (r.created_at, r.id))
        return out

    def _rebuild(self, t: datetime, params: pure.PolicyParams) -> None:
        hours = params.half_life_hours
        due_hours = params.past_due_half_life_hours
        self._params = params
        self._policy = pure.HybridPolicy(params)
        self._memo = _Memo(self._policy)
        self._inner_of = None  # its policies score through the new memo
        self._plain = _Bounds(hours, t)
        self._due = _Bounds(min(hours, due_hours) if due_hours > 0 else hours, t)
        policy = self._memo
        for r in self.records.values():
            if not r.slot:
                self._push(r, policy.score(r, t), t)
