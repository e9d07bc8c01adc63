"""A real history for backtests: records written, searched and evicted through the
services, on a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records import memory_service, store, touches
from records.models import Policy

APP = "shop"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
TOPICS = [
    "walnut bookshelf",
    "copper kettle",
    "linen curtains",
    "oak desk",
    "wool blanket",
    "glass teapot",
    "bamboo steamer",
    "cast iron skillet",
    "ceramic planter",
    "leather satchel",
    "marble coaster",
    "velvet cushion",
    "brass lamp",
    "cotton apron",
]


def entry(text: str) -> MemoryEntry:
    return MemoryEntry(content=types.Content(parts=[types.Part(text=text)]))


def write(user: str, text: str, at: datetime) -> None:
    memory_service.add_memories(APP, user, [entry(text)], at)


def search(user: str, query: str, at: datetime) -> list[MemoryEntry]:
    """A search, and the touch buffer's flush (with Redis) before anything else runs."""
    found = memory_service.search_entries(APP, user, query, at)
    touches.flush_touches()
    return found


def make_history(users=("u1", "u2")) -> datetime:
    """Three days of writes, searches and evictions (caps and TTL) for each user under
    a policy of 5 records and a 1-day TTL; returns the end of the history."""
    Policy.objects.create(app_name=APP, max_records=5, ttl_days=1)
    for n, user in enumerate(users):
        at = T0 + n * timedelta(minutes=7)
        for i, topic in enumerate(TOPICS):
            at += 4 * HOUR
            write(user, f"The customer ordered a {topic} number {i} for {user}", at)
            if i % 3 == 1:
                search(user, f"{TOPICS[i - 1]} order", at + HOUR)
            if i % 4 == 2:
                search(user, f"{topic} number", at + 2 * HOUR)
        # The periodic pass: expiry with no write.
        store.enforce_many(APP, [user], at + 20 * HOUR)
        search(user, f"{TOPICS[0]} order", at + 21 * HOUR)
    return T0 + 4 * timedelta(days=1)
