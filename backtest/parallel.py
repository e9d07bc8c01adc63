"""Replaying users on several processes: the same pure replay, the figures summed.

Only the command line and the bench use more than one process. A Celery prefork worker
is daemonic and may not start child processes, so there (wherever ``fork`` is not
available, and inside a transaction, whose rows other connections cannot see)
``Replayer`` reads and replays in the calling process, whatever ``workers`` says.

With a pool, each child reads the histories of its own batch of users on a connection
of its own, replays them and sends back only their summed per-day figures and counts
(``Figures``). The parent reads no history (only the users and the policy's versions,
before the fork): before, it read and pickled every user's history for the children,
20 ms of its CPU per user, which made two processes little faster than one. A child
that dies ends the run with ``ReplayerDied``, never a wait for figures that will not
come. The figures are sums of whole numbers, so the order the batches finish
in does not change them.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.util
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime

from django.db import connections

from . import history
from .replay import DayStats, Schedule, UserFigures, replay_histories, window_days


@dataclass(frozen=True)
class Job:
    """What every replay of a run shares: the window, the history's reach and the
    schedules (the policy that ran, then each candidate)."""

    app_name: str
    start: datetime
    end: datetime
    since: datetime  # searches logged from here on (the history's retention)
    now: datetime
    real: Schedule
    proposed: Sequence[Schedule]
    # The policy that ran: its figures from the history (``replay.recorded``) rather
    # than its replay, which then runs only for the users in ``checked`` (None: all).
    recorded_current: bool = False
    checked: frozenset[str] | None = None

    def check(self, user_id: str) -> bool:
        """Whether the policy that ran is replayed for this user, to check exactness."""
        return not self.recorded_current or self.checked is None or user_id in self.checked

    @property
    def days(self) -> int:
        return window_days(self.start, self.end)


@dataclass
class Figures:
    """Some users' replays added up: per-day figures of the policy that ran and of each
    candidate, and the exactness counts (of the ``checked`` users). No user id."""

    current: list[DayStats]
    candidates: list[list[DayStats]]
    users: int = 0
    real: int = 0
    reproduced: int = 0
    extra: int = 0
    without_metadata: int = 0
    checked: int = 0

    @classmethod
    def empty(cls, job: Job) -> Figures:
        return cls(
            [DayStats() for _ in range(job.days)],
            [[DayStats() for _ in range(job.days)] for _ in job.proposed],
        )

    def add_user(self, user: UserFigures, missing: int) -> None:
        """One user's replays, and its evictions from before the history was kept."""
        self.add(
            Figures(
                user.current,
                user.candidates,
                1,
                user.real,
                user.reproduced,
                user.extra,
                missing,
                int(user.checked),
            )
        )

    def add(self, other: Figures) -> None:
        for total, day in zip(self.current, other.current, strict=True):
            total.add(day)
        for totals, days in zip(self.candidates, other.candidates, strict=True):
            for total, day in zip(totals, days, strict=True):
                total.add(day)
        self.users += other.users
        self.real += other.real
        self.reproduced += other.reproduced
        self.extra += other.extra
        self.without_metadata += other.without_metadata
        self.checked += other.checked


def _replayed(job: Job, user_ids: Sequence[str]) -> Iterator[tuple[UserFigures, int]]:
    """Each user's figures and evictions without replay metadata, read and replayed here."""
    for user, records, searches, missing in history.user_histories(
        job.app_name, user_ids, job.start, job.since, job.now
    ):
        figures = replay_histories(
            records,
            searches,
            job.real,
            job.proposed,
            job.start,
            job.end,
            recorded_current=job.recorded_current,
            check=job.check(user),
        )
        yield figures, missing


# The run in progress, set before the pool forks so that the children inherit it.
_JOB: Job | None = None


def _replay_batch(user_ids: Sequence[str]) -> Figures:
    """In a child: read and replay one batch of users, on the child's own connection."""
    total = Figures.empty(_JOB)  # type: ignore[arg-type]
    for user, missing in _replayed(_JOB, user_ids):  # type: ignore[arg-type]
        total.add_user(user, missing)
    return total


def usable_workers(workers: int) -> int:
    """``workers`` where child processes can be started and can read what this process
    sees, else 1."""
    if workers <= 1 or multiprocessing.current_process().daemon:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if _in_transaction():  # uncommitted rows: only this connection sees them
        return 1
    return workers


def _in_transaction() -> bool:
    """Whether any open connection of this thread is inside a transaction (an atomic
    block, or autocommit turned off): closing it for the fork would roll it back."""
    return any(
        c.in_atomic_block or (c.connection is not None and not c.autocommit)
        for c in connections.all(initialized_only=True)
    )


def batch_size(users: int, workers: int) -> int:
    """Users per child's read: some four batches per process, so that the processes
    finish together, and at most ``history.USER_BATCH`` (what a read holds)."""
    return max(1, min(history.USER_BATCH, math.ceil(users / (4 * workers))))


class ReplayerDied(RuntimeError):
    """A child process stopped before sending its figures (killed, out of memory)."""


def _child_started() -> None:
    # The child's own connection, closed when it exits rather than dropped.
    multiprocessing.util.Finalize(None, connections.close_all, exitpriority=10)


class Replayer:
    """``replay_into(total, user_ids)``: the users' figures added to ``total`` as they
    are replayed (a user at a time in this process, a batch at a time from a pool)."""

    def __init__(self, job: Job, workers: int = 1) -> None:
        self.job = job
        self.workers = usable_workers(workers)
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Replayer:
        global _JOB
        _JOB = self.job
        return self

    def __exit__(self, *exc) -> None:
        global _JOB
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        _JOB = None

    def replay_into(self, total: Figures, user_ids: Sequence[str]) -> Iterator[int]:
        """Yields the number of users added so far, after each user or batch. With a pool
        this closes the calling thread's database connections (see ``_fork``)."""
        if self.workers == 1 or not user_ids:
            for user, missing in _replayed(self.job, user_ids):
                total.add_user(user, missing)
                yield total.users
            return
        size = batch_size(len(user_ids), self.workers)
        pool = self._fork()
        batches = [
            pool.submit(_replay_batch, user_ids[i : i + size])
            for i in range(0, len(user_ids), size)
        ]
        try:
            for batch in as_completed(batches):
                total.add(batch.result())
                yield total.users
        except BrokenProcessPool as exc:
            raise ReplayerDied(
                "A process replaying users stopped before it finished (killed, or out of "
                "memory?): nothing was reported. Run again, with fewer workers if memory "
                "is short."
            ) from exc

    def _fork(self) -> ProcessPoolExecutor:
        # A forked child must not use the parent's connection (one server session, two
        # clients): closed just before the children fork (at the first submit, with
        # "fork"), each process opens its own when it next reads.
        connections.close_all()
        self.pool = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_child_started,
        )
        return self.pool
