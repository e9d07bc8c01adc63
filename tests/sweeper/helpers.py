"""Builders for sweeper tests: sessions with events and artifacts, through our services."""

import time
from datetime import UTC, datetime, timedelta

from google.genai import types

from records import artifacts, sessions
from records.models import AgentSession, MemoryRecord

from ..records.factories import text_event


def make_session(app, user, sid, texts, *, idle_days=0.0, artifact=True, now=None):
    """A stored session whose last event is ``idle_days`` old, with one session artifact."""
    now = now or time.time()
    start = now - idle_days * 86400 - 60
    session = sessions.create_session(app_name=app, user_id=user, session_id=sid, now=start)
    for i, text in enumerate(texts):
        sessions.append_event(session, text_event(text, id=f"{sid}-e{i}", ts=start + i + 1))
    if artifact:
        artifacts.save_artifact(
            app_name=app,
            user_id=user,
            session_id=sid,
            filename="receipt.txt",
            artifact=types.Part.from_bytes(data=b"r", mime_type="text/plain"),
        )
    return session


def record_counts():
    return {
        "records": MemoryRecord.objects.count(),
        "sessions": AgentSession.objects.count(),
    }


def dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


DAY = timedelta(days=1)
