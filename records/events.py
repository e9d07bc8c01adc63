"""Reading stored ADK events (``SessionEvent.data``) for people. Pure: JSON in, views out.

Events are stored as ADK dumps them; both snake_case (model_dump) and camelCase
(by_alias) keys are read, so events written by either path display the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from .timestamps import readable


@dataclass(frozen=True)
class Compaction:
    """A summary event: the range of events it stands for in prompts (they stay stored)."""

    start: datetime | None
    end: datetime | None
    texts: list[str]


@dataclass(frozen=True)
class EventView:
    event_id: str
    author: str
    timestamp: datetime | None
    invocation_id: str = ""
    texts: list[str] = field(default_factory=list)
    # (function name, arguments or response as indented JSON text)
    calls: list[tuple[str, str]] = field(default_factory=list)
    responses: list[tuple[str, str]] = field(default_factory=list)
    compaction: Compaction | None = None
    state_keys: list[str] = field(default_factory=list)


def _get(d, *keys, default=None):
    if not isinstance(d, dict):
        return default
    for key in keys:
        if key in d:
            return d[key]
    return default


def _json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _texts(content) -> list[str]:
    parts = _get(content, "parts", default=[]) or []
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


def describe_event(data: dict) -> EventView:
    content = _get(data, "content", default={}) or {}
    parts = [p for p in (_get(content, "parts", default=[]) or []) if isinstance(p, dict)]
    calls, responses = [], []
    for part in parts:
        call = _get(part, "function_call", "functionCall")
        if isinstance(call, dict):
            calls.append((str(call.get("name", "")), _json(call.get("args", {}))))
        response = _get(part, "function_response", "functionResponse")
        if isinstance(response, dict):
            responses.append((str(response.get("name", "")), _json(response.get("response", {}))))
    actions = _get(data, "actions", default={}) or {}
    compaction = None
    raw = _get(actions, "compaction")
    if isinstance(raw, dict):
        compaction = Compaction(
            start=readable(_get(raw, "start_timestamp", "startTimestamp")),
            end=readable(_get(raw, "end_timestamp", "endTimestamp")),
            texts=_texts(_get(raw, "compacted_content", "compactedContent", default={})),
        )
    state_delta = _get(actions, "state_delta", "stateDelta", default={}) or {}
    return EventView(
        event_id=str(_get(data, "id", default="")),
        author=str(_get(data, "author", default="")),
        timestamp=readable(_get(data, "timestamp")),
        invocation_id=str(_get(data, "invocation_id", "invocationId", default="")),
        texts=_texts(content),
        calls=calls,
        responses=responses,
        compaction=compaction,
        state_keys=sorted(str(k) for k in state_delta) if isinstance(state_delta, dict) else [],
    )
