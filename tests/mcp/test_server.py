"""manage.py mcp, driven by the SDK's client over both transports: the tools reach the
same records the API and the ADK services do; bad input and wrong keys are refused and
write nothing."""

import json
import subprocess
import sys

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from mcp.shared.exceptions import MCPError

from api import keys
from memadmin.pseudonyms import pseudonym
from records import memory_service
from records.models import Correction, MemoryRecord, Policy

from ..asyncutil import run
from .conftest import APP, OTHER_APP, ROOT, TRANSPORTS, USER, server_env

pytestmark = pytest.mark.django_db(transaction=True)


def text_of(result) -> str:
    return " ".join(c.text for c in result.content if c.type == "text")


@pytest.mark.parametrize(
    "transport,mode", [("stdio", "auto"), ("http", "auto"), ("http", "legacy")]
)
def test_add_search_delete(connect, api_key, transport, mode):
    async def scenario():
        async with connect(transport, api_key, mode) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"search_memory", "add_memory", "delete_memory", "report_forgotten"}
            added = await client.call_tool(
                "add_memory",
                {
                    "user_id": USER,
                    "text": "My delivery address is 12 Elm Street",
                    "importance": 0.7,
                },
            )
            assert not added.is_error, text_of(added)
            assert added.structured_content["added"] == 1
            again = await client.call_tool(
                "add_memory", {"user_id": USER, "text": "My delivery address is 12 Elm Street"}
            )
            assert again.structured_content["added"] == 0  # one record per distinct text
            found = await client.call_tool(
                "search_memory", {"user_id": USER, "query": "delivery address"}
            )
            memories = found.structured_content["memories"]
            deleted = await client.call_tool(
                "delete_memory", {"user_id": USER, "memory_id": memories[0]["id"]}
            )
            after = await client.call_tool(
                "search_memory", {"user_id": USER, "query": "delivery address"}
            )
            return memories, deleted.structured_content, after.structured_content

    memories, deleted, after = run(scenario())
    [memory] = memories
    record = memory.pop("id")
    assert memory.pop("time")
    assert memory == {
        "text": "My delivery address is 12 Elm Street",
        "importance": 0.7,
        "pinned": False,
    }
    assert deleted == {"deleted": 1}
    assert after == {"memories": []}
    assert not MemoryRecord.objects.filter(pk=int(record)).exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refused_input_is_a_tool_error_and_writes_nothing(connect, api_key, transport):
    calls = [
        ("add_memory", {"user_id": USER, "text": "I like tea", "importance": 2}, "0..1"),
        ("add_memory", {"user_id": USER, "text": "I like tea", "importance": "0.5"}, "number"),
        ("add_memory", {"user_id": USER, "text": "I like tea", "pinned": "yes"}, "boolean"),
        ("add_memory", {"user_id": "", "text": "I like tea"}, "user_id"),
        ("add_memory", {"user_id": USER, "text": "   "}, "text is empty"),
        ("add_memory", {"user_id": "x" * 1000, "text": "I like tea"}, "at most"),
        ("add_memory", {"user_id": USER, "text": "I like tea", "importanse": 1}, "importanse"),
        ("search_memory", {"user_id": USER}, "query"),
        ("delete_memory", {"user_id": USER, "memory_id": 0}, "greater than or equal to 1"),
        ("delete_memory", {"user_id": USER, "memory_id": "abc"}, "a record id as returned"),
        ("report_forgotten", {"user_id": "nul\x00"}, "NUL"),
    ]

    async def scenario():
        async with connect(transport, api_key) as client:
            return [await client.call_tool(name, args) for name, args, _ in calls]

    results = run(scenario())
    for (name, args, expected), result in zip(calls, results, strict=True):
        assert result.is_error, (name, args)
        assert expected in text_of(result), (name, args, text_of(result))
    assert not MemoryRecord.objects.exists()
    assert not Correction.objects.exists()


