"""Replay one user's access history under a policy: pure Python, no Django, no I/O.

The engine is ``records.policy.HybridPolicy``: the replay only keeps each record's
state (hits, last access) as the logged touches move it and asks the policy for its
victims (``live.Live``: the same answer, without scoring every record each time) at
the moments the real system enforced (every write, and every eviction it
logged). Records written before the window start with the state the history gives them
at its start; records removed for reasons no policy decides (manual deletes, summaries)
go when they really went, whatever the policy.

The policy that ran needs no replay for its figures: ``recorded`` counts them from the
history itself (what it evicted, when, and why), with the same rules as a replay. When
the replay of the policy that ran is exact the two are equal; the backtest replays it
on a sample of users to say whether it is (``backtest.service.replay``).

Regret of a replayed policy, per search: its term hashes match a record that policy had
already evicted by TTL or a cap (the live regret check, replayed). The rule is the same
for the policy that ran and for every candidate, so it favours neither: it needs the
term hashes of every record, live or evicted (``RecordHistory.term_hashes``). "Lost":
the search returned a record the policy had evicted by TTL or a cap (one it superseded
was replaced by a newer statement of the same slot, which answers instead); only a
candidate can lose one, since the policy that ran held all it returned, so it is shown
but not counted as regret. "Saved": it matched a record the real policy evicted that
this policy still held.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from records import policy as pure
from records.rules import UNMATCHED_IMPORTANCE

from .live import Live

ONE_DAY = timedelta(days=1)
# Reasons a policy decides; others (manual, summarised) are replayed as they happened.
POLICY_REASONS = frozenset({pure.EXPIRED, pure.RECORD_CAP, pure.TOKEN_CAP, pure.SUPERSEDED})
# Evictions a search may regret (records.store.REGRET_REASONS): a superseded record was
# replaced by a newer statement.
REGRET_REASONS = frozenset({pure.EXPIRED, pure.RECORD_CAP, pure.TOKEN_CAP})
# records.feedback.REGRET_MIN_MATCH: the live check's threshold.
MIN_MATCH = 2


@dataclass(frozen=True, slots=True)
class RecordHistory:
    """One record as the history knows it; ``hits`` and ``last_accessed_at`` as read
    at ``known_at`` (its eviction, or when the history was loaded)."""

    id: int
    created_at: datetime
    importance: float
    pinned: bool
    tokens: int
    hits: int
    last_accessed_at: datetime
    known_at: datetime
    due_at: datetime | None = None
    slot: str = ""
    stated_at: datetime | None = None
    removed_at: datetime | None = None
    removed_reason: str = ""
    term_hashes: frozenset[str] = frozenset()
    # Written or touched outside the services (``explained``): replayed as it stands.
    as_it_stands: bool = False
    # When the policy's information_importance set its importance (no rule did): its
    # content's information score, and whether ``importance`` is that score (written
    # with the setting on). None: the setting did not decide it, or an eviction kept
    # before the history had the score; it keeps ``importance`` under any policy.
    information: float | None = None
    informed: bool = False


@dataclass(frozen=True, slots=True)
class Search:
    at: datetime
    record_ids: tuple[int, ...]
    term_hashes: frozenset[str]


@dataclass(frozen=True)
class Schedule:
    """The policy in effect over time: each entry from its moment on; the first also
    before it."""

    changes: tuple[tuple[datetime, pure.PolicyParams], ...]

    @classmethod
    def fixed(cls, params: pure.PolicyParams) -> Schedule:
        return cls(((datetime.min.replace(tzinfo=None), params),))

    def __post_init__(self) -> None:
        if not self.changes:
            raise ValueError("a schedule needs at least one policy")
        object.__setattr__(self, "_moments", [m for m, _ in self.changes])

    def at(self, moment: datetime) -> pure.PolicyParams:
        if len(self.changes) == 1:
            return self.changes[0][1]
        i = bisect.bisect_right(self._moments, moment) - 1  # type: ignore[attr-defined]
        return self.changes[max(i, 0)][1]


@dataclass
class DayStats:
    evictions: int = 0
    records: int = 0  # held at the end of the day
    tokens: int = 0  # held at the end of the day
    searches: int = 0
    regret: int = 0
    lost: int = 0
    saved: int = 0
    # Paired with the policy that ran, search by search (a candidate's only): searches
    # it regretted and this policy did not, and the converse.
    regret_fewer: int = 0
    regret_more: int = 0

    def add(self, other: DayStats) -> None:
        for name in DayStats.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class UserResult:
    days: list[DayStats]
    evicted: dict[int, datetime] = field(default_factory=dict)  # id -> when, in the window
    reasons: dict[int, str] = field(default_factory=dict)  # id -> why (pure's reasons)
    regretted: list[bool] = field(default_factory=list)  # per search, in replay order


def window_days(start: datetime, end: datetime) -> int:
    return max(1, -(-(end - start) // ONE_DAY))


def replay_user(
    records: Sequence[RecordHistory],
    searches: Sequence[Search],
    schedule: Schedule,
    start: datetime,
    end: datetime,
) -> UserResult:
    """Replay [start, end) for one user; ``searches`` may reach back before ``start``
    (they rebuild the state at the start) and past ``end`` (they are not replayed)."""
    return replay_prepared(prepare(records, searches, start, end), schedule)


@dataclass
class Prepared:
    """One user's history arranged for replay: everything no policy changes, built once
    and replayed under any number of schedules (the tuner replays ~90)."""

    start: datetime
    end: datetime
    touches: dict[int, list[datetime]]
    # The evictions the policy that ran made in the window: moment -> (id, reason).
    evicted: dict[datetime, list[tuple[int, str]]]
    # Written before the window, live at its start: (its state at the start if no
    # policy changes it, else None; the record; touches after the start; the last touch
    # before it).
    initial: list[tuple[pure.Record | None, RecordHistory, int, datetime | None]]
    # In time order, each moment something happens: (moment, its day in the window,
    # records removed whatever the policy, records written, whether the system enforced,
    # searches). Each search comes with the ids of the records written before it whose
    # term hashes match its terms (what any policy that evicted one regrets), and those
    # of them the real policy had evicted by then (what a policy that kept one saved).
    steps: list[
        tuple[
            datetime,
            int,
            list[RecordHistory],
            list[RecordHistory],
            bool,
            list[tuple[Search, tuple[int, ...], tuple[int, ...]]],
        ]
    ]


def prepare(
    records: Sequence[RecordHistory], searches: Sequence[Search], start: datetime, end: datetime
) -> Prepared:
    touches: dict[int, list[datetime]] = defaultdict(list)
    for s in searches:
        for i in s.record_ids:
            touches[i].append(s.at)
    initial: list[tuple[pure.Record | None, RecordHistory, int, datetime | None]] = []
    writes: dict[datetime, list[RecordHistory]] = defaultdict(list)
    removals: dict[datetime, list[RecordHistory]] = defaultdict(list)
    enforce_at: set[datetime] = set()
    evicted: dict[datetime, list[tuple[int, str]]] = defaultdict(list)
    for r in records:
        if r.removed_at is not None and r.removed_at < start:
            continue
        if r.created_at >= end:
            continue
        if r.created_at < start:
            touched = touches.get(r.id, ())
            # Searches at ``start`` are replayed (``start <= s.at``): their touches are
            # after the state at the start, not in it.
            later = sum(1 for at in touched if start <= at <= r.known_at)
            before = max((at for at in touched if at < start), default=None)
            fixed = r.last_accessed_at < start or not later
            state = (
                _record(r, r.last_accessed_at, max(0, r.hits - later), r.importance)
                if fixed
                else None
            )
            initial.append((state, r, later, before))
        else:
            writes[r.created_at].append(r)
            if not r.as_it_stands:
                enforce_at.add(r.created_at)
        if r.removed_at is not None and r.removed_at < end:
            if r.removed_reason in POLICY_REASONS:
                enforce_at.add(r.removed_at)
                evicted[r.removed_at].append((r.id, r.removed_reason))
            else:
                removals[r.removed_at].append(r)
    matcher = _Matcher(
        r
        for r in records
        if r.term_hashes and r.created_at < end and (r.removed_at is None or r.removed_at >= start)
    )
    by_moment: dict[datetime, list[tuple[Search, tuple[int, ...], tuple[int, ...]]]] = defaultdict(
        list
    )
    for s in searches:
        if start <= s.at < end:
            matched = matcher.matching(s)
            really = tuple(
                r.id
                for r in matched
                if r.removed_reason in REGRET_REASONS and r.removed_at < s.at  # type: ignore[operator]
            )
            by_moment[s.at].append((s, tuple(r.id for r in matched), really))
    n_days = window_days(start, end)
    steps = [
        (
            t,
            min((t - start) // ONE_DAY, n_days - 1),
            removals.get(t, []),
            writes.get(t, []),
            t in enforce_at,
            by_moment.get(t, []),
        )
        for t in sorted(set(writes) | set(removals) | enforce_at | set(by_moment))
    ]
    return Prepared(start, end, touches, dict(evicted), initial, steps)


def replay_prepared(
    prep: Prepared, schedule: Schedule, paired: Sequence[bool] | None = None
) -> UserResult:
    """``replay_user`` of a prepared history under ``schedule``; ``paired``: the
    ``regretted`` flags of another replay of it (the policy that ran), to count the
    searches only one of the two regrets."""
    start, end, touches = prep.start, prep.end, prep.touches
    live = Live()
    at_start = schedule.at(start)
    for entry in prep.initial:
        live.add(_initial_state(entry, schedule), start, at_start)
    # One policy for the whole window (every candidate): no look-up per moment.
    fixed = at_start if len(schedule.changes) == 1 else None
    n_days = window_days(start, end)
    days = [DayStats() for _ in range(n_days)]
    result = UserResult(days)
    evicted = result.evicted
    regretted_flags = result.regretted
    evicted_reason = result.reasons
    held = live.records
    next_day = 0  # days before it are closed: their records and tokens taken

    for t, d, removed, written, enforced, found in prep.steps:
        while next_day < d:  # a day closes at its end: before anything at that moment
            days[next_day].records, days[next_day].tokens = len(held), live.tokens
            next_day += 1
        day = days[d]
        for r in removed:
            live.remove(r.id)
        params = schedule.at(t) if fixed is None else fixed
        for r in written:
            if r.as_it_stands:
                live.add(_state_at(r, t, touches.get(r.id, ()), schedule), t, params)
            else:
                live.add(_fresh(r, params), t, params)
        if enforced:
            for v in live.victims(t, params):
                live.remove(v.id)
                evicted[v.id] = t
                evicted_reason[v.id] = v.reason
                day.evictions += 1
        _count_searches(day, found, evicted_reason, held, paired, regretted_flags)
        for s, _, _ in found:
            for i in s.record_ids:
                r = held.get(i)
                if r is not None:
                    live.replace(_touched(r, t))
    while next_day < n_days and start + (next_day + 1) * ONE_DAY <= end:
        days[next_day].records, days[next_day].tokens = len(held), live.tokens
        next_day += 1
    return result


def recorded(prep: Prepared) -> UserResult:
    """The figures of the policy that ran as the history has them: ``replay_prepared``
    with the evictions that happened as its victims, at the moments they happened. No
    policy is scored, so it costs a fraction of a replay; equal to the replay of the
    policy that ran whenever that replay is exact."""
    start, end = prep.start, prep.end
    held: dict[int, int] = {r.id: r.tokens for _, r, _, _ in prep.initial}  # id -> tokens
    tokens = sum(held.values())
    n_days = window_days(start, end)
    days = [DayStats() for _ in range(n_days)]
    result = UserResult(days)
    evicted_reason = result.reasons
    next_day = 0
    for t, d, removed, written, _, found in prep.steps:
        while next_day < d:
            days[next_day].records, days[next_day].tokens = len(held), tokens
            next_day += 1
        day = days[d]
        for r in removed:
            tokens -= held.pop(r.id, 0)
        for r in written:
            held[r.id] = r.tokens
            tokens += r.tokens
        for i, reason in prep.evicted.get(t, ()):
            if i in held:
                tokens -= held.pop(i)
                result.evicted[i] = t
                evicted_reason[i] = reason
                day.evictions += 1
        _count_searches(day, found, evicted_reason, held, None, result.regretted)
    while next_day < n_days and start + (next_day + 1) * ONE_DAY <= end:
        days[next_day].records, days[next_day].tokens = len(held), tokens
        next_day += 1
    return result


def _count_searches(
    day: DayStats,
    found: list[tuple[Search, tuple[int, ...], tuple[int, ...]]],
    evicted_reason: dict[int, str],
    held,
    paired: Sequence[bool] | None,
    flags: list[bool],
) -> None:
    """Count one moment's searches into ``day`` (regret, lost, saved, and the pairing
    with the policy that ran), each search's regret flag appended to ``flags``.
    ``held``: what the policy holds then (a touch changes none of it)."""
    for s, matched, really in found:
        day.searches += 1
        # A record superseded meanwhile is no loss: its slot's newer statement answers.
        day.lost += any(evicted_reason.get(i) in REGRET_REASONS for i in s.record_ids)
        day.saved += any(i in held for i in really)
        regretted = any(evicted_reason.get(i) in REGRET_REASONS for i in matched)
        day.regret += regretted
        if paired is not None:
            other = paired[len(flags)]
            day.regret_fewer += other and not regretted
            day.regret_more += regretted and not other
        flags.append(regretted)


@dataclass
class UserFigures:
    """One user's figures: per-day figures of the policy that ran and of each candidate,
    and the exactness counts of the policy that ran's replay (zero when it was not
    replayed; no record id leaves here)."""

    current: list[DayStats]
    candidates: list[list[DayStats]]
    real: int  # policy evictions in the window, really (of a checked user)
    reproduced: int
    extra: int
    checked: bool = True  # the policy that ran was replayed and compared


def replay_histories(
    records: Sequence[RecordHistory],
    searches: Sequence[Search],
    real: Schedule,
    proposed: Sequence[Schedule],
    start: datetime,
    end: datetime,
    *,
    recorded_current: bool = False,
    check: bool = True,
) -> UserFigures:
    """One user's history prepared once and replayed under each proposed schedule.

    The policy that ran: with ``recorded_current`` its figures are the history's
    (``recorded``) and it is replayed only when ``check`` asks, for the exactness counts;
    else they are its replay's (the tuner's way: every candidate is compared with a
    replay, so an inexact replay's error is on both sides)."""
    records = explained(records, searches, real)
    prepared = prepare(records, searches, start, end)
    if recorded_current:
        current = recorded(prepared)
        ran = replay_prepared(prepared, real) if check else None
    else:
        current = ran = replay_prepared(prepared, real)
    tried = [replay_prepared(prepared, s, current.regretted).days for s in proposed]
    if ran is None:
        return UserFigures(current.days, tried, 0, 0, 0, checked=False)
    # Reproduced: the same record evicted at the same moment for the same reason. The
    # same ids at other moments would count regret and held records differently.
    really = {
        r.id: (r.removed_at, r.removed_reason)
        for r in records
        if r.removed_reason in POLICY_REASONS
        and r.removed_at is not None
        and start <= r.removed_at < end
    }
    replayed = {i: (at, ran.reasons[i]) for i, at in ran.evicted.items()}
    reproduced = sum(1 for i, how in really.items() if replayed.get(i) == how)
    return UserFigures(
        current.days, tried, len(really), reproduced, len(replayed.keys() - really.keys())
    )


