"""Small builders of ADK objects and records for tests."""

import itertools
import time
from datetime import timedelta

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.sessions.session import Session
from google.genai import types

from records.models import MemoryRecord

_ids = itertools.count(1)


def text_event(text, *, author="user", id=None, ts=None, partial=None):
    role = "user" if author == "user" else "model"
    return Event(
        id=id or f"ev-{next(_ids)}",
        invocation_id="inv-1",
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        timestamp=ts if ts is not None else time.time(),
        partial=partial,
    )


def tool_call_event(name="get_weather", args=None):
    return Event(
        id=f"ev-{next(_ids)}",
        invocation_id="inv-1",
        author="agent",
        content=types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name=name, args=args or {}))],
        ),
    )


def compaction_event(summary="The user discussed an order and an allergy."):
    return Event(
        id=f"ev-{next(_ids)}",
        invocation_id="inv-1",
        author="user",
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=0.0,
                end_timestamp=time.time(),
                compacted_content=types.Content(role="model", parts=[types.Part(text=summary)]),
            )
        ),
    )


def session(texts, *, app="pharmacy", user="u1", id="s1", author="user"):
    events = [text_event(t, author=author) if isinstance(t, str) else t for t in texts]
    return Session(id=id, app_name=app, user_id=user, events=events)


def make_records(
    app,
    user,
    n,
    now,
    *,
    tokens=10,
    importance=0.5,
    pinned=False,
    age=timedelta(days=1),
    accessed_ago=timedelta(days=1),
    hits=0,
    content="note {i}",
):
    objs = [
        MemoryRecord(
            app_name=app,
            user_id=user,
            content=content.format(i=i),
            created_at=now - age,
            last_accessed_at=now - accessed_ago,
            tokens=tokens,
            importance=importance,
            pinned=pinned,
            hits=hits,
        )
        for i in range(n)
    ]
    return MemoryRecord.objects.bulk_create(objs)
