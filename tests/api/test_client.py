"""memadmin_client beyond ADK's contract: no Django, retries, errors, keys per app."""

import asyncio
import gc
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.utils import timezone
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.sessions.session import Session

from api import keys
from memadmin_client import (
    InvalidRequest,
    MemadminClient,
    MemadminError,
    MemadminUnavailable,
    NotAuthorized,
    RemoteArtifactService,
    RemoteMemoryService,
    RemoteSessionService,
    ServerError,
)
from memadmin_client.sessions import PAGE_SIZE
from records.models import MemoryRecord, SessionEvent

from ..records.factories import text_event
from .conftest import APP, NO_KEEPALIVE, OTHER_APP, USER

ROOT = Path(__file__).resolve().parents[2]


def test_the_client_imports_without_django():
    code = (
        "import sys\n"
        "sys.modules['django'] = None  # any 'import django...' now fails\n"
        "import memadmin_client\n"
        "from memadmin_client import RemoteArtifactService, RemoteMemoryService,"
        " RemoteSessionService\n"
        "RemoteSessionService('http://127.0.0.1:9', 'mma_x_y')\n"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules"
        " if sys.modules[m] is not None)\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --- retries, against scripted HTTP answers (the network is what is faked) ------------------


class Script(httpx.AsyncBaseTransport):
    """Answers requests from a list: an httpx.Response, or an exception to raise."""

    def __init__(self, *answers):
        self.answers, self.requests = list(answers), []

    async def handle_async_request(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def scripted(*answers):
    transport = Script(*answers)
    client = MemadminClient("http://memadmin.test", "mma_k_s", transport=transport, backoff=0)
    return client, transport


def session_json(**extra):
    return {"id": "s1", "appName": APP, "userId": USER, "revision": "3", **extra}


def test_idempotent_calls_are_retried_on_5xx_and_connection_errors():
    client, transport = scripted(
        httpx.ConnectError("refused"),
        httpx.Response(503),
        httpx.ReadTimeout("slow"),
        httpx.Response(200, json=session_json()),
    )
    service = RemoteSessionService(client=client)
    got = asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="s1"))
    assert got.id == "s1" and got._storage_update_marker == "3"
    assert len(transport.requests) == 4
    assert transport.requests[0].headers["Authorization"] == "Bearer mma_k_s"
    assert str(transport.requests[0].url) == (
        f"http://memadmin.test/api/v1/apps/{APP}/users/{USER}/sessions/s1"
    )


def test_retries_are_bounded():
    client, transport = scripted(*[httpx.Response(502) for _ in range(4)])
    service = RemoteSessionService(client=client)
    with pytest.raises(ServerError):
        asyncio.run(service.get_user_state(app_name=APP, user_id=USER))
    assert len(transport.requests) == 4  # the first try and 3 retries


def test_a_call_that_is_not_idempotent_is_retried_only_if_it_was_never_sent():
    client, transport = scripted(
        httpx.ConnectError("refused"), httpx.Response(201, json=session_json(revision="0"))
    )
    service = RemoteSessionService(client=client)
    created = asyncio.run(service.create_session(app_name=APP, user_id=USER, session_id="s1"))
    assert created.id == "s1" and len(transport.requests) == 2

    for failure in (httpx.Response(503), httpx.ReadTimeout("answer lost")):
        client, transport = scripted(failure)
        service = RemoteSessionService(client=client)
        with pytest.raises((ServerError, MemadminUnavailable)):
            asyncio.run(service.create_session(app_name=APP, user_id=USER, session_id="s1"))
        assert len(transport.requests) == 1


