"""Work done after the answer: one background thread per process runs what a caller
must not wait for (a search's touches, history entry and counters: ``search.note``).

The queue is bounded: when it is full the caller runs the job itself, so a burst is
slowed, never lost. A job that raises is logged and dropped, as the caller's own write
would have been (a lost touch never fails a turn). A process killed outright loses the
jobs still queued (at most ``MAX_PENDING``, usually none: each is one Redis round trip);
a normal exit runs them first (``atexit``). A forked child starts its own thread.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable

from django.db import connections

log = logging.getLogger(__name__)

MAX_PENDING = 1_000
EXIT_WAIT_SECONDS = 5.0

_lock = threading.Lock()
_jobs: queue.Queue | None = None
_pid: int | None = None


def submit(job: Callable[..., object], *args) -> bool:
    """Run ``job(*args)`` on the background thread; False when it ran here instead
    (the queue was full)."""
    if try_submit(job, *args):
        return True
    _run(job, args)
    return False


def try_submit(job: Callable[..., object], *args) -> bool:
    """Queue ``job(*args)`` for the background thread; False, and nothing run, when the
    queue is full (a caller on an event loop then runs it in a thread of its own)."""
    try:
        _queue().put_nowait((job, args))
    except queue.Full:
        return False
    return True


def drain() -> None:
    """Wait until every job submitted so far has run (tests; shutdown)."""
    if _jobs is not None and _pid == os.getpid():
        _jobs.join()


def _queue() -> queue.Queue:
    global _jobs, _pid
    if _jobs is None or _pid != os.getpid():  # first use, or a forked child
        with _lock:
            if _jobs is None or _pid != os.getpid():
                jobs: queue.Queue = queue.Queue(MAX_PENDING)
                threading.Thread(
                    target=_work, args=(jobs,), name="memadmin-later", daemon=True
                ).start()
                _jobs, _pid = jobs, os.getpid()
    return _jobs


def _run(job, args) -> None:
    try:
        job(*args)
    except Exception:
        log.exception("background job %s failed; dropped", getattr(job, "__name__", job))


def _work(jobs: queue.Queue) -> None:
    while True:
        job, args = jobs.get()
        try:
            _run(job, args)
        finally:
            # A job's database writes (a search's history when Redis failed) open this
            # thread's own connection: closed at once, never left idle in the thread.
            connections.close_all()
            jobs.task_done()


@atexit.register
def _run_the_rest() -> None:
    if _jobs is not None and _pid == os.getpid():
        done = threading.Event()
        threading.Thread(target=lambda: (_jobs.join(), done.set()), daemon=True).start()
        done.wait(EXIT_WAIT_SECONDS)