def test_stdio_refuses_a_missing_wrong_or_revoked_key(settings, api_key):
    revoked = keys.create_key(APP, "old agent", timezone.now())
    keys.revoke_key(revoked.key.prefix, timezone.now())
    for token, expected in [
        ("", "Set MEMADMIN_API_KEY"),
        ("mma_0000_wrong", "Unknown API key"),
        (revoked.token, "was revoked"),
    ]:
        env = server_env(settings.SECRET_KEY) | {"MEMADMIN_API_KEY": token}
        done = subprocess.run(
            [sys.executable, "manage.py", "mcp"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0
        assert expected in done.stderr
        assert done.stdout == ""  # stdout is the protocol's


@pytest.mark.parametrize(
    ("port", "message"), [("99999", "not a port: give 1 to 65535"), ("x", "not a port number")]
)
def test_an_impossible_port_is_refused_before_serving(port, message):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message):
        call_command("mcp", "--transport", "http", "--port", port)


def test_http_refuses_a_missing_wrong_or_revoked_key(http_server, connect, api_key):
    revoked = keys.create_key(APP, "old agent", timezone.now())
    keys.revoke_key(revoked.key.prefix, timezone.now())
    for headers, code in [
        ({}, "unauthorized"),
        ({"Authorization": "Bearer mma_0000_wrong"}, "invalid_key"),
        ({"Authorization": f"Bearer {revoked.token}"}, "revoked_key"),
    ]:
        response = httpx.post(http_server, headers=headers, json={}, timeout=60)
        assert response.status_code == 401
        assert response.json()["code"] == code
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="memadmin"'

    async def with_the_wrong_key():
        async with connect("http", "mma_0000_wrong") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as refused:  # noqa: B017,PT011 - the SDK's task group
        run(with_the_wrong_key())
    assert "error response" in repr(refused.value)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_another_apps_key_reaches_nothing_of_this_app(connect, api_key, other_key, transport):
    now = timezone.now()
    memory_service.add_memories(APP, USER, [entry("I am allergic to penicillin")], now)
    [record] = MemoryRecord.objects.filter(app_name=APP)

    async def scenario():
        async with connect(transport, other_key) as client:
            found = await client.call_tool(
                "search_memory", {"user_id": USER, "query": "penicillin"}
            )
            deleted = await client.call_tool(
                "delete_memory", {"user_id": USER, "memory_id": record.id}
            )
            refusals = []
            for uri in (
                f"memadmin://apps/{APP}/policy",
                f"memadmin://apps/{APP}/users/{USER}/pinned",
            ):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                refusals.append(str(refused.value))
            return found.structured_content, deleted.structured_content, refusals

    found, deleted, refusals = run(scenario())
    assert found == {"memories": []}
    assert deleted == {"deleted": 0}
    assert MemoryRecord.objects.filter(pk=record.pk).exists()
    for refusal in refusals:
        assert f"belongs to app {OTHER_APP!r}" in refusal


def test_a_refused_resource_read_is_logged_without_the_user_id(connect, mcp_http_server, other_key):
    """The SDK logs a failed read with its URI, which names the user: pseudonymised."""
    user = "cust-LOGGED-7731"

    async def scenario():
        async with connect("http", other_key) as client:
            with pytest.raises(MCPError):
                await client.read_resource(f"memadmin://apps/{APP}/users/{user}/pinned")

    run(scenario())
    log = mcp_http_server.log.read_text()
    assert f"memadmin://apps/{APP}/users/{pseudonym(user)}/pinned" in log
    assert user not in log


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resources_pinned_facts_and_policy(connect, api_key, transport):
    now = timezone.now()
    memory_service.add_memories(
        APP, USER, [entry("My name is Ana")], now, {"pinned": True, "importance": 0.9}
    )
    memory_service.add_memories(
        APP, USER, [entry("I prefer morning deliveries")], now, {"pinned": False}
    )

    async def scenario():
        async with connect(transport, api_key) as client:
            templates = await client.list_resource_templates()
            pinned = await client.read_resource(f"memadmin://apps/{APP}/users/{USER}/pinned")
            policy = await client.read_resource(f"memadmin://apps/{APP}/policy")
            reported = await client.call_tool(
                "report_forgotten", {"user_id": USER, "about": "my name"}
            )
            return templates, pinned, policy, reported

    templates, pinned, policy, reported = run(scenario())
    assert {t.uri_template for t in templates.resource_templates} == {
        "memadmin://apps/{app_name}/users/{user_id}/pinned",
        "memadmin://apps/{app_name}/policy",
    }
    facts = json.loads(pinned.contents[0].text)
    assert [m["text"] for m in facts["memories"]] == ["My name is Ana"]
    assert facts["memories"][0]["pinned"] is True
    row = Policy.objects.get(app_name=APP)
    assert json.loads(policy.contents[0].text) == {
        "app_name": APP,
        "version": row.version,
        **row.snapshot(),
    }
    assert reported.structured_content == {"recorded": True, "matched_recent_eviction": False}
    assert Correction.objects.filter(app_name=APP, user_id=USER).count() == 1


def entry(text):
    return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=text)]))


def test_a_key_revoked_during_a_stdio_session_is_refused_at_its_next_call(connect):
    new = keys.create_key(APP, "desktop agent", timezone.now())

    async def scenario():
        async with connect("stdio", new.token) as client:
            before = await client.call_tool("search_memory", {"user_id": USER, "query": "tea"})
            await sync_to_async(keys.revoke_key)(new.key.prefix, timezone.now())
            after = await client.call_tool("add_memory", {"user_id": USER, "text": "I like tea"})
            return before, after

    before, after = run(scenario())
    assert not before.is_error
    assert after.is_error
    assert "was revoked" in text_of(after)
    assert not MemoryRecord.objects.exists()


def test_http_refuses_a_body_over_the_apis_limit(http_server, api_key, settings):
    too_big = "x" * (settings.MEMADMIN_API_MAX_BODY_BYTES + 1)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add_memory", "arguments": {"user_id": USER, "text": too_big}},
    }
    response = httpx.post(
        http_server,
        json=call,
        headers={
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json, text/event-stream",
        },
        timeout=60,
    )
    assert response.status_code == 413
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("transport", ["stdio"])
def test_delete_memory_takes_no_id_but_a_whole_number(connect, api_key, transport):
    """true and 1.0 read as 1 in pydantic's lax mode: a confused argument must not delete
    record 1. "5" (the id as search returns it) still works."""
    now = timezone.now()
    memory_service.add_memories(
        APP, USER, [entry("I am allergic to penicillin"), entry("I live in Leeds")], now
    )
    first, second = MemoryRecord.objects.filter(app_name=APP).order_by("id")
    refused = [True, float(first.id), "²", f"{first.id}.0", [first.id]]

    async def scenario():
        async with connect(transport, api_key) as client:
            results = [
                await client.call_tool("delete_memory", {"user_id": USER, "memory_id": value})
                for value in refused
            ]
            as_text = await client.call_tool(
                "delete_memory", {"user_id": USER, "memory_id": str(second.id)}
            )
            return results, as_text.structured_content

    results, deleted = run(scenario())
    for value, result in zip(refused, results, strict=True):
        assert result.is_error and "a record id as returned" in text_of(result), (
            value,
            text_of(result),
        )
    assert deleted == {"deleted": 1}
    left = MemoryRecord.objects.filter(app_name=APP).values_list("id", flat=True)
    assert list(left) == [first.id]
