"""Replaying users on several processes: the same pure replay, one user per call.

Only the command line and the bench use more than one process. A Celery prefork worker
is daemonic and may not start child processes, so there (and wherever ``fork`` is not
available) ``Replayer`` replays in the calling process, whatever ``workers`` says. The
children only replay: they get each user's records and searches and send back per-day
totals and counts (``replay.UserFigures``); they never touch the database.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from datetime import datetime

from .replay import RecordHistory, Schedule, Search, UserFigures, replay_histories

# The schedules and window of the replay in progress, set before the pool forks so
# that the children inherit them instead of receiving them with every user.
_JOB: tuple[Schedule, Sequence[Schedule], datetime, datetime] | None = None


def _replay(item: tuple[Sequence[RecordHistory], Sequence[Search]]) -> UserFigures:
    real, proposed, start, end = _JOB  # type: ignore[misc]
    records, searches = item
    return replay_histories(records, searches, real, proposed, start, end)


def usable_workers(workers: int) -> int:
    """``workers`` where child processes can be started, else 1."""
    if workers <= 1 or multiprocessing.current_process().daemon:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return workers


class Replayer:
    """``map(items)``: ``replay_histories`` of each (records, searches), in order."""

    def __init__(
        self,
        real: Schedule,
        proposed: Sequence[Schedule],
        start: datetime,
        end: datetime,
        workers: int = 1,
    ) -> None:
        self.job = (real, list(proposed), start, end)
        self.workers = usable_workers(workers)
        self.pool = None

    def __enter__(self) -> Replayer:
        global _JOB
        _JOB = self.job
        if self.workers > 1:
            self.pool = multiprocessing.get_context("fork").Pool(self.workers)
        return self

    def __exit__(self, *exc) -> None:
        global _JOB
        if self.pool is not None:
            if exc[0] is None:
                self.pool.close()
            else:
                self.pool.terminate()
            self.pool.join()
            self.pool = None
        _JOB = None

    @property
    def overlaps(self) -> bool:
        """Whether ``submit`` returns before the replays are done (a pool)."""
        return self.pool is not None

    def map(self, items: list) -> list[UserFigures]:
        return self.submit(items)()

    def submit(self, items: list) -> Callable[[], list[UserFigures]]:
        """Start replaying ``items``; the call returned waits for their figures. With a
        pool the children replay while the caller reads the next batch."""
        if self.pool is None:
            done = [_replay(item) for item in items]
            return lambda: done
        job = self.pool.map_async(
            _replay, items, chunksize=max(1, len(items) // (4 * self.workers))
        )
        return job.get