def test_the_agents_logs_and_errors_do_not_name_the_user(caplog):
    """httpx logs each request's URL at INFO, and a failed call's error quotes its path:
    both leave out the user id, in the path and in a sessions page's cursor (which holds
    one). memadmin's own logs name a user by keyed hash; this process has no key."""
    cursor = f"1.5~{USER.encode().hex()}~{b's1'.hex()}"
    client, transport = scripted(
        httpx.Response(200, json=session_json()),
        httpx.Response(200, json={"sessions": [], "nextCursor": cursor}),
        httpx.Response(200, json={"sessions": []}),
        *[httpx.ConnectError("refused") for _ in range(4)],
    )
    service = RemoteSessionService(client=client)
    with caplog.at_level("INFO", logger="httpx"):
        asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="s1"))
        asyncio.run(service.list_sessions(app_name=APP))
        with pytest.raises(MemadminUnavailable) as failed:
            asyncio.run(service.get_user_state(app_name=APP, user_id=USER))
    assert str(transport.requests[2].url).endswith(f"cursor={cursor}")  # still sent
    lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert len(lines) == 3
    assert f"/api/v1/apps/{APP}/users/<user>/sessions/s1 " in lines[0]
    assert lines[2].endswith(f'sessions?limit={PAGE_SIZE}&cursor=<cursor> "HTTP/1.1 200 OK"'), (
        lines[2]
    )
    assert f"/apps/{APP}/users/<user>/state" in str(failed.value)
    for text in (*lines, str(failed.value)):
        assert USER not in text and USER.encode().hex() not in text


def test_a_url_of_another_service_is_logged_as_it_is(caplog):
    from memadmin_client.http import UserIdsOutOfHttpxLogs

    url = httpx.URL("https://llm.example/v1/apps/a/users/bob/chat?cursor=x")
    record = logging.LogRecord(
        "httpx", logging.INFO, "", 1, "HTTP Request: %s %s", ("GET", url), None
    )
    assert UserIdsOutOfHttpxLogs().filter(record)
    assert record.getMessage() == f"HTTP Request: GET {url}"


def test_refused_input_is_a_value_error_with_the_servers_message():
    client, _ = scripted(
        httpx.Response(422, json={"detail": "user_id is 300 characters long", "code": "x"})
    )
    with pytest.raises(InvalidRequest, match="300 characters") as caught:
        asyncio.run(RemoteSessionService(client=client).get_user_state(app_name=APP, user_id=USER))
    assert isinstance(caught.value, ValueError) and caught.value.status == 422


def test_only_a_404_saying_the_thing_is_absent_reads_as_none():
    """A 404 from a wrong base URL or a proxy is not an answer about the session: raised,
    not None, which would hide the misconfiguration."""
    absent = httpx.Response(
        404, json={"detail": "Session s1 not found.", "code": "session_not_found"}
    )
    client, _ = scripted(absent)
    service = RemoteSessionService(client=client)
    assert asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="s1")) is None
    for other in (
        httpx.Response(404, json={"detail": "Not found.", "code": "not_found"}),
        httpx.Response(404, text="<h1>Not Found</h1>"),
    ):
        client, _ = scripted(other)
        with pytest.raises(MemadminError) as caught:
            asyncio.run(
                RemoteSessionService(client=client).get_session(
                    app_name=APP, user_id=USER, session_id="s1"
                )
            )
        assert caught.value.status == 404
        client, _ = scripted(other)
        with pytest.raises(MemadminError):
            asyncio.run(
                RemoteArtifactService(client=client).load_artifact(
                    app_name=APP, user_id=USER, filename="a.txt", session_id="s1"
                )
            )
    client, _ = scripted(httpx.Response(404, json={"detail": "x", "code": "artifact_not_found"}))
    assert (
        asyncio.run(
            RemoteArtifactService(client=client).load_artifact(
                app_name=APP, user_id=USER, filename="a.txt", session_id="s1"
            )
        )
        is None
    )


def test_ids_the_api_cannot_address_are_refused_before_sending():
    client, transport = scripted()
    service = RemoteSessionService(client=client)
    for bad in ("", "a/b", "..", "   "):
        with pytest.raises(ValueError):
            asyncio.run(service.get_user_state(app_name=APP, user_id=bad))
    assert transport.requests == []


def test_each_service_takes_a_shared_client_or_makes_its_own():
    client, _ = scripted()
    services = [cls(client=client) for cls in SERVICES]
    assert all(s.client is client for s in services)
    own = RemoteMemoryService("http://memadmin.test", "mma_key", retries=0)
    assert isinstance(own.client, MemadminClient) and own.client is not client
    for cls in SERVICES:
        with pytest.raises(TypeError, match="pass base_url and api_key"):
            cls("http://memadmin.test")


SERVICES = (RemoteSessionService, RemoteMemoryService, RemoteArtifactService)


# --- against a live server -------------------------------------------------------------------


