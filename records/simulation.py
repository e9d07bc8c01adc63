"""Whether this context is a dry-run: ingest and enforcement run on the database inside a
transaction that is then rolled back (``sweeper``'s previews)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_simulated: ContextVar[bool] = ContextVar("memadmin_simulated", default=False)


@contextmanager
def simulation() -> Iterator[None]:
    """For a dry-run. What ingest and enforcement do outside the database is left out,
    since what they count or send never happened: the records sent to the embedder, the
    texts sent to a plugged-in summariser (``records.summaries``), the touch buffer's and
    the metrics' counts. A plugged-in importance classifier is still called on a sweep
    dry-run's texts: the importance it gives decides the victims the plan shows."""
    token = _simulated.set(True)
    try:
        yield
    finally:
        _simulated.reset(token)


def active() -> bool:
    return _simulated.get()