def explained(
    records: Sequence[RecordHistory], searches: Sequence[Search], real: Schedule
) -> list[RecordHistory]:
    """``records``, those the history cannot explain marked ``as_it_stands``.

    A record the services wrote starts fresh under the policy then in effect and moves
    only by logged touches: its last access is the later of the two. One written or
    touched some other way (data loaded straight into the database, as the demo's) has
    no write or enforcement to replay: it is replayed as it stands.
    """
    last_touch: dict[int, datetime] = {}
    for s in searches:
        for i in s.record_ids:
            if i not in last_touch or s.at > last_touch[i]:
                last_touch[i] = s.at
    out = []
    for r in records:
        fresh = pure.fresh_last_accessed(r.created_at, real.at(r.created_at))
        touched = last_touch.get(r.id)
        expected = fresh if touched is None or touched > r.known_at else max(fresh, touched)
        out.append(r if r.last_accessed_at == expected else replace(r, as_it_stands=True))
    return out


class _Matcher:
    """Which records a search's term hashes match enough (``MIN_MATCH``, or all of a
    shorter query's): an index from each hash to the records that have it."""

    def __init__(self, records) -> None:
        self._by_hash: dict[str, list[RecordHistory]] = defaultdict(list)
        for r in records:
            for h in r.term_hashes:
                self._by_hash[h].append(r)

    def matching(self, s: Search) -> list[RecordHistory]:
        """Records written before ``s`` that match its terms, oldest first."""
        if not s.term_hashes:
            return []
        needed = min(MIN_MATCH, len(s.term_hashes))
        counts: dict[int, int] = defaultdict(int)
        found: dict[int, RecordHistory] = {}
        for h in s.term_hashes:
            for r in self._by_hash.get(h, ()):
                if r.created_at < s.at:
                    counts[r.id] += 1
                    found[r.id] = r
        hits = [found[i] for i, n in counts.items() if n >= needed]
        return sorted(hits, key=lambda r: (r.created_at, r.id))


