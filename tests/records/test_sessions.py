"""Our session storage beyond ADK's contract: the sync API, the rows, validation, races."""

import time

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from records import artifacts, sessions
from records.models import AgentSession, AppState, Artifact, SessionEvent, UserState
from records.session_service import DjangoSessionService
from records.timestamps import TimestampError

APP, ALICE = "pharmacy", "alice"
T = time.time() + 10_000


def event(text="hi", *, delta=None, ts=None, **kw) -> Event:
    if ts is not None:
        kw["timestamp"] = ts
    return Event(
        author=kw.pop("author", "user"),
        invocation_id=kw.pop("invocation_id", "inv-1"),
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
        **kw,
    )


def nothing_stored() -> bool:
    return not any(
        m.objects.exists() for m in (AgentSession, SessionEvent, AppState, UserState, Artifact)
    )


# --- persistence -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_new_service_instance_sees_the_same_data(close_executor_connections):
    writer = DjangoSessionService()
    session = await writer.create_session(
        app_name=APP, user_id=ALICE, session_id="s1", state={"app:motd": "hi", "k": 1}
    )
    sent = event(delta={"user:lang": "en"})
    await writer.append_event(session, sent)
    del writer

    reader = DjangoSessionService()
    got = await reader.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.events == [sent]
    assert got.state == {"app:motd": "hi", "k": 1, "user:lang": "en"}
    assert [s.id for s in (await reader.list_sessions(app_name=APP)).sessions] == ["s1"]
    assert await reader.get_user_state(app_name=APP, user_id=ALICE) == {"lang": "en"}
    # and a session object from the old instance can still be appended through the new one
    await reader.append_event(session, event("later"))
    assert len((await reader.get_session(app_name=APP, user_id=ALICE, session_id="s1")).events) == 2


@pytest.mark.django_db
@pytest.mark.parametrize("delta", [None, {"temp:scratch": 1}])  # one round trip; the ORM's
def test_an_earlier_stamped_event_moves_the_update_time_back_but_not_the_place(delta):
    for sid, at in (("s1", T), ("s2", T + 10), ("s3", T + 20)):
        sessions.create_session(app_name=APP, user_id=ALICE, session_id=sid, now=at)
    s3 = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s3")
    sessions.append_event(s3, event(ts=T + 5, delta=delta))  # an agent clock behind
    row = AgentSession.objects.get(session_id="s3")
    assert (row.last_update_time, row.listed_at) == (T + 5, T + 20)
    listed = sessions.list_sessions(app_name=APP).sessions
    assert [(s.id, s.last_update_time) for s in listed] == [
        ("s1", T), ("s2", T + 10), ("s3", T + 5)
    ]  # fmt: skip
    sessions.append_event(s3, event(ts=T + 30, delta=delta))
    row.refresh_from_db()
    assert (row.last_update_time, row.listed_at) == (T + 30, T + 30)
    # Rows written without a place (bulk loads, tests) are placed at their last update.
    AgentSession.objects.bulk_create(
        [AgentSession(app_name=APP, user_id="bob", session_id="b1", created_at=timezone.now(),
                      last_update_time=T + 1)]
    )  # fmt: skip
    assert AgentSession.objects.get(session_id="b1").listed_at == T + 1


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL trigger")
def test_a_row_inserted_without_a_place_by_an_older_process_is_placed_at_its_update():
    """During a rolling upgrade the version before writes sessions knowing no listed_at."""
    with connection.cursor() as cursor:
        table = AgentSession._meta.db_table
        cursor.execute(
            f"INSERT INTO {table} (app_name, user_id, session_id, state, created_at, "  # noqa: S608
            "last_update_time, revision, event_count) VALUES (%s, %s, %s, '{}', now(), %s, 0, 0)",
            [APP, ALICE, "old", T],
        )
    assert AgentSession.objects.get(session_id="old").listed_at == T
    assert [s.id for s in sessions.list_sessions(app_name=APP).sessions] == ["old"]
    # Its append (the version before updates last_update_time alone) moves it on, and
    # an earlier stamp does not move it back.
    for stamp, placed in ((T + 50, T + 50), (T + 20, T + 50)):
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET last_update_time = %s WHERE session_id = 'old'",  # noqa: S608
                [stamp],
            )
        assert AgentSession.objects.get(session_id="old").listed_at == placed


