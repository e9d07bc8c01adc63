import asyncio

from asgiref.sync import sync_to_async
from django.db import connections

from records import aio


def run(coro):
    """asyncio.run for tests, closing the DB connections ADK calls opened in the ORM thread
    and the loop's own (``records.aio``): otherwise PostgreSQL refuses to drop the test
    database."""

    async def wrapper():
        try:
            return await coro
        finally:
            await aio.close()
            await sync_to_async(connections.close_all)()

    return asyncio.run(wrapper())