@pytest.fixture
def live_key(live_server, transactional_db):
    return live_server.url, keys.create_key(APP, "client test", timezone.now()).token


def test_wrong_revoked_and_foreign_keys_raise_not_authorized(live_key):
    url, token = live_key
    wrong = RemoteSessionService(url, "mma_000000000000_wrong", limits=NO_KEEPALIVE)
    with pytest.raises(NotAuthorized) as caught:
        asyncio.run(wrong.list_sessions(app_name=APP, user_id=USER))
    assert (caught.value.status, caught.value.code) == (401, "invalid_key")

    right = RemoteSessionService(url, token, limits=NO_KEEPALIVE)
    with pytest.raises(NotAuthorized) as caught:
        asyncio.run(right.list_sessions(app_name=OTHER_APP, user_id=USER))
    assert (caught.value.status, caught.value.code) == (403, "wrong_app")

    keys.revoke_key(token.split("_")[1], timezone.now())
    with pytest.raises(NotAuthorized, match="revoked"):
        asyncio.run(right.list_sessions(app_name=APP, user_id=USER))


def test_keys_per_app_pick_the_apps_key(live_key):
    url, token = live_key
    service = RemoteSessionService(url, {APP: token}, limits=NO_KEEPALIVE)
    assert asyncio.run(service.list_sessions(app_name=APP)).sessions == []
    with pytest.raises(NotAuthorized, match="No API key for app"):
        asyncio.run(service.list_sessions(app_name=OTHER_APP))


def test_one_service_object_serves_several_event_loops(live_key):
    service = RemoteSessionService(*live_key)  # with keep-alive: a pool per loop

    async def create_twice(service):
        await service.create_session(app_name=APP, user_id=USER, session_id="s1")
        await service.create_session(app_name=APP, user_id=USER, session_id="s2")

    async def get_and_close(service):
        try:
            return await service.get_session(app_name=APP, user_id=USER, session_id="s1")
        finally:
            await service.client.aclose()

    asyncio.run(create_twice(service))  # leaves a kept-alive connection in that loop's pool
    # a second asyncio.run: a new loop, so a new connection pool
    assert asyncio.run(get_and_close(service)).id == "s1"
    del service  # and with it the first loop's connection (its server thread ends)
    gc.collect()


def test_an_oversized_request_is_refused_with_the_limit(live_key, settings):
    settings.MEMADMIN_API_MAX_BODY_BYTES = 10_000
    memory = RemoteMemoryService(*live_key, limits=NO_KEEPALIVE)
    huge = Session(id="s1", app_name=APP, user_id=USER, events=[text_event("x" * 20_000)])
    with pytest.raises(InvalidRequest, match="at most 10000") as caught:
        asyncio.run(memory.add_session_to_memory(huge))
    assert caught.value.status == 413


class LoseAnswers(httpx.AsyncHTTPTransport):
    """A real HTTP transport that loses the answer to the first append: the server
    stores the event, the client sees a read timeout."""

    def __init__(self):
        super().__init__(limits=NO_KEEPALIVE)
        self.appends = 0

    async def handle_async_request(self, request):
        response = await super().handle_async_request(request)
        if request.url.path.endswith("/events"):
            self.appends += 1
            if self.appends == 1:
                await response.aread()
                raise httpx.ReadTimeout("the answer was lost", request=request)
        return response


def test_an_append_whose_answer_was_lost_is_retried_without_going_stale(live_key):
    url, token = live_key
    transport = LoseAnswers()
    service = RemoteSessionService(
        client=MemadminClient(url, token, transport=transport, backoff=0.01)
    )

    async def scenario():
        session = await service.create_session(app_name=APP, user_id=USER, session_id="s1")
        row, _, revision = session._storage_update_marker.partition(".")
        assert revision == "0"
        first = text_event("I am allergic to penicillin")
        await service.append_event(session, first)  # stored; answer lost; retried
        assert session._storage_update_marker == f"{row}.1"
        assert [e.id for e in session.events] == [first.id]
        await service.append_event(session, text_event("and to latex"))  # not stale
        stale = await service.get_session(app_name=APP, user_id=USER, session_id="s1")
        await service.append_event(session, text_event("third"))
        with pytest.raises(StaleSessionError):
            await service.append_event(stale, text_event("from an old copy"))
        return session

    session = asyncio.run(scenario())
    assert transport.appends == 5
    stored = list(SessionEvent.objects.order_by("position").values_list("event_id", flat=True))
    assert stored == [e.id for e in session.events]  # each event once, in order