@pytest.mark.django_db
def test_the_sync_api_is_what_the_sweeper_calls():
    created = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1", now=T)
    assert created.last_update_time == T
    loaded = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    sessions.append_event(loaded, event(ts=T + 60))

    idle = sessions.list_sessions(app_name=APP, updated_before=T + 61)
    assert [s.id for s in idle.sessions] == ["s1"]
    assert sessions.list_sessions(app_name=APP, updated_before=T + 60).sessions == []

    assert sessions.delete_session(app_name=APP, user_id=ALICE, session_id="s1") is True
    assert sessions.delete_session(app_name=APP, user_id=ALICE, session_id="s1") is False


@pytest.mark.django_db
def test_rows_keep_event_count_revision_positions_and_last_update_time():
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1", now=T)
    row = AgentSession.objects.get()
    assert (row.event_count, row.revision, row.last_update_time) == (0, 0, T)
    assert row.created_at == timezone.datetime.fromtimestamp(T, timezone.UTC)

    sent = [
        event(f"m{n}", ts=T + n, author=f"agent{n}", invocation_id=f"inv-{n}") for n in (1, 2, 3)
    ]
    for e in sent:
        sessions.append_event(session, e)
    sessions.append_event(session, sent[1])  # an equal re-delivery changes nothing

    row.refresh_from_db()
    assert (row.event_count, row.revision, row.last_update_time) == (3, 3, T + 3)
    stored = list(SessionEvent.objects.filter(session=row).order_by("position"))
    assert [e.position for e in stored] == [0, 1, 2]
    assert [(e.event_id, e.invocation_id, e.author, e.timestamp) for e in stored] == [
        (e.id, e.invocation_id, e.author, e.timestamp) for e in sent
    ]
    assert [e.data for e in stored] == [e.model_dump(mode="json", exclude_none=True) for e in sent]
    assert session._storage_update_marker == f"{row.id}.3"


@pytest.mark.django_db
def test_compaction_events_are_flagged():
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    sessions.append_event(session, event("plain", ts=T + 1))
    summary = Event(
        author="user",
        invocation_id="inv-c",
        timestamp=T + 2,
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=T,
                end_timestamp=T + 1,
                compacted_content=types.Content(role="model", parts=[types.Part(text="sum")]),
            )
        ),
    )
    sessions.append_event(session, summary)
    flags = list(SessionEvent.objects.order_by("position").values_list("is_compaction", flat=True))
    assert flags == [False, True]
    got = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert got.events[1] == summary


@pytest.mark.django_db
def test_prefixed_state_is_stored_without_prefix_and_temp_nowhere():
    session = sessions.create_session(
        app_name=APP,
        user_id=ALICE,
        session_id="s1",
        state={"k": 1, "app:a": 2, "user:u": 3, "temp:t": 4},
    )
    sessions.append_event(session, event(delta={"temp:x": 5, "user:v": 6}))

    assert AgentSession.objects.get().state == {"k": 1}
    assert AppState.objects.get(app_name=APP).state == {"a": 2}
    assert UserState.objects.get(app_name=APP, user_id=ALICE).state == {"u": 3, "v": 6}
    assert "temp:" not in str(SessionEvent.objects.get().data)


@pytest.mark.django_db
def test_a_stale_append_through_the_sync_api_changes_nothing():
    mine = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    theirs = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    sessions.append_event(theirs, event("theirs"))

    row_id = AgentSession.objects.get().id
    with pytest.raises(StaleSessionError, match=rf"revision {row_id}\.1 in storage.*{row_id}\.0"):
        sessions.append_event(mine, event("mine", delta={"user:x": 1}))

    row = AgentSession.objects.get()
    assert (row.revision, row.event_count) == (1, 1)
    assert not UserState.objects.exists()
    assert mine.events == []


@pytest.mark.django_db
@pytest.mark.parametrize("appends", [0, 1])
def test_a_session_object_of_a_deleted_session_is_stale_for_one_created_again(appends):
    """A session deleted (by its agent, or retired by the sweeper) and created again under
    its id is another session: an object read from the old one is stale, however many
    events either holds (both at revision 0, or both at 1)."""
    old = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    for n in range(appends):
        sessions.append_event(old, event(f"old {n}"))
    sessions.delete_session(app_name=APP, user_id=ALICE, session_id="s1")
    new = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1", state={"k": 1})
    for n in range(appends):
        sessions.append_event(new, event(f"new {n}"))

    with pytest.raises(StaleSessionError, match="deleted and created again"):
        sessions.append_event(old, event("from the old session", delta={"k": 2, "user:x": 1}))
    row = AgentSession.objects.get()
    assert (row.revision, row.event_count, row.state) == (appends, appends, {"k": 1})
    assert not UserState.objects.exists()


