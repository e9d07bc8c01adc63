import asyncio

from asgiref.sync import sync_to_async
from django.db import connections


def run(coro):
    """asyncio.run for tests, closing the DB connections ADK calls opened in the ORM thread
    (otherwise PostgreSQL refuses to drop the test database; records.aio's idle ones are
    closed after each test by conftest)."""

    async def wrapper():
        try:
            return await coro
        finally:
            await sync_to_async(connections.close_all)()

    return asyncio.run(wrapper())
