"""Backtest a candidate policy against an app's access history. Reads only.

``run`` replays the window for every user under the candidate, and compares it with
what the policy that ran did, as the history records it (``replay.recorded``). The
candidate's figures are only as good as the replay: replaying the policy that ran must
evict what really was evicted, and ``Report.exactness`` says whether it did, on up to
``CHECKED_USERS`` users spread over the app (every user of a smaller app).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime

from django import forms
from django.db import models

from records import access_log
from records import policy as pure
from records.models import POLICY_FIELDS, Policy, preset_values
from records.selectors.apps import UnknownApp, check_known_app

from . import history, parallel
from .replay import ONE_DAY, DayStats, Schedule

# Users whose replay of the policy that ran is compared with what it did. Replaying it
# for every user took half a backtest's time; a few hundred users spread over the app
# find a replay that is not exact as surely in practice.
CHECKED_USERS = 500


class BacktestError(ValueError):
    """Input a backtest cannot run with; the message says what to change."""


@dataclass
class DayRow:
    day: date
    current: DayStats
    candidate: DayStats


@dataclass
class Exactness:
    """The replay of the policy that ran against the evictions that happened."""

    real: int = 0  # policy evictions in the window with replay metadata
    reproduced: int = 0  # of those, evicted by the replay too, at that moment, for that reason
    extra: int = 0  # evicted by the replay, not in reality
    without_metadata: int = 0  # evictions from before the history was kept
    checked_users: int = 0  # users whose replay was compared (real .. extra are theirs)

    @property
    def exact(self) -> bool:
        return self.reproduced == self.real and self.extra == 0 and not self.without_metadata


@dataclass
class Report:
    app_name: str
    start: datetime
    end: datetime
    candidate: dict
    users: int
    days: list[DayRow]
    exactness: Exactness
    policy_changes: list[tuple[datetime, int]] = field(default_factory=list)

    def totals(self) -> tuple[DayStats, DayStats]:
        current, candidate = DayStats(), DayStats()
        for row in self.days:
            current.add(row.current)
            candidate.add(row.candidate)
        if self.days:  # held: at the end, not a sum
            last = self.days[-1]
            current.records, current.tokens = last.current.records, last.current.tokens
            candidate.records, candidate.tokens = last.candidate.records, last.candidate.tokens
        return current, candidate

    def as_json(self) -> dict:
        current, candidate = self.totals()
        return {
            "app": self.app_name,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "candidate": self.candidate,
            "users": self.users,
            "exact": self.exactness.exact,
            "exactness": asdict(self.exactness),
            "policy_changes": [
                {"at": at.isoformat(), "version": v} for at, v in self.policy_changes
            ],
            "totals": {"current": asdict(current), "candidate": asdict(candidate)},
            "days": [
                {
                    "day": row.day.isoformat(),
                    "current": asdict(row.current),
                    "candidate": asdict(row.candidate),
                }
                for row in self.days
            ],
        }


_CandidateForm = forms.modelform_factory(Policy, fields=POLICY_FIELDS)


# Policy fields no replay changes (``replay``: records removed for reasons no policy
# decides go when they really went): a candidate setting them would report the same
# figures under another name.
NOT_REPLAYED = frozenset({"session_idle_days", "summarise", "summarise_min_cluster"})


def candidate_policy(
    app_name: str, *, preset: str | None = None, values: Mapping[str, str] | None = None
) -> Policy:
    """The app's current policy with a preset's scoring and ``values`` on top, validated
    as a policy change is (the Policies form's rules); never saved."""
    current = Policy.objects.filter(app_name=app_name).first() or Policy(app_name=app_name)
    data = current.snapshot()
    if preset:
        try:
            data.update(preset_values(preset))
        except pure.PolicyError as exc:
            raise BacktestError(str(exc)) from exc
    unknown = sorted(set(values or {}) - set(POLICY_FIELDS))
    if unknown:
        raise BacktestError(
            f"Unknown policy field(s): {', '.join(unknown)}; the fields are "
            f"{', '.join(POLICY_FIELDS)}."
        )
    unreplayed = sorted(set(values or {}) & NOT_REPLAYED)
    if unreplayed:
        raise BacktestError(
            f"The replay does not model {', '.join(unreplayed)}: summaries are replayed as "
            "they happened, and a session's idleness evicts nothing. The fields it replays "
            f"are {', '.join(f for f in POLICY_FIELDS if f not in NOT_REPLAYED)}."
        )
    data.update({name: _switch(name, value) for name, value in (values or {}).items()})
    form = _CandidateForm(data=data, instance=Policy(app_name=app_name))
    if not form.is_valid():
        raise BacktestError(_sentences(form.errors))
    return form.instance


_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off"})


def _switch(name: str, value: str) -> object:
    """A yes/no field's value read strictly (the form's checkbox took any text but
    "false" as yes: "0", "no" and typos switched it on); other fields' text as given."""
    if not isinstance(Policy._meta.get_field(name), models.BooleanField):
        return value
    word = str(value).strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise BacktestError(f"{name} is a yes/no setting: give true or false, not {value!r}.")


def _sentences(errors: Mapping[str, list[str]]) -> str:
    parts = []
    for name, messages in errors.items():
        label = "" if name == "__all__" else f"{name}: "
        parts.extend(f"{label}{m}" for m in messages)
    return "Invalid candidate policy: " + " ".join(parts)


def check_window(app_name: str, days: int, now: datetime) -> tuple[datetime, datetime]:
    try:
        check_known_app(app_name)
    except UnknownApp as exc:
        raise BacktestError(str(exc)) from exc
    _check_days(days)
    start, end = _window_start(now, days), now
    if not history.has_history(app_name, start, end):
        raise BacktestError(
            f"No history for {app_name!r} in the last {days} days: no search, write or "
            "eviction to replay."
        )
    return start, end


def _check_days(days: int) -> None:
    if not isinstance(days, int) or days < 1:
        raise BacktestError("--days must be a whole number of days, at least 1.")
    kept = access_log.retention().days
    if days > kept:
        raise BacktestError(
            f"The access history keeps {kept} days (MEMADMIN_ACCESS_HISTORY_DAYS); "
            f"choose {kept} days or fewer."
        )


def _window_start(end: datetime, days: int) -> datetime:
    try:
        return end - days * ONE_DAY
    except OverflowError:
        raise BacktestError(f"{days} days before {end:%Y-%m-%d} is before year 1.") from None


def check_until(until: datetime, days: int, now: datetime) -> None:
    """A window chosen to end at ``until`` (``--until``) lies within the history kept at
    ``now``: the daily prune deletes what is older than the retention, so a window
    reaching further back would be replayed with part of its history missing."""
    _check_days(days)
    if until > now:
        raise BacktestError(
            f"--until {until:%Y-%m-%d %H:%M} UTC is in the future (now {now:%Y-%m-%d %H:%M} "
            "UTC): there is no history of it to replay."
        )
    kept = access_log.retention()
    start = _window_start(until, days)
    oldest = now - kept
    if start < oldest:
        raise BacktestError(
            f"The access history keeps {kept.days} days (MEMADMIN_ACCESS_HISTORY_DAYS), so "
            f"nothing before {oldest:%Y-%m-%d %H:%M} UTC is kept; {days} days up to "
            f"{until:%Y-%m-%d %H:%M} start at {start:%Y-%m-%d %H:%M}. Choose a later --until "
            "or fewer --days."
        )


def run(
    app_name: str,
    days: int,
    candidate: Policy,
    now: datetime,
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    until: datetime | None = None,
) -> Report:
    """Replay the last ``days`` up to ``until`` (default ``now``) under ``candidate``,
    against the policy that ran as the history records it (replayed for the exactness
    check on ``CHECKED_USERS`` users). ``now`` stays the clock: the records are read as they are
    now, and the touches logged after ``until`` are taken back off them."""
    start, end = check_window(app_name, days, now if until is None else until)
    replayed = replay(
        app_name,
        start,
        end,
        now,
        [candidate],
        progress=progress,
        workers=workers,
        check_users=CHECKED_USERS,
    )
    rows = [
        DayRow((start + i * ONE_DAY).date(), cur, cand)
        for i, (cur, cand) in enumerate(zip(replayed.current, replayed.candidates[0], strict=True))
    ]
    return Report(
        app_name=app_name,
        start=start,
        end=end,
        candidate=candidate.snapshot(),
        users=replayed.users,
        days=rows,
        exactness=replayed.exactness,
        policy_changes=[(at, v) for at, v in replayed.changes if start <= at < end],
    )


@dataclass
class Replayed:
    current: list[DayStats]
    candidates: list[list[DayStats]]
    exactness: Exactness
    users: int
    changes: list[tuple[datetime, int]]


def replay(
    app_name: str,
    start: datetime,
    end: datetime,
    now: datetime,
    candidates: Sequence[Policy],
    *,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
    user_ids: Sequence[str] | None = None,
    check_users: int | None = None,
) -> Replayed:
    """Per-day figures of the policy that ran and of each candidate; each user's history
    is read and prepared once, whatever the number of candidates. The policy that ran is
    replayed for every user, its figures its replay's (the tuner compares like with
    like), unless ``check_users`` is given: then its figures are the history's and it is
    replayed for that many users at most, evenly spread over the sorted users, for
    ``Exactness`` only. ``workers`` > 1
    reads and replays batches of users on that many processes (``parallel.Replayer``),
    outside a transaction only, and closes this thread's database connections first.
    ``user_ids``: only these users (the tuner's sample), else every user of the app."""
    proposed = []
    for candidate in candidates:
        try:
            proposed.append(Schedule.fixed(candidate.params()))
        except pure.PolicyError as exc:
            raise BacktestError(f"Invalid candidate policy: {exc}.") from exc
    real, changes = history.schedule(app_name)
    users = history.users(app_name, start) if user_ids is None else list(user_ids)
    job = parallel.Job(
        app_name=app_name,
        start=start,
        end=end,
        since=now - access_log.retention(),
        now=now,
        real=real,
        proposed=proposed,
        recorded_current=check_users is not None,
        checked=None if check_users is None else _spread(users, check_users),
    )
    total = parallel.Figures.empty(job)
    with parallel.Replayer(job, workers) as replayer:
        try:
            for done in replayer.replay_into(total, users):
                if progress is not None:
                    progress(done, len(users))
        except parallel.ReplayerDied as exc:
            raise BacktestError(str(exc)) from exc
    exactness = Exactness(
        total.real, total.reproduced, total.extra, total.without_metadata, total.checked
    )
    return Replayed(total.current, total.candidates, exactness, len(users), changes)


def _spread(users: Sequence[str], count: int) -> frozenset[str]:
    """``count`` (at least 1) of ``users`` (all when fewer), evenly spaced along their
    order (sorted by id)."""
    n = len(users)
    k = min(max(1, count), n)
    return frozenset(users[i * n // k] for i in range(k))


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``field=value`` pairs from the command line."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise BacktestError(f"--set takes field=value, not {pair!r}.")
        out[name.strip()] = value.strip()
    return out