@pytest.mark.django_db
def test_delete_removes_the_events_but_leaves_artifacts_to_the_sweeper():
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    sessions.append_event(session, event())
    artifacts.save_artifact(
        app_name=APP,
        user_id=ALICE,
        session_id="s1",
        filename="r.txt",
        artifact=types.Part(text="x"),
    )

    sessions.delete_session(app_name=APP, user_id=ALICE, session_id="s1")

    assert not AgentSession.objects.exists()
    assert not SessionEvent.objects.exists()
    assert Artifact.objects.filter(session_id="s1").count() == 1


# --- validation -----------------------------------------------------------------------


BAD_IDS = [
    ({"app_name": ""}, "app_name must not be empty"),
    ({"app_name": "   "}, "app_name must not be empty"),
    ({"app_name": "a" * 129}, "app_name is 129 characters long; at most 128"),
    ({"user_id": ""}, "user_id must not be empty"),
    ({"user_id": "u" * 257}, "user_id is 257 characters long; at most 256"),
    ({"user_id": "nul\x00byte"}, "user_id must not contain NUL"),
    ({"user_id": 42}, "user_id must be a string, not int"),
    ({"session_id": ""}, "session_id must not be empty"),
    ({"session_id": " \t "}, "session_id must not be empty"),
    ({"session_id": "s" * 257}, "session_id is 257 characters long; at most 256"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("bad", "message"), BAD_IDS)
def test_bad_ids_are_refused_with_a_clear_message_and_nothing_is_written(bad, message):
    ids = {"app_name": APP, "user_id": ALICE, "session_id": "s1"} | bad
    with pytest.raises(ValueError, match=message):
        sessions.create_session(**ids, state={"app:a": 1, "user:u": 2, "k": 3})
    assert nothing_stored()
    for read in (sessions.get_session, sessions.delete_session):
        with pytest.raises(ValueError, match=message):
            read(**ids)


@pytest.mark.django_db
def test_ids_at_the_length_limits_are_accepted():
    ids = {"app_name": "a" * 128, "user_id": "u" * 256, "session_id": "s" * 256}
    sessions.create_session(**ids)
    assert sessions.get_session(**ids).id == "s" * 256
    assert [s.id for s in sessions.list_sessions(app_name="a" * 128).sessions] == ["s" * 256]


@pytest.mark.django_db
def test_list_and_user_state_validate_their_ids_too():
    with pytest.raises(ValueError, match="app_name must not be empty"):
        sessions.list_sessions(app_name="")
    with pytest.raises(ValueError, match="user_id is 300 characters long"):
        sessions.list_sessions(app_name=APP, user_id="u" * 300)
    with pytest.raises(ValueError, match="user_id must not be empty"):
        sessions.get_user_state(app_name=APP, user_id="")


@pytest.mark.django_db
def test_an_event_too_big_for_its_columns_is_refused_before_anything_is_written():
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    with pytest.raises(ValueError, match="event id is 129 characters long; at most 128"):
        sessions.append_event(session, event(id="e" * 129, delta={"user:x": 1}))
    with pytest.raises(ValueError, match="event author is 300 characters long"):
        sessions.append_event(session, event(author="a" * 300))
    assert not SessionEvent.objects.exists()
    assert not UserState.objects.exists()
    assert AgentSession.objects.get().revision == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stamp", "message"),
    [
        (1796266895557, "looks like milliseconds since the epoch; send seconds"),
        (1e308, "out of range"),
        (253402300800, "out of range"),
        (-62135596801, "out of range"),
        (time.time() + 30 * 86400, "out of range"),  # would keep the session active a month
        (float("inf"), "must be a finite number"),
    ],
)
def test_an_event_stamped_outside_the_range_is_refused_and_nothing_is_written(stamp, message):
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    with pytest.raises(TimestampError, match=message) as refused:
        sessions.append_event(session, event(ts=stamp, delta={"user:x": 1}))
    assert "from 946684800 (2000-01-01) to" in str(refused.value)
    assert not SessionEvent.objects.exists() and not UserState.objects.exists()
    assert AgentSession.objects.get().revision == 0


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_adk_service_refuses_out_of_range_stamps_too(close_executor_connections):
    service = DjangoSessionService()
    session = await service.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    with pytest.raises(ValueError, match="milliseconds"):
        await service.append_event(session, event(ts=time.time() * 1000))
    stored = await service.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert stored.events == []


