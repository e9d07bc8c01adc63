"""Bad input at every edge: a clear error or a documented handling, never half a write."""

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticError

from records import artifacts, search, sessions, store
from records.extract import MAX_CONTENT_CHARS, Extractor
from records.memory_service import add_events, add_session
from records.models import AgentSession, MemoryRecord, Policy, SessionEvent
from records.policies import update_policy
from records.rules import DEFAULT_RULES
from records.tokens import count_tokens

from ..records.factories import session, text_event

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
pytestmark = pytest.mark.django_db


def test_malformed_adk_events_are_refused_before_anything_is_stored():
    from google.adk.events.event import Event

    with pytest.raises(PydanticError):
        Event.model_validate({"author": "user", "content": {"parts": "not a list"}})
    with pytest.raises(TypeError, match="Event"):
        add_events("app", "u", [{"id": "e1", "author": "user"}], NOW)
    s = sessions.create_session(app_name="app", user_id="u", session_id="s")
    with pytest.raises((ValueError, PydanticError)):
        sessions.append_event(s, text_event("x", id="e" * 500))  # id longer than its column
    assert SessionEvent.objects.count() == 0 and MemoryRecord.objects.count() == 0


@pytest.mark.parametrize("size", [1_000_000, 3_000_000])
def test_megabytes_of_content_are_stored_in_the_session_and_truncated_as_a_memory(size):
    text = "My name is Ana. " + "x" * size
    s = sessions.create_session(app_name="app", user_id="u", session_id="s")
    sessions.append_event(s, text_event(text, id="big"))
    stored = sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored.events[0].content.parts[0].text == text  # the session keeps it whole
    add_session(stored, NOW)
    [record] = MemoryRecord.objects.all()
    assert len(record.content) == MAX_CONTENT_CHARS and record.content.endswith("truncated]")
    assert record.tokens == count_tokens(record.content)


def test_nul_and_invalid_unicode_are_stored_as_replacement_characters_everywhere():
    s = sessions.create_session(
        app_name="app", user_id="u", session_id="s", state={"note": "a\x00b"}
    )
    sessions.append_event(s, text_event("I am allergic to \x00latex \ud800!", id="e1"))
    stored = sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored.events[0].content.parts[0].text == "I am allergic to \ufffdlatex \ufffd!"
    assert stored.state["note"] == "a\ufffdb"
    add_session(stored, NOW)
    assert MemoryRecord.objects.get().content == "I am allergic to \ufffdlatex \ufffd!"
    from google.genai import types

    artifacts.save_artifact(
        app_name="app",
        user_id="u",
        session_id="s",
        filename="n.txt",
        artifact=types.Part(text="x\x00y"),
    )
    part = artifacts.load_artifact(app_name="app", user_id="u", session_id="s", filename="n.txt")
    assert part.text == "x\ufffdy"


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_importance_out_of_range_is_refused(value):
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from records.memory_service import add_memories

    with pytest.raises(ValueError, match="importance"):
        add_memories(
            "app",
            "u",
            [MemoryEntry(content=types.Content(parts=[types.Part(text="Prefers aisle seats")]))],
            NOW,
            {"importance": value},
        )
    assert MemoryRecord.objects.count() == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"max_records": -1},
        {"ttl_days": 0},
        {"half_life_hours": -5},
        {"w_recency": 0.9},
        {"w_recency": 1e-9, "w_frequency": 0.2, "w_importance": 0.8 - 1e-9},
        {"saturation_hits": 0},
    ],
)
def test_policy_values_out_of_range_are_refused_and_change_nothing(changes):
    update_policy("app", {"max_records": 100})
    with pytest.raises(ValidationError):
        update_policy("app", changes)
    assert Policy.objects.get(app_name="app").version == 2


def test_unknown_apps_and_users_are_empty_not_errors():
    assert search.search("nobody-app", "nobody", "anything", NOW) == []
    assert store.enforce("nobody-app", "nobody", NOW) == []
    assert sessions.get_session(app_name="nobody-app", user_id="x", session_id="y") is None
    assert store.delete_records("nobody-app", "nobody", NOW) == 0


def test_duplicate_ids_follow_adk_and_never_duplicate_memories():
    from google.adk.errors.already_exists_error import AlreadyExistsError

    sessions.create_session(app_name="app", user_id="u", session_id="s")
    with pytest.raises(AlreadyExistsError):
        sessions.create_session(app_name="app", user_id="u", session_id="s")
    assert AgentSession.objects.count() == 1
    for _ in range(2):  # the same event delivered in two session objects
        add_session(
            session([text_event("My name is Ana", id="e1")], app="app", user="u", id="s"), NOW
        )
    assert MemoryRecord.objects.count() == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sweep", "--as-of", "next tuesday", "--dry-run"], "ISO date"),
        (["sweep", "--as-of", "0001-01-01", "--dry-run"], "from today"),
        (["enforce", "--as-of", "9999-12-31T23:59", "--dry-run"], "ten years ahead"),
        (["sweep", "--as-of", "2027-01-01"], "with --dry-run"),
        (["sweep", "--apply", "999999"], "No run"),
        (["enforce", "--user", "u"], "--user needs --app"),
        (["rescore", "--app", ""], "app_name"),
        (["seed_demo", "--users-per-app", "-3"], "between 0 and 10000"),
    ],
)
def test_management_commands_explain_bad_arguments(args, message):
    sessions.create_session(app_name="app", user_id="u", session_id="s")  # a sweep's work
    with pytest.raises(CommandError, match=message):
        call_command(*args)


texts = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from("\x00\ud800 .!"), max_size=400
)


@given(st.lists(texts, max_size=8))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_extraction_never_fails_and_always_yields_storable_bounded_records(messages):
    extractor = Extractor(DEFAULT_RULES, count_tokens)
    events = [text_event(m, id=f"e{i}") for i, m in enumerate(messages)]
    for c in extractor.from_events("app", "u", "s", events):
        assert "\x00" not in c.content and len(c.content) <= MAX_CONTENT_CHARS
        c.content.encode("utf-8")  # no lone surrogates
        assert 0 <= c.importance <= 1 and c.tokens == count_tokens(c.content)
        assert c.dedupe_key and c.event_ids
