import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connections


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def close_executor_connections():
    """Close the database connections our async services opened in asgiref's executor.

    ``sync_to_async`` runs the ORM in one long-lived thread with its own connection;
    left open, it would outlive the test (and block dropping the PostgreSQL test
    database at the end of the run).
    """
    yield
    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())


@pytest.fixture
def run_in_threads():
    """run_in_threads([work, ...]): each callable in its own thread with its own connection."""

    def run(workers):
        """Start every worker at once (a barrier, not sleeps) and re-raise the first error."""
        barrier = threading.Barrier(len(workers))
        errors = []

        def wrap(work):
            try:
                barrier.wait(timeout=30)
                work()
            except BaseException as exc:  # re-raised in the test's thread below
                errors.append(exc)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a worker hung"
        if errors:
            raise errors[0]

    return run