@pytest.mark.django_db
@pytest.mark.parametrize("now", [time.time() * 1000, -1.0, float("nan")])
def test_a_session_created_at_an_impossible_time_is_refused(now):
    with pytest.raises(TimestampError, match="now "):
        sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1", now=now)
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_state_json_cannot_hold_is_a_value_error_on_both_databases(bad):
    """Not a database error (PostgreSQL), nor "the id is taken" (SQLite's JSON check)."""
    with pytest.raises(ValueError, match="JSON has no NaN or infinity"):
        sessions.create_session(
            app_name=APP, user_id=ALICE, session_id="fresh", state={"x": {"y": [bad]}}
        )
    assert nothing_stored()
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1", now=T)
    for delta in ({"x": bad}, {"user:x": bad}, {"app:x": bad}):
        with pytest.raises(ValueError, match="JSON has no NaN or infinity"):
            sessions.append_event(session, event(delta=delta, ts=T), now=T)
    assert not SessionEvent.objects.exists()
    with pytest.raises(InputValidationError, match="JSON"):
        artifacts.save_artifact(
            app_name=APP,
            user_id=ALICE,
            session_id="s1",
            filename="f",
            artifact=types.Part(text="x"),
            custom_metadata={"x": bad},
        )
    assert not Artifact.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["app_name", "user_id", "session_id"])
def test_the_database_refuses_empty_session_ids_from_any_writer(field):
    fields = {"app_name": APP, "user_id": ALICE, "session_id": "s1", field: ""}
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentSession.objects.create(**fields, created_at=timezone.now(), last_update_time=T)


# --- concurrency ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_to_one_session_keep_every_event_at_a_unique_position(run_in_threads):
    sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    writers, per_writer = 4, 5

    def writer(n):
        def work():
            for i in range(per_writer):
                while True:  # ADK's contract: on StaleSessionError, reload and retry
                    session = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
                    try:
                        sessions.append_event(session, event(f"w{n}-{i}", delta={f"w{n}": i}))
                        break
                    except StaleSessionError:
                        continue

        return work

    run_in_threads([writer(n) for n in range(writers)])

    row = AgentSession.objects.get()
    total = writers * per_writer
    positions = list(SessionEvent.objects.filter(session=row).values_list("position", flat=True))
    assert sorted(positions) == list(range(total))
    assert (row.event_count, row.revision) == (total, total)
    texts = {
        e.content.parts[0].text
        for e in sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1").events
    }
    assert texts == {f"w{n}-{i}" for n in range(writers) for i in range(per_writer)}
    assert row.state == {f"w{n}": per_writer - 1 for n in range(writers)}


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_to_a_users_sessions_lose_no_user_state(run_in_threads):
    writers, per_writer = 4, 5
    for n in range(writers):
        sessions.create_session(app_name=APP, user_id=ALICE, session_id=f"s{n}")

    def writer(n):
        def work():
            session = sessions.get_session(app_name=APP, user_id=ALICE, session_id=f"s{n}")
            for i in range(per_writer):
                sessions.append_event(
                    session, event(delta={f"user:w{n}-{i}": i, f"app:w{n}-{i}": i})
                )

        return work

    run_in_threads([writer(n) for n in range(writers)])

    keys = {f"w{n}-{i}" for n in range(writers) for i in range(per_writer)}
    assert set(sessions.get_user_state(app_name=APP, user_id=ALICE)) == keys
    assert set(AppState.objects.get(app_name=APP).state) == keys


# --- listing at scale: pages by cursor, constant statements -----------------------------


def _sessions_at(times: dict[tuple[str, str], float]) -> None:
    for (user, sid), t in times.items():
        sessions.create_session(app_name=APP, user_id=user, session_id=sid, now=t)