def test_the_example_agent_runs_against_a_live_server(live_key):
    url, token = live_key
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.pop("GOOGLE_API_KEY", None)  # the deterministic agent: no model, no network
    env.update(MEMADMIN_URL=url, MEMADMIN_API_KEY=token, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "examples/remote_agent.py", "--app", APP, "--user", "reader"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "agent: You told me: I am allergic to penicillin."
    pinned = MemoryRecord.objects.get(app_name=APP, user_id="reader", pinned=True)
    assert pinned.content == "I am allergic to penicillin."


def test_delete_memory_without_an_id_deletes_nothing_and_delete_all_memories_does(live_key):
    """As ADK's own services: ToolContext.delete_memory() passes None by default."""
    memory = RemoteMemoryService(*live_key, limits=NO_KEEPALIVE)
    session = Session(
        id="s1",
        app_name=APP,
        user_id=USER,
        events=[text_event("I am allergic to penicillin"), text_event("I live in Leeds")],
    )

    def held() -> int:
        return MemoryRecord.objects.filter(user_id=USER).count()

    asyncio.run(memory.add_session_to_memory(session))
    found = asyncio.run(memory.search_memory(app_name=APP, user_id=USER, query="penicillin"))
    asyncio.run(memory.delete_memory(app_name=APP, user_id=USER))
    asyncio.run(memory.delete_memory(app_name=APP, user_id=USER, memory_id=""))
    assert held() == 2
    for none in ("0", -5):  # ids no record has (the int as in process: nothing deleted)
        asyncio.run(memory.delete_memory(app_name=APP, user_id=USER, memory_id=none))
    assert held() == 2
    one = found.memories[0].id
    # The id as search returned it, or the int itself (as the in-process service takes).
    asyncio.run(memory.delete_memory(app_name=APP, user_id=USER, memory_id=int(one)))
    assert held() == 1
    assert asyncio.run(memory.delete_all_memories(app_name=APP, user_id=USER)) == 1
    assert held() == 0


class Handle:
    """A live object in session state or metadata, which JSON cannot hold."""

    def __str__(self) -> str:
        return "handle-7"


def test_memory_payloads_keep_what_json_cannot_hold_as_its_text(live_key):
    """As the in-process service (records.extract): a session whose state or event
    deltas hold a live object is still ingested, and an entry's custom_metadata keeps
    such a value as its text."""
    from google.adk.events.event import Event, EventActions
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    memory = RemoteMemoryService(*live_key, limits=NO_KEEPALIVE)
    said = text_event("My favourite colour is teal")
    said.actions = EventActions(state_delta={"temp:handle": Handle(), "tool": Handle()})
    session = Session(
        id="s1", app_name=APP, user_id=USER, state={"temp:handle": Handle()}, events=[said]
    )
    asyncio.run(memory.add_session_to_memory(session))
    asyncio.run(
        memory.add_events_to_memory(app_name=APP, user_id=USER, events=[Event.model_validate(said)])
    )
    entry = MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text="I moved to Leeds")]),
        custom_metadata={"ref": Handle()},
    )
    asyncio.run(memory.add_memory(app_name=APP, user_id=USER, memories=[entry]))
    stored = {r.content: r for r in MemoryRecord.objects.filter(user_id=USER)}
    assert set(stored) == {"My favourite colour is teal", "I moved to Leeds"}
    assert stored["I moved to Leeds"].custom_metadata["ref"] == "handle-7"