def _importance(r: RecordHistory, written_under: pure.PolicyParams) -> float:
    """The importance ``r`` is written with under ``written_under``: its own, unless the
    policy's ``information_importance`` set it and ``written_under`` has the other
    setting; then what ``records.extract.unmatched_importance`` gives with that setting
    (the information score when on, the unmatched default when off)."""
    if r.information is None or written_under.information_importance == r.informed:
        return r.importance
    return r.information if written_under.information_importance else UNMATCHED_IMPORTANCE


def _fresh(r: RecordHistory, params: pure.PolicyParams) -> pure.Record:
    return pure.Record(
        id=r.id,
        created_at=r.created_at,
        last_accessed_at=pure.fresh_last_accessed(r.created_at, params),
        hits=0,
        importance=_importance(r, params),
        pinned=r.pinned,
        tokens=r.tokens,
        due_at=r.due_at,
        slot=r.slot,
        stated_at=r.stated_at,
    )


def _state_at(
    r: RecordHistory, moment: datetime, touched: Sequence[datetime], schedule: Schedule
) -> pure.Record:
    """A record written before ``moment`` as it stood then: the touches logged between
    then and ``known_at`` taken back off its hits and last access."""
    later = sum(1 for at in touched if moment <= at <= r.known_at)
    if r.last_accessed_at < moment or not later:
        # No logged touch since explains a later access (written outside the services):
        # the record is replayed as it stands.
        last = r.last_accessed_at
    else:
        before = [at for at in touched if at < moment]
        last = max([pure.fresh_last_accessed(r.created_at, schedule.at(r.created_at)), *before])
    return pure.Record(
        id=r.id,
        created_at=r.created_at,
        last_accessed_at=last,
        hits=max(0, r.hits - later),
        importance=_importance(r, schedule.at(r.created_at)),
        pinned=r.pinned,
        tokens=r.tokens,
        due_at=r.due_at,
        slot=r.slot,
        stated_at=r.stated_at,
    )