@pytest.mark.django_db
def test_pages_walk_the_whole_listing_in_its_order_without_repeats():
    base = time.time() - 1_000
    # Ties on the update time are ordered by user, then session id.
    times = {("bob", "b1"): base + 1, ("alice", "a2"): base + 1, ("alice", "a1"): base + 1}
    times.update({(f"u{i}", f"s{i}"): base + 2 + i for i in range(6)})
    _sessions_at(times)
    sessions.append_event(
        sessions.get_session(app_name=APP, user_id="u0", session_id="s0"), event(ts=base + 50)
    )
    whole = [(s.user_id, s.id) for s in sessions.list_sessions(app_name=APP).sessions]
    assert whole[:3] == [("alice", "a1"), ("alice", "a2"), ("bob", "b1")]
    assert whole[-1] == ("u0", "s0")  # moved to the end by its new event

    walked, after, pages = [], None, 0
    while True:
        page = sessions.list_sessions_page(app_name=APP, after=after, limit=4)
        walked += [(s.user_id, s.id) for s in page.sessions]
        pages += 1
        assert all(s.events == [] for s in page.sessions)
        if page.next_after is None:
            break
        after = page.next_after
    assert walked == whole and pages == 3
    one_user = sessions.list_sessions_page(app_name=APP, user_id="alice", limit=1)
    assert [s.id for s in one_user.sessions] == ["a1"]
    rest = sessions.list_sessions_page(
        app_name=APP, user_id="alice", after=one_user.next_after, limit=5
    )
    assert [s.id for s in rest.sessions] == ["a2"] and rest.next_after is None


@pytest.mark.django_db
def test_a_session_updated_while_paging_is_listed_again_later_and_none_is_skipped():
    base = time.time() - 1_000
    _sessions_at({(ALICE, f"s{i}"): base + i for i in range(5)})
    first = sessions.list_sessions_page(app_name=APP, limit=2)
    assert [s.id for s in first.sessions] == ["s0", "s1"]
    # s0 (seen) and s3 (not yet seen) get new events before the next page is read.
    for sid, ts in (("s0", base + 10), ("s3", base + 11)):
        sessions.append_event(
            sessions.get_session(app_name=APP, user_id=ALICE, session_id=sid), event(ts=ts)
        )
    rest = sessions.list_sessions_page(app_name=APP, after=first.next_after, limit=10)
    assert [s.id for s in rest.sessions] == ["s2", "s4", "s0", "s3"]
    assert rest.sessions[-1].last_update_time == base + 11


@pytest.mark.django_db
def test_a_page_needs_a_positive_limit_and_valid_ids():
    with pytest.raises(ValueError, match="limit must be at least 1"):
        sessions.list_sessions_page(app_name=APP, limit=0)
    with pytest.raises(ValueError, match="app_name must not be empty"):
        sessions.list_sessions_page(app_name=" ", limit=5)


@pytest.mark.django_db
def test_listing_takes_a_fixed_number_of_statements_however_many_sessions_and_events(
    django_assert_num_queries,
):
    # The sessions, the app state and the listed users' states: one query string on
    # PostgreSQL, three statements on SQLite. A page finds its users' states after.
    whole, page = (1, 2) if connection.vendor == "postgresql" else (3, 3)
    UserState.objects.create(app_name=APP, user_id="no-sessions", state={"k": -1})

    def listing_with(n: int) -> None:
        for i in range(n):
            s = sessions.create_session(
                app_name=APP,
                user_id=f"u{i}",
                session_id=f"n{n}-{i}",
                state={"user:k": i, "app:v": n},
            )
            sessions.append_event(s, event())
        with django_assert_num_queries(whole):
            listed = sessions.list_sessions(app_name=APP).sessions
        assert all(s.events == [] for s in listed)
        assert {s.state["user:k"] for s in listed} == set(range(n))
        assert {s.state["app:v"] for s in listed} == {n}
        with django_assert_num_queries(whole):
            mine = sessions.list_sessions(app_name=APP, user_id="u1").sessions
        assert {(s.id, s.state["user:k"]) for s in mine} == {(f"n{m}-1", 1) for m in (2, n)}
        with django_assert_num_queries(page):
            first = sessions.list_sessions_page(app_name=APP, limit=3).sessions
        assert [(s.id, s.state) for s in first] == [(s.id, s.state) for s in listed[:3]]

    listing_with(2)
    listing_with(12)


@pytest.mark.django_db
def test_append_and_get_take_a_fixed_number_of_statements(django_assert_num_queries):
    session = sessions.create_session(app_name=APP, user_id=ALICE, session_id="s1")
    # PostgreSQL: one query string (the user's lock; the checks, the event, the shared
    # states and the row's update in one statement). SQLite: the savepoint and its release
    # (the test's transaction); the row with the stored-id check and the last position;
    # the event; the row's update.
    expected = 1 if connection.vendor == "postgresql" else 5
    for i in range(3):
        with django_assert_num_queries(expected):
            sessions.append_event(session, event(f"turn {i}", delta={"k": i}))
    with django_assert_num_queries(2):  # the row with both shared states; the events
        got = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    assert [e.content.parts[0].text for e in got.events] == ["turn 0", "turn 1", "turn 2"]
    assert got.state == {"k": 2}


