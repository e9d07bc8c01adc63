"""One user's live records during a replay, and their victims: pure Python, no I/O.

``Live.victims(t, params)`` returns exactly what
``records.policy.HybridPolicy(params).victims(all live records, t)`` returns, without
scoring every record on every write. It keeps a heap of lower bounds on the scores and
hands the pure policy only the records that can be victims; the policy's own functions
decide, so there is no second definition of the score.

Why the bounds hold: every term of the score is at least 0, and between two moments
none falls by more than its own half-life's factor (recency by ``half_life``, a past-due
importance by ``past_due_half_life``; frequency never falls), so a record's score at
``t`` is at least its score at ``τ`` times ``decay(t - τ)``, the smaller factor. A touch
only raises a score, so an old key stays a lower bound after it. Every key in the heap
was taken at or after ``since`` (the last rebuild), so ``key * decay(t - since)`` bounds
every record from below.

How the victims are found: the expired records, every record with a slot (what
supersedes what depends on all of them) and the lowest keys go to the pure policy, with
the caps lowered by what stays outside. Its answer is the full answer when the caps are
met inside that set and every record outside scores, by its bound, above the last
victim: then the full ranking starts with the same records in the same order. Otherwise
more keys come in; when too many had to, the keys are taken again at ``t``.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from datetime import datetime

from records import policy as pure

# Far above the error of rounding a score to ``SCORE_DECIMALS`` and of the float maths.
EPSILON = 1e-8
# Keys taken in one enforcement before the heap is rebuilt at its moment.
REBUILD_AFTER = 48
CAP_REASONS = frozenset({pure.RECORD_CAP, pure.TOKEN_CAP})


class Live:
    def __init__(self) -> None:
        self.records: dict[int | str, pure.Record] = {}
        self.tokens = 0
        self._keys: list[tuple[float, int | str]] = []  # (lower bound, id); one per id
        self._since: datetime | None = None
        self._params: pure.PolicyParams | None = None
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
            # Keyed under the policy the heap holds; a change of policy rebuilds it.
            heapq.heappush(self._keys, (pure.HybridPolicy(self._params).score(r, t).total, r.id))

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
        if self._params is not params or self._since is None:
            self._rebuild(t, params)
        chosen = {r.id: r for r in expired}
        chosen.update(self._slotted)
        taken: list[int | str] = []
        rebuilt = False
        while True:
            answer = self._answer(chosen, t, params)
            if answer is not None:
                victims, last = answer
                bound = self._lowest_bound(t, params)
                if bound is None or bound > last:
                    break
                limit = last
            else:
                limit = None  # the caps cannot be met inside: take one more key
            if not rebuilt and len(taken) >= REBUILD_AFTER:
                for i in taken:
                    if i not in chosen or i in self._slotted:
                        continue
                    del chosen[i]
                for r in expired:
                    chosen[r.id] = r
                taken = []
                self._rebuild(t, params)
                rebuilt = True
                continue
            self._take(chosen, taken, t, params, limit)
        evicted = {v.id for v in victims}
        policy = pure.HybridPolicy(params)
        for i in taken:
            if i not in evicted and i in self.records:
                r = self.records[i]
                heapq.heappush(self._keys, (policy.score(r, t).total, i))
        return victims

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
        """The policy ``params`` with lowered caps (validated once per pair)."""
        if self._inner_of is not params or len(self._inner_cache) > 256:
            self._inner_of, self._inner_cache = params, {}
        policy = self._inner_cache.get((max_records, max_tokens))
        if policy is None:
            inner = replace(params, max_records=max_records, max_tokens=max_tokens)
            policy = self._inner_cache[(max_records, max_tokens)] = pure.HybridPolicy(inner)
        return policy

    def _decay(self, t: datetime, params: pure.PolicyParams) -> float:
        hours = max(0.0, (t - self._since).total_seconds() / 3600.0)  # type: ignore[operator]
        factor = 0.5 ** (hours / params.half_life_hours)
        if params.past_due_half_life_hours > 0:
            factor = min(factor, 0.5 ** (hours / params.past_due_half_life_hours))
        return factor

    def _lowest_bound(self, t, params) -> float | None:
        """A lower bound on the score at ``t`` of every keyed record; None: none left."""
        keys = self._keys
        while keys and keys[0][1] not in self.records:
            heapq.heappop(keys)
        if not keys:
            return None
        return keys[0][0] * self._decay(t, params) - EPSILON

    def _take(self, chosen, taken, t, params, limit) -> None:
        """Move the lowest key into ``chosen``, and every key whose bound is not above
        ``limit``."""
        decay = self._decay(t, params)
        keys = self._keys
        first = True
        while keys:
            key, i = keys[0]
            if i not in self.records:
                heapq.heappop(keys)
                continue
            if not first and (limit is None or key * decay - EPSILON > limit):
                return
            heapq.heappop(keys)
            chosen[i] = self.records[i]
            taken.append(i)
            first = False
        if first:
            raise AssertionError("no record left to take, yet the caps are not met")

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
        policy = pure.HybridPolicy(params)
        self._keys = [(policy.score(r, t).total, r.id) for r in self.records.values() if not r.slot]
        heapq.heapify(self._keys)
        self._since = t
        self._params = params