@pytest.mark.django_db(transaction=True)
def test_custom_metadata_is_sent_as_the_in_process_services_store_it(remote_client):
    """Datetimes and other values pydantic dumps work remotely as in process; what JSON
    cannot hold is a ValueError before anything is sent."""
    from datetime import UTC, datetime

    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types
    from pydantic_core import to_jsonable_python

    at = datetime(2025, 1, 1, 9, 30, tzinfo=UTC)
    artifacts = RemoteArtifactService(client=remote_client)
    saved = dict(app_name=APP, user_id=USER, filename="user:f", artifact=types.Part(text="x"))
    asyncio.run(artifacts.save_artifact(**saved, custom_metadata={"at": at, "n": [1]}))
    got = asyncio.run(artifacts.get_artifact_version(app_name=APP, user_id=USER, filename="user:f"))
    assert got.custom_metadata == {"at": to_jsonable_python(at), "n": [1]}
    # ADK's InputValidationError (a ValueError), as the in-process service raises.
    with pytest.raises(InputValidationError, match="JSON-serialisable"):
        asyncio.run(artifacts.save_artifact(**saved, custom_metadata={"x": object()}))

    memory = RemoteMemoryService(client=remote_client)
    entry = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text="I moved")]))
    asyncio.run(
        memory.add_memory(
            app_name=APP, user_id=USER, memories=[entry], custom_metadata={"at": at, "pinned": True}
        )
    )
    assert MemoryRecord.objects.get(app_name=APP, user_id=USER).pinned


@pytest.mark.django_db(transaction=True)
def test_remote_search_returns_each_memorys_role_as_in_process(remote_client):
    """Entries travel as ADK's JSON, their content's role with them: an entry added with
    role "user" and no author, or an agent's event relaying the user, is "user" both ways."""
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from records import later, memory_service, touches

    memory = RemoteMemoryService(client=remote_client)
    query = "penicillin jazz friday mill"
    relayed = text_event("I prefer jazz music", author="pharmacy_agent")
    relayed.content.role = "user"
    answer = text_event("Your order ships on Friday", author="pharmacy_agent")
    session = Session(
        id="s1", app_name=APP, user_id=USER, events=[text_event("I am allergic to penicillin")]
    )
    entry = MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text="Deliver to 4 Mill Lane")])
    )

    async def scenario():
        await memory.add_session_to_memory(session)
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[relayed, answer])
        await memory.add_memory(app_name=APP, user_id=USER, memories=[entry])
        return await memory.search_memory(app_name=APP, user_id=USER, query=query)

    remote = asyncio.run(scenario()).memories
    roles = {m.content.parts[0].text: (m.author, m.content.role) for m in remote}
    assert roles == {
        "I am allergic to penicillin": ("user", "user"),
        "I prefer jazz music": ("pharmacy_agent", "user"),
        "Your order ships on Friday": ("pharmacy_agent", "model"),
        "Deliver to 4 Mill Lane": (None, "user"),
    }
    assert remote == memory_service.search_entries(APP, USER, query, timezone.now())
    later.drain()  # the searches' touches are written after the answer
    touches.flush_touches()  # with Redis the search hits land now, not in a later test


def test_numbers_beyond_the_apis_bounds_answer_as_in_process(live_key):
    """``num_recent_events=sys.maxsize`` (an "all events" idiom) gets every event, and a
    version no artifact can have is None, as in process (the API refuses both numbers)."""
    import sys

    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.genai import types

    from memadmin_client.wire import MAX_ARTIFACT_VERSION, MAX_RECENT_EVENTS

    sessions = RemoteSessionService(*live_key, limits=NO_KEEPALIVE)
    artifacts_ = RemoteArtifactService(*live_key, limits=NO_KEEPALIVE)

    async def scenario():
        session = await sessions.create_session(app_name=APP, user_id=USER, session_id="s1")
        for text in ("one", "two"):
            await sessions.append_event(session, text_event(text))
        for n in (MAX_RECENT_EVENTS + 1, sys.maxsize):
            got = await sessions.get_session(
                app_name=APP, user_id=USER, session_id="s1",
                config=GetSessionConfig(num_recent_events=n),
            )  # fmt: skip
            assert [e.content.parts[0].text for e in got.events] == ["one", "two"]
        await artifacts_.save_artifact(
            app_name=APP, user_id=USER, filename="user:a.txt", artifact=types.Part(text="a")
        )
        for version in (MAX_ARTIFACT_VERSION + 1, 2**63, -(2**40)):
            loaded = await artifacts_.load_artifact(
                app_name=APP, user_id=USER, filename="user:a.txt", version=version
            )
            assert loaded is None
            with pytest.raises(InputValidationError, match="session"):  # as in process
                await artifacts_.load_artifact(
                    app_name=APP, user_id=USER, filename="a.txt", version=version
                )

    asyncio.run(scenario())
