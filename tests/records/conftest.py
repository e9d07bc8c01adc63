import asyncio

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
