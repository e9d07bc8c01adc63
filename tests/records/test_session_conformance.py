"""One behavioural suite, run against ADK's InMemorySessionService and ours.

Every test taking ``service`` runs twice and must pass identically on both. Tests named
``test_ours_only_*`` cover what ADK's in-memory service does not do (stale-session
detection); ``test_adk_in_memory_*`` pins the in-memory behaviour that makes them so.
"""

import re
import time

import pytest
from google.adk.agents.base_agent import BaseAgent
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types

from records.artifact_service import DjangoArtifactService
from records.session_service import DjangoSessionService

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

APP, ALICE, BOB = "pharmacy", "alice", "bob"
# Later than any session's creation, so appended events decide last_update_time.
T = time.time() + 10_000


@pytest.fixture(params=["adk_in_memory", "django"])
def service(request):
    if request.param == "adk_in_memory":
        return InMemorySessionService()
    request.getfixturevalue("close_executor_connections")
    return DjangoSessionService()


@pytest.fixture
def django_service(close_executor_connections):
    return DjangoSessionService()


def event(text="hi", *, author="user", delta=None, ts=None, **kw) -> Event:
    if ts is not None:
        kw["timestamp"] = ts
    return Event(
        author=author,
        invocation_id=kw.pop("invocation_id", "inv-1"),
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=text)]
        ),
        actions=EventActions(state_delta=delta or {}),
        **kw,
    )


# --- create / get / list / delete ---------------------------------------------------


async def test_create_then_get_returns_the_session(service):
    created = await service.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"channel": "chat"}
    )
    assert (created.id, created.app_name, created.user_id) == ("s1", APP, ALICE)
    assert created.state == {"channel": "chat"}
    assert created.events == []

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert (got.id, got.app_name, got.user_id) == ("s1", APP, ALICE)
    assert got.state == {"channel": "chat"}
    assert got.events == []
    assert got.last_update_time == created.last_update_time


async def test_create_without_an_id_generates_distinct_ids(service):
    one = await service.create_session(app_name=APP, user_id=ALICE)
    two = await service.create_session(app_name=APP, user_id=ALICE)
    assert one.id and two.id and one.id != two.id
    assert (await service.get_session(app_name=APP, user_id=ALICE, session_id=two.id)).id == two.id


async def test_surrounding_whitespace_in_a_session_id_is_ignored(service):
    created = await service.create_session(app_name=APP, user_id=ALICE, session_id="  s1 ")
    assert created.id == "s1"
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id=" s1")
    assert got is not None and got.id == "s1"


async def test_a_duplicate_id_is_refused_and_changes_nothing(service):
    await service.create_session(app_name=APP, user_id=ALICE, session_id="s1", state={"k": 1})
    with pytest.raises(AlreadyExistsError, match="s1"):
        await service.create_session(
            app_name=APP,
            user_id=ALICE,
            session_id="s1",
            state={"k": 2, "app:motd": "x", "user:lang": "fr"},
        )
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.state == {"k": 1}
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {}
    # the same id is free for another user
    other = await service.create_session(app_name=APP, user_id=BOB, session_id="s1")
    assert other.user_id == BOB


async def test_a_missing_session_reads_as_none(service):
    await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert await service.get_session(app_name=APP, user_id=ALICE, session_id="nope") is None
    assert await service.get_session(app_name=APP, user_id=BOB, session_id="s1") is None
    assert await service.get_session(app_name="other", user_id=ALICE, session_id="s1") is None


async def test_appending_to_a_missing_session_raises_session_not_found(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.delete_session(app_name=APP, user_id=ALICE, session_id="s1")
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, event(delta={"user:lang": "fr"}))
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {}


async def test_delete_removes_only_that_session_and_is_idempotent(service):
    s1 = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.create_session(app_name=APP, user_id=ALICE, session_id="s2")
    await service.append_event(s1, event("to be deleted"))

    await service.delete_session(app_name=APP, user_id=ALICE, session_id="s1")

    assert await service.get_session(app_name=APP, user_id=ALICE, session_id="s1") is None
    assert await service.get_session(app_name=APP, user_id=ALICE, session_id="s2") is not None
    listed = await service.list_sessions(app_name=APP, user_id=ALICE)
    assert [s.id for s in listed.sessions] == ["s2"]
    # deleting again, or something that never existed, is not an error
    await service.delete_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.delete_session(app_name="other", user_id=BOB, session_id="never")
    # and the id can be used again, starting empty
    again = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert (
        await service.get_session(app_name=APP, user_id=ALICE, session_id=again.id)
    ).events == []