def _stored(app_name: str, session_id: str) -> tuple:
    row = AgentSession.objects.get(app_name=app_name, session_id=session_id)
    events = SessionEvent.objects.filter(session=row).order_by("position")
    return (
        (row.state, row.last_update_time, row.revision, row.event_count),
        [
            (
                e.position,
                e.event_id,
                e.invocation_id,
                e.author,
                e.timestamp,
                e.is_compaction,
                e.data,
            )
            for e in events
        ],
    )


@pytest.mark.django_db(transaction=True)
def test_the_one_round_trip_append_stores_what_the_orm_path_stores():
    """On PostgreSQL a session object we returned is appended in one query string; one
    without our revision marker takes the ORM's path. Both must leave the same rows:
    the events' columns and JSON, the session's state, time, revision and count, and
    the app: and user: states."""
    stores = {}
    for user, marked in (("alice", True), ("bob", False)):
        session = sessions.create_session(
            app_name=f"{APP}-{user}", user_id=user, session_id=f"s-{user}", now=T - 100
        )
        sent = [
            event("one", delta={"k": 1, "app:motd": "hi", "user:lang": "pt"}, ts=T - 50),
            event("two", delta={"k": 2, "n": None, "user:lang": "en"}, ts=T - 60),
            event("three", author="agent", invocation_id="inv-2", ts=T - 40),
        ]
        sent[2].actions.compaction = EventCompaction(
            start_timestamp=T - 60,
            end_timestamp=T - 50,
            compacted_content=types.Content(role="model", parts=[types.Part(text="s")]),
        )
        for sent_event in sent:
            sent_event.id = f"e-{sent_event.content.parts[0].text}"
            if not marked:
                session._storage_update_marker = None
            sessions.append_event(session, sent_event)
        row_state, rows = _stored(f"{APP}-{user}", f"s-{user}")
        stores[marked] = (
            row_state,
            rows,
            AppState.objects.get(app_name=f"{APP}-{user}").state,
            UserState.objects.get(app_name=f"{APP}-{user}", user_id=user).state,
            session.state,
            session.last_update_time,
        )
        row_id = AgentSession.objects.get(app_name=f"{APP}-{user}").id
        assert session._storage_update_marker == f"{row_id}.3"
    assert stores[True] == stores[False]
    assert stores[True][0] == ({"k": 2, "n": None}, T - 40, 3, 3)
    assert [r[0] for r in stores[True][1]] == [0, 1, 2]
    assert [r[5] for r in stores[True][1]] == [False, False, True]
    assert stores[True][2:4] == ({"motd": "hi"}, {"lang": "en"})


@pytest.mark.django_db
def test_listed_and_fetched_sessions_are_the_sessions_adk_would_validate():
    """Sessions are built without pydantic's validation (a listing's cost); each must
    still be the model ADK's own constructor gives, field by field, set fields and
    revision included, with a state of its own."""
    from google.adk.sessions.session import Session

    for sid in ("s1", "s2"):
        sessions.create_session(
            app_name=APP,
            user_id=ALICE,
            session_id=sid,
            state={"k": sid, "app:tier": "gold", "user:lang": "pt"},
        )
    sessions.append_event(
        sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1"), event(delta={"n": 1})
    )
    got = sessions.get_session(app_name=APP, user_id=ALICE, session_id="s1")
    listed = sessions.list_sessions(app_name=APP).sessions
    for built in [got, *listed]:
        row = AgentSession.objects.get(app_name=APP, user_id=ALICE, session_id=built.id)
        valid = Session(**{name: getattr(built, name) for name in Session.model_fields})
        valid._storage_update_marker = f"{row.id}.{row.revision}"
        assert built == valid  # fields, extra and private slots (the revision)
        assert built.model_dump() == valid.model_dump()
        assert built.__pydantic_fields_set__ == set(Session.model_fields)
    assert [s.state for s in listed] == [
        {"k": "s1", "n": 1, "app:tier": "gold", "user:lang": "pt"},
        {"k": "s2", "app:tier": "gold", "user:lang": "pt"},
    ][:: 1 if listed[0].id == "s1" else -1]
    listed[0].state["k"] = "changed"
    assert listed[1].state["k"] != "changed"
