"""ADK events and memory entries → candidate records, with rules applied.

One candidate per event that carries text. Compaction events are skipped: their
summary stands in for events the session still holds, and those originals are what
gets extracted. Function calls and responses are tool traffic, not memories.

Each candidate from a session carries the text of the CONTEXT_TURNS events before it
(whether or not they became records), which search indexes as its context.
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from . import plugins, slots
from . import rules as pure_rules
from .information import information_importance
from .models import ImportanceSource, MemoryRecord
from .search_text import CONTEXT_TURNS
from .storable import storable, storable_text
from .timestamps import readable

log = logging.getLogger(__name__)

# Longer texts are truncated (and say so) rather than refused: an agent turn must not
# fail because a user pasted a document. 32k characters is ~8k tokens.
MAX_CONTENT_CHARS = 32_000
TRUNCATION_MARK = " […truncated]"

ROLE_MAX = MemoryRecord._meta.get_field("role").max_length

Classifier = Callable[[str], float | None]


@dataclass(frozen=True)
class Candidate:
    """A record about to be stored: content plus the decisions the rules made."""

    dedupe_key: str | None
    session_id: str
    event_ids: tuple[str, ...]
    content: str
    author: str
    entry_timestamp: datetime | None
    importance: float
    importance_source: str
    importance_rule: str
    category: str
    pinned: bool
    tokens: int
    custom_metadata: dict = field(default_factory=dict)
    slot: str = ""  # what the text states a value of (records.slots)
    # (author, text) of the turns said just before it in its session, for search only.
    context: tuple[tuple[str, str], ...] = ()
    # When each of those turns was said (None: unknown): an erasure barrier drops the
    # turns said before it, as it drops candidates (records.erasure_guard.apply).
    context_said: tuple[datetime | None, ...] = ()
    role: str | None = None  # its content's role as stored (``content_role``)


def clean_text(text: str) -> str:
    """Make text storable everywhere (no NUL, no lone surrogates) and bounded in size."""
    text = storable_text(text)
    if len(text) > MAX_CONTENT_CHARS:
        text = text[: MAX_CONTENT_CHARS - len(TRUNCATION_MARK)] + TRUNCATION_MARK
    return text


def dedupe_key(app_name: str, user_id: str, scope: str, item_id: str, variant: int = 0) -> str:
    """Stable key of (app, user, session or 'memory', event or memory id); ``variant``
    n > 0 for the n-th other text under the same event id (see ``from_events``)."""
    parts = (app_name, user_id, scope, item_id) + ((str(variant),) if variant else ())
    raw = "\x1f".join(parts)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def memory_key(app_name: str, user_id: str, memory_id: str) -> str:
    """The dedupe key of an explicit memory entry: its own id, per user."""
    return dedupe_key(app_name, user_id, "memory", memory_id)


def content_role(content) -> str | None:
    """The role of an event's or entry's content as a record stores it: cut to ROLE_MAX
    characters and storable, as the author is; None for none (search then derives it)."""
    role = getattr(content, "role", None)
    if not isinstance(role, str) or not role:
        return None
    return storable_text(role[:ROLE_MAX])


def event_text(event) -> str:
    """The text parts of an ADK event, joined; '' for tool traffic and compaction events."""
    actions = getattr(event, "actions", None)
    if actions is not None and getattr(actions, "compaction", None) is not None:
        return ""
    content = getattr(event, "content", None)
    if content is None or not content.parts:
        return ""
    texts = [p.text for p in content.parts if p.text and not getattr(p, "thought", False)]
    return "\n".join(t for t in texts if t.strip())


def turn_text(event) -> str:
    """The text of an event that is a turn of the conversation; '' for a partial event,
    tool traffic or a compaction. What the extractor stores and reads as context."""
    if getattr(event, "partial", False):
        return ""
    return event_text(event)


def _turn(event) -> tuple[str, str, str, datetime | None] | None:
    """(text, author, cleaned text, when said) of a turn (``turn_text``), else None."""
    text = turn_text(event)
    if not text:
        return None
    author = storable_text((event.author or "")[:256])
    return text, author, clean_text(text), readable(event.timestamp)


class Extractor:
    """Applies rules (and the optional classifier) to text; counts tokens."""

    def __init__(
        self,
        rules: Sequence[pure_rules.Rule],
        count_tokens: Callable[[str], int],
        classifier: Classifier | None = None,
        *,
        information: bool = False,
    ) -> None:
        self.rules = tuple(rules)
        self.count_tokens = count_tokens
        self.classifier = classifier
        self.information = information  # PolicyParams.information_importance

    def _candidate(self, text: str, **fields) -> Candidate | None:
        text = clean_text(text)
        decision = pure_rules.decide(text, self.rules)
        if decision.drop:
            return None
        importance, source, rule = decision.importance, ImportanceSource.RULE, decision.rule
        if importance is None:
            importance, source, rule = self._classify(text)
        overrides = fields.pop("overrides", {})
        pinned = decision.pinned
        if "importance" in overrides:
            importance, source, rule = overrides["importance"], ImportanceSource.CALLER, "caller"
        if "pinned" in overrides:
            pinned = overrides["pinned"]
        return Candidate(
            content=text,
            importance=importance,
            importance_source=source,
            importance_rule=rule,
            category=decision.category,
            pinned=pinned,
            tokens=self.count_tokens(text),
            slot=slots.slot_of(text),
            **fields,
        )

    def _classify(self, text: str) -> tuple[float, str, str]:
        if self.classifier is not None:
            try:
                value = self.classifier(text)
            except Exception as exc:  # a broken classifier must not lose the memory
                log.error(
                    "importance classifier failed: %s; using the default importance",
                    plugins.failure(exc),
                )
                value = None
            if value is not None:
                value = float(value)
                if 0.0 <= value <= 1.0:
                    return value, ImportanceSource.CLASSIFIER, "classifier"
                log.warning("importance classifier returned %r, outside 0..1; ignored", value)
        return unmatched_importance(text, information=self.information)

    def from_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: Iterable,
        preceding: Iterable = (),
    ) -> list[Candidate]:
        """``preceding``: the session's events said before ``events`` (a batch of a
        session, ``add_events_to_memory``), read for the first candidates' context only."""
        out = []
        before: deque[tuple[str, str, datetime | None]] = deque(maxlen=CONTEXT_TURNS)
        for event in preceding:
            turn = _turn(event)
            if turn is not None:
                before.append(turn[1:])
        # A session may hold two events with one id and different texts (a re-delivery
        # is stored once, a different event is stored): each text keeps a key of its
        # own, the first the id's, so neither is taken for a duplicate of the other.
        # Counted within this call: a whole session's ingest (the sweeper's, at the
        # latest) sees every text; a batch holding only the later text does not.
        texts_of: dict[str, list[str]] = {}
        for event in events:
            turn = _turn(event)
            if turn is None:
                continue
            text, author, cleaned, said = turn
            # As the session service stores it, so a batch and a later whole-session
            # ingest key the event alike.
            event_id = storable_text(event.id or "")
            context = tuple((a, t) for a, t, _ in before)
            context_said = tuple(at for _, _, at in before)
            before.append((author, cleaned, said))
            key = None
            if event_id:
                texts = texts_of.setdefault(event_id, [])
                if cleaned not in texts:
                    texts.append(cleaned)
                key = dedupe_key(app_name, user_id, session_id, event_id, texts.index(cleaned))
            candidate = self._candidate(
                text,
                dedupe_key=key,
                session_id=storable_text(session_id[:256]),
                event_ids=(event_id,) if event_id else (),
                author=author,
                role=content_role(event.content),
                entry_timestamp=said,
                context=context,
                context_said=context_said,
            )
            if candidate is not None:
                out.append(candidate)
        return out

    def from_memories(
        self, app_name: str, user_id: str, memories: Iterable, metadata: Mapping | None
    ) -> list[Candidate]:
        overrides = memory_overrides(metadata or {})
        session_id = metadata_session_id(metadata or {})
        out = []
        for memory in memories:
            parts = (memory.content.parts or []) if memory.content else []
            text = "\n".join(p.text for p in parts if p.text and p.text.strip())
            if not text:
                continue
            candidate = self._candidate(
                text,
                dedupe_key=memory_key(app_name, user_id, memory.id) if memory.id else None,
                session_id=session_id,
                event_ids=(),
                author=storable_text((memory.author or "")[:256]),
                role=content_role(memory.content),
                entry_timestamp=_parse_iso(memory.timestamp),
                custom_metadata=_json_safe(memory.custom_metadata),
                overrides=overrides,
            )
            if candidate is not None:
                out.append(candidate)
        return out