async def test_list_sessions_has_no_events_and_is_oldest_first(service):
    ids = {}
    for user, sid, ts in [(ALICE, "a1", T + 30), (ALICE, "a2", T + 10), (BOB, "b1", T + 20)]:
        session = await service.create_session(app_name=APP, user_id=user, session_id=sid)
        await service.append_event(session, event(ts=ts))
        ids[sid] = session
    await service.create_session(app_name="other", user_id=ALICE, session_id="elsewhere")

    everyone = await service.list_sessions(app_name=APP)
    assert [(s.user_id, s.id) for s in everyone.sessions] == [
        (ALICE, "a2"),
        (BOB, "b1"),
        (ALICE, "a1"),
    ]
    assert all(s.events == [] for s in everyone.sessions)
    assert [s.last_update_time for s in everyone.sessions] == [T + 10, T + 20, T + 30]

    alices = await service.list_sessions(app_name=APP, user_id=ALICE)
    assert [s.id for s in alices.sessions] == ["a2", "a1"]
    assert (await service.list_sessions(app_name=APP, user_id="nobody")).sessions == []
    assert (await service.list_sessions(app_name="no-such-app")).sessions == []


async def test_listed_sessions_carry_merged_state(service):
    await service.create_session(
        app_name=APP, user_id=ALICE, session_id="a1", state={"k": "a", "user:lang": "en"}
    )
    await service.create_session(
        app_name=APP, user_id=BOB, session_id="b1", state={"k": "b", "app:motd": "hello"}
    )
    by_id = {s.id: s for s in (await service.list_sessions(app_name=APP)).sessions}
    assert by_id["a1"].state == {"k": "a", "app:motd": "hello", "user:lang": "en"}
    assert by_id["b1"].state == {"k": "b", "app:motd": "hello"}


# --- state ----------------------------------------------------------------------------


async def test_state_prefixes_are_stored_apart_and_merged_on_read(service):
    created = await service.create_session(
        app_name=APP,
        user_id=ALICE,
        session_id="s1",
        state={"k": 1, "app:motd": "hi", "user:lang": "en", "temp:scratch": 4},
    )
    expected = {"k": 1, "app:motd": "hi", "user:lang": "en"}
    assert created.state == expected
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.state == expected
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {"lang": "en"}
    assert await service.get_user_state(app_name=APP, user_id=BOB) == {}


async def test_user_state_is_shared_by_the_users_sessions_only(service):
    s1 = await service.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"user:lang": "en"}
    )
    s2 = await service.create_session(app_name=APP, user_id=ALICE, session_id="s2")
    bobs = await service.create_session(app_name=APP, user_id=BOB, session_id="s3")
    assert s2.state == {"user:lang": "en"}
    assert bobs.state == {}

    await service.append_event(s2, event(delta={"user:lang": "fr", "topic": "refill"}))

    got1 = await service.get_session(app_name=APP, user_id=ALICE, session_id=s1.id)
    assert got1.state == {"user:lang": "fr"}  # "topic" is s2's own
    got3 = await service.get_session(app_name=APP, user_id=BOB, session_id=bobs.id)
    assert got3.state == {}
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {"lang": "fr"}


async def test_app_state_is_shared_across_users_of_one_app(service):
    await service.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"app:motd": "hi"}
    )
    bobs = await service.create_session(app_name=APP, user_id=BOB, session_id="s2")
    assert bobs.state == {"app:motd": "hi"}

    await service.append_event(bobs, event(delta={"app:motd": "closed today"}))

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.state == {"app:motd": "closed today"}
    elsewhere = await service.create_session(app_name="other", user_id=ALICE)
    assert elsewhere.state == {}