def _initial_state(entry, schedule: Schedule) -> pure.Record:
    """``_state_at(r, start, touches, schedule)`` from what ``prepare`` kept of it."""
    state, r, later, before = entry
    written_under = schedule.at(r.created_at)
    if state is not None:
        if r.information is None:
            return state
        return _record(r, state.last_accessed_at, state.hits, _importance(r, written_under))
    last = pure.fresh_last_accessed(r.created_at, written_under)
    if before is not None and before > last:
        last = before
    return _record(r, last, max(0, r.hits - later), _importance(r, written_under))


def _record(
    r: RecordHistory, last_accessed_at: datetime, hits: int, importance: float
) -> pure.Record:
    return pure.Record(
        r.id,
        r.created_at,
        last_accessed_at,
        hits,
        importance,
        r.pinned,
        r.tokens,
        r.due_at,
        r.slot,
        r.stated_at,
    )


def _touched(r: pure.Record, t: datetime) -> pure.Record:
    # Positional, in pure.Record's field order: called once per touch per replay.
    last = r.last_accessed_at
    return pure.Record(
        r.id,
        r.created_at,
        t if t > last else last,
        r.hits + 1,
        r.importance,
        r.pinned,
        r.tokens,
        r.due_at,
        r.slot,
        r.stated_at,
    )