INFORMATION_RULE = "information"


def follows_information(source: str, rule: str) -> bool:
    """Whether a record's importance is ``unmatched_importance``'s, so the policy's
    ``information_importance`` set it (no rule, classifier, caller or staff did). In SQL:
    ``records.store._pg_evict``."""
    return source == ImportanceSource.DEFAULT and rule in ("", INFORMATION_RULE)


def unmatched_importance(text: str, *, information: bool) -> tuple[float, str, str]:
    """(importance, source, rule) of text no rule matches and no classifier scored."""
    if information:
        return information_importance(text), ImportanceSource.DEFAULT, INFORMATION_RULE
    return pure_rules.UNMATCHED_IMPORTANCE, ImportanceSource.DEFAULT, ""


def memory_overrides(metadata: Mapping) -> dict:
    """``importance`` (0..1) and ``pinned`` (bool) a caller may set on add_memory."""
    out = {}
    if "importance" in metadata:
        value = metadata["importance"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(
                f"custom_metadata['importance'] must be a number in 0..1, not {value!r}"
            )
        out["importance"] = float(value)
    if "pinned" in metadata:
        if not isinstance(metadata["pinned"], bool):
            raise ValueError("custom_metadata['pinned'] must be true or false")
        out["pinned"] = metadata["pinned"]
    return out


def metadata_session_id(metadata: Mapping) -> str:
    """The session an add_memory call names in ``custom_metadata['session_id']``, as
    stored ('' for none); a ValueError for anything but a string."""
    value = metadata.get("session_id")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(
            f"custom_metadata['session_id'] must be a string, not {type(value).__name__}"
        )
    return storable_text(value[:256])


def _parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if not parsed.tzinfo:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # before year 1 (or after 9999) in UTC: no database holds it
        return None


def _json_safe(metadata: Mapping | None) -> dict:
    """An entry's ``custom_metadata`` as JSON (what JSON cannot hold as its text); a
    ValueError, not a silent ``{}``, for metadata no JSON holds (circular, or nested past
    Python's recursion limit): dropping every key of it would lose the entry's own."""
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    if not metadata:
        return {}
    try:
        return storable(dict(to_jsonable_python(dict(metadata), fallback=str)), what="metadata")
    except (RecursionError, ValueError, PydanticSerializationError) as exc:
        raise ValueError(
            "custom_metadata cannot be stored as JSON (circular, nested too deep, or a "
            f"NaN or infinite number): {type(exc).__name__}"
        ) from None