async def test_temp_state_reaches_the_live_session_but_is_never_stored(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    sent = event(delta={"temp:scratch": 1, "k": 2})

    returned = await service.append_event(session, sent)

    assert session.state["temp:scratch"] == 1  # readable for the rest of the invocation
    assert session.state["k"] == 2
    assert returned.actions.state_delta == {"k": 2}
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.state == {"k": 2}
    assert got.events[0].actions.state_delta == {"k": 2}


async def test_append_updates_the_callers_session_and_storage(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    sent = event(ts=T + 1, delta={"user:lang": "en", "k": "v"})

    returned = await service.append_event(session, sent)

    assert returned is sent
    assert session.events == [sent]
    assert session.last_update_time == T + 1
    assert session.state == {"user:lang": "en", "k": "v"}
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.events == [sent]
    assert got.last_update_time == T + 1
    assert got.state == {"user:lang": "en", "k": "v"}


async def test_partial_events_are_neither_stored_nor_applied(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    chunk = event("stream chunk", author="agent", partial=True, delta={"k": 1})

    assert await service.append_event(session, chunk) is chunk

    assert session.events == []
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.events == []
    assert got.state == {}


# --- GetSessionConfig -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, [1, 2, 3, 4, 5]),
        (GetSessionConfig(), [1, 2, 3, 4, 5]),
        (GetSessionConfig(num_recent_events=2), [4, 5]),
        (GetSessionConfig(num_recent_events=0), []),
        (GetSessionConfig(num_recent_events=50), [1, 2, 3, 4, 5]),
        (GetSessionConfig(after_timestamp=T + 3), [3, 4, 5]),
        (GetSessionConfig(after_timestamp=T + 2.5), [3, 4, 5]),
        (GetSessionConfig(after_timestamp=T + 99), []),
        (GetSessionConfig(after_timestamp=T), [1, 2, 3, 4, 5]),
        (GetSessionConfig(num_recent_events=4, after_timestamp=T + 3), [3, 4, 5]),
        (GetSessionConfig(num_recent_events=2, after_timestamp=T + 1), [4, 5]),
    ],
)
async def test_get_session_config_filters_events(service, config, expected):
    session = await service.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"user:lang": "en"}
    )
    for n in range(1, 6):
        await service.append_event(session, event(f"m{n}", ts=T + n))

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1", config=config)

    assert [e.content.parts[0].text for e in got.events] == [f"m{n}" for n in expected]
    assert got.state == {"user:lang": "en"}  # filtering events never hides state
    assert got.last_update_time == T + 5


async def test_events_keep_append_order_even_when_timestamps_do_not(service):
    """after_timestamp keeps what follows the newest event older than it, in append
    order (a clock that stepped back does not reorder the conversation)."""
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    for name, ts in [("a", T + 5), ("b", T + 1), ("c", T + 7), ("d", T + 4)]:
        await service.append_event(session, event(name, ts=ts))

    async def texts(config=None):
        got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1", config=config)
        return [e.content.parts[0].text for e in got.events]

    assert await texts() == ["a", "b", "c", "d"]
    assert await texts(GetSessionConfig(after_timestamp=T + 3)) == ["c", "d"]
    assert await texts(GetSessionConfig(after_timestamp=T + 4.5)) == []
    assert await texts(GetSessionConfig(num_recent_events=3, after_timestamp=T + 6)) == []
    last_update = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert last_update.last_update_time == T + 4  # the last event's, as ADK keeps it


def test_a_negative_num_recent_events_is_refused_by_adk():
    with pytest.raises(ValueError, match="num_recent_events"):
        GetSessionConfig(num_recent_events=-1)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (GetSessionConfig(after_timestamp=float("nan")), "after_timestamp must be a finite"),
        (GetSessionConfig(after_timestamp=float("inf")), "after_timestamp must be a finite"),
        (GetSessionConfig(after_timestamp=-float("inf")), "after_timestamp must be a finite"),
        # Built without ADK's validation, which refuses it.
        (GetSessionConfig.model_construct(num_recent_events=-1), "must be 0 or more, not -1"),
    ],
)
async def test_ours_only_a_filter_that_names_no_time_or_count_is_refused(
    django_service, config, message
):
    """NaN compares false with every time (PostgreSQL returned no event, SQLite all);
    ADK's database service raises on such a timestamp too."""
    session = await django_service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    await django_service.append_event(session, event("m1", ts=T + 1))

    with pytest.raises(ValueError, match=message):
        await django_service.get_session(
            app_name=APP, user_id=ALICE, session_id="s1", config=config
        )
    got = await django_service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.content.parts[0].text for e in got.events] == ["m1"]


# --- idempotent append ----------------------------------------------------------------


async def test_an_equal_redelivery_is_not_stored_twice_nor_reapplied(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    first = event("first", delta={"k": "a", "user:n": 1})
    second = event("second", delta={"k": "b", "user:n": 2})
    await service.append_event(session, first)
    await service.append_event(session, second)

    # the same object again, and an equal copy (a retried call)
    assert await service.append_event(session, first) is first
    copy = first.model_copy(deep=True)
    assert await service.append_event(session, copy) is copy

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.id for e in got.events] == [first.id, second.id]
    assert got.state == {"k": "b", "user:n": 2}  # the first delta was not applied again
    assert [e.id for e in session.events] == [first.id, second.id]


async def test_a_different_event_that_merely_shares_an_id_is_kept(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    original = event("original")
    await service.append_event(session, original)
    impostor = event("different text", id=original.id)

    await service.append_event(session, impostor)

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.content.parts[0].text for e in got.events] == ["original", "different text"]


# --- events round-trip ----------------------------------------------------------------


def conversation() -> list[Event]:
    call = types.FunctionCall(
        id="call-1", name="lookup_order", args={"order": 42, "deep": [1, {"a": None}]}
    )
    return [
        Event(
            author="user",
            invocation_id="inv-1",
            branch="root",
            content=types.Content(role="user", parts=[types.Part(text="Where is my order?")]),
            custom_metadata={"channel": "chat", "nested": {"x": [1, 2.5]}},
            timestamp=T + 1,
        ),
        Event(
            author="pharmacy_agent",
            invocation_id="inv-1",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            long_running_tool_ids={"call-1"},
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=12, candidates_token_count=3
            ),
            timestamp=T + 2,
        ),
        Event(
            author="pharmacy_agent",
            invocation_id="inv-1",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="call-1", name="lookup_order", response={"status": "shipped"}
                        )
                    )
                ],
            ),
            actions=EventActions(
                state_delta={"user:last_order": 42, "order_status": "shipped"},
                artifact_delta={"receipt.pdf": 0},
            ),
            timestamp=T + 3,
        ),
        Event(
            author="pharmacy_agent",
            invocation_id="inv-1",
            content=types.Content(
                role="model",
                parts=[
                    types.Part(text="It shipped.", thought_signature=b"\x00sig\xff"),
                    types.Part(
                        inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\x01")
                    ),
                ],
            ),
            turn_complete=True,
            timestamp=T + 4,
        ),
        # A compaction: no content, the summary rides in actions.compaction.
        Event(
            author="user",
            invocation_id="inv-2",
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=T + 1,
                    end_timestamp=T + 4,
                    compacted_content=types.Content(
                        role="model", parts=[types.Part(text="Order 42 shipped.")]
                    ),
                )
            ),
            timestamp=T + 5,
        ),
        Event(
            author="pharmacy_agent",
            invocation_id="inv-2",
            error_code="MAX_TOKENS",
            error_message="ran out",
            actions=EventActions(transfer_to_agent="billing", escalate=True),
            timestamp=T + 6,
        ),
    ]


async def test_events_round_trip_exactly(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    sent = conversation()
    for e in sent:
        await service.append_event(session, e)

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")

    assert got.events == sent
    assert [e.model_dump(mode="json", exclude_none=True) for e in got.events] == [
        e.model_dump(mode="json", exclude_none=True) for e in sent
    ]
    compaction = got.events[4]
    assert compaction.content is None
    assert compaction.actions.compaction.compacted_content.parts[0].text == "Order 42 shipped."
    assert got.events[1].long_running_tool_ids == {"call-1"}
    assert got.events[3].content.parts[1].inline_data.data == b"\x89PNG\x00\x01"
    assert got.state == {"user:last_order": 42, "order_status": "shipped"}


# --- a real Runner --------------------------------------------------------------------


class CountingAgent(BaseAgent):
    """Counts the user's visits in user state and keeps a note artifact per session."""

    async def _run_async_impl(self, ctx):
        visits = ctx.session.state.get("user:visits", 0) + 1
        await ctx.artifact_service.save_artifact(
            app_name=ctx.app_name,
            user_id=ctx.user_id,
            session_id=ctx.session.id,
            filename="note.txt",
            artifact=types.Part(text=f"visit {visits}"),
        )
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"visit {visits}")]),
            actions=EventActions(
                state_delta={"user:visits": visits, "temp:scratch": 1, "last": "hi"},
                artifact_delta={"note.txt": visits - 1},
            ),
        )


async def test_a_runner_works_unchanged_on_the_service(service):
    artifacts = (
        InMemoryArtifactService()
        if isinstance(service, InMemorySessionService)
        else DjangoArtifactService()
    )
    runner = Runner(
        app_name=APP,
        agent=CountingAgent(name="counter"),
        session_service=service,
        artifact_service=artifacts,
    )
    await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    replies = []
    for _ in range(2):
        async for e in runner.run_async(
            user_id=ALICE,
            session_id="s1",
            new_message=types.Content(role="user", parts=[types.Part(text="hello")]),
        ):
            replies.append(e.content.parts[0].text)

    assert replies == ["visit 1", "visit 2"]
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.author for e in got.events] == ["user", "counter", "user", "counter"]
    assert got.state == {"last": "hi", "user:visits": 2}
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {"visits": 2}
    note = await artifacts.load_artifact(
        app_name=APP, user_id=ALICE, session_id="s1", filename="note.txt"
    )
    assert note.text == "visit 2"
    second = await service.create_session(app_name=APP, user_id=ALICE, session_id="s2")
    assert second.state == {"user:visits": 2}


# --- stale sessions: ours only ----------------------------------------------------------


async def test_adk_in_memory_does_not_detect_stale_sessions():
    """Why the stale tests below are ours only: the in-memory service accepts an append
    from an outdated copy (it writes through to its own storage object)."""
    service = InMemorySessionService()
    one = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    two = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.append_event(one, event("from one"))
    await service.append_event(two, event("from two"))  # no StaleSessionError
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert len(got.events) == 2


async def test_ours_only_an_outdated_session_object_is_stale(django_service):
    service = django_service
    one = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    two = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.append_event(one, event("from one", delta={"k": "one"}))

    with pytest.raises(StaleSessionError, match="get_session"):
        await service.append_event(two, event("from two", delta={"k": "two", "user:x": 1}))

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.content.parts[0].text for e in got.events] == ["from one"]
    assert got.state == {"k": "one"}
    # the holder of the current revision carries on; a reloaded copy may too
    await service.append_event(one, event("one again"))
    reloaded = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.append_event(reloaded, event("after reload"))
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert len(got.events) == 3


async def test_ours_only_lone_surrogates_are_stored_as_replacement_characters(django_service):
    """No UTF-8 text holds a lone surrogate: memadmin stores U+FFFD (records.storable),
    in process and over HTTP alike."""
    service = django_service
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.append_event(session, event("a\ud800b", delta={"note": "v\udfff"}))

    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.events[0].content.parts[0].text == "a\ufffdb"
    assert got.events[0].actions.state_delta == {"note": "v\ufffd"}
    assert got.state == {"note": "v\ufffd"}


# State no store can keep as given: bytes (ADK's database service decodes them as UTF-8,
# or fails with a UnicodeDecodeError; JSON has no bytes) and keys holding a lone surrogate
# (no UTF-8 text holds one). ADK's in-memory service keeps both as they are.
UNSTORABLE_STATE = (
    ("scan", {"scan": b"%PDF"}),
    ("user:pic", {"user:pic": bytearray(b"\xff")}),
    ("nested", {"nested": {"inner": [b"x"]}}),
    ("k\ud800", {"k\ud800": 1}),
    ("deep", {"deep": {"x\udfff": 1}}),
    ("raw", {"raw": {b"\xff": 1}}),  # a key that is not text, inside a value
    ("name", {"name": {b"x": 1}}),  # one that would decode as text is refused too
)


async def test_ours_only_state_no_store_keeps_is_refused_naming_the_key(django_service):
    service = django_service
    for key, state in UNSTORABLE_STATE:
        with pytest.raises(ValueError, match=re.escape(repr(key))):
            await service.create_session(app_name=APP, user_id=ALICE, session_id="s0", state=state)
    with pytest.raises(ValueError, match=re.escape(repr(b"raw"))):
        await service.create_session(
            app_name=APP, user_id=ALICE, session_id="s0", state={b"raw": 1}
        )
    assert await service.get_session(app_name=APP, user_id=ALICE, session_id="s0") is None

    session = await service.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"k": "kept"}
    )
    for key, state in UNSTORABLE_STATE:
        sent = event(delta={"k": "changed", "temp:t": 1, **state})
        with pytest.raises(ValueError, match=re.escape(repr(key))):
            await service.append_event(session, sent)
    assert session.state == {"k": "kept"}
    assert session.events == []
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert (got.state, got.events) == ({"k": "kept"}, [])
    assert await service.get_user_state(app_name=APP, user_id=ALICE) == {}

    # temp: keys are never stored: their bytes reach the live session, as in ADK
    await service.append_event(session, event(delta={"temp:raw": b"\xff", "k": "new"}))
    assert session.state == {"k": "new", "temp:raw": b"\xff"}


@pytest.fixture(params=["adk_database", "ours"])
async def adk_database_or_ours(request):
    """ADK's database service (SQLite in memory), which ours follows where ADK's in-memory
    one does not detect the refusal, or ours."""
    if request.param == "ours":
        yield request.getfixturevalue("django_service")
        return
    from google.adk.sessions.database_session_service import DatabaseSessionService

    async with DatabaseSessionService("sqlite+aiosqlite:///:memory:") as service:
        yield service


async def _a_stale_copy(service):
    """A copy of the session that another copy has appended to since."""
    one = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    two = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.append_event(one, event("from one", ts=T + 1))
    return two


async def _a_deleted_session(service):
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    await service.delete_session(app_name=APP, user_id=ALICE, session_id="s1")
    return session


@pytest.mark.parametrize(
    ("refused_session", "refusal", "stored"),
    [
        pytest.param(_a_stale_copy, StaleSessionError, ({}, ["from one"]), id="stale"),
        pytest.param(_a_deleted_session, SessionNotFoundError, None, id="deleted"),
    ],
)
async def test_a_refused_append_gives_the_session_its_temp_state_first(
    adk_database_or_ours, refused_session, refusal, stored
):
    """ADK's database service applies an event's temp: state to the caller's session
    object (and trims it from the event) before it finds the session stale or gone."""
    service = adk_database_or_ours
    session = await refused_session(service)
    sent = event("refused", ts=T + 2, delta={"temp:scratch": 1, "k": "v"})

    with pytest.raises(refusal):
        await service.append_event(session, sent)

    assert session.state == {"temp:scratch": 1}
    assert sent.actions.state_delta == {"k": "v"}
    assert session.events == []
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    kept = None if got is None else (got.state, [e.content.parts[0].text for e in got.events])
    assert kept == stored  # nothing of the refused event


async def test_ours_only_state_written_through_another_session_does_not_make_a_session_stale(
    django_service,
):
    service = django_service
    s1 = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    s2 = await service.create_session(app_name=APP, user_id=ALICE, session_id="s2")
    await service.append_event(s1, event(delta={"user:lang": "fr", "app:motd": "x"}))
    await service.append_event(s2, event("still current"))
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s2")
    assert len(got.events) == 1


async def test_ours_only_a_session_object_made_by_hand_is_judged_by_its_last_event(
    django_service,
):
    """Like ADK's database service: without a revision marker, a session is stale when
    storage was updated after it and holds an event the object does not end with."""
    service = django_service
    created = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    stored = event("stored", ts=T + 1)
    await service.append_event(created, stored)

    blank = Session(id="s1", app_name=APP, user_id=ALICE, last_update_time=0.0)
    with pytest.raises(StaleSessionError):
        await service.append_event(blank, event("from a blank copy", ts=T + 2))

    caught_up = Session(id="s1", app_name=APP, user_id=ALICE, events=[stored], last_update_time=0.0)
    await service.append_event(caught_up, event("from a caught-up copy", ts=T + 3))
    got = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.content.parts[0].text for e in got.events] == ["stored", "from a caught-up copy"]
