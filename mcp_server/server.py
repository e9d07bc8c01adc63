"""memadmin's memory over the Model Context Protocol, on the official SDK (``mcp``).

For agents that are not built on ADK. A call is authorised by an API key, as a call to
/api/v1/ is (``api.auth.key_for_header``): the key names its app, the tools take the
user id. Every tool and resource calls the service function the ADK services and the
HTTP API call (``records.memory_service``, ``records.feedback``) and validates its input
with the API's own request schemas; nothing about memory is decided here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from asgiref.sync import sync_to_async
from django.db import DataError, close_old_connections
from django.utils import timezone
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, Strict, ValidationError

from api.auth import check_app, key_for_header
from api.errors import ApiError, refused_value
from api.schemas import AddMemoriesIn, CorrectionIn, IngestOut, MemoryEntryIn, SearchIn
from records import memory_service
from records.feedback import report_correction
from records.ids import record_id
from records.policies import policy_for

NAME = "memadmin"
# The ``Authorization`` header value a call is made with: the request's own over HTTP,
# the one key given to the process over stdio.
Authorization = Callable[[Context], str | None]
# App names and user ids are ids, not paths: "..", "/" or "C:" are theirs to use.
IDS = ResourceSecurity(exempt_params={"app_name", "user_id"})


# A record id as search returns it (the API's MemoryId): "5" or 5.
MemoryId = Annotated[int, BeforeValidator(record_id), Field(ge=1, le=2**63 - 1)]

UserId = Annotated[str, Field(description="The user whose memory this is (your own user id).")]


class Memory(BaseModel):
    id: str = Field(description="Give it to delete_memory.")
    text: str
    time: str = Field(description="When it was said or stored (ISO 8601, UTC).")
    importance: float = Field(description="0..1, from the app's rules or as added.")
    pinned: bool = Field(description="Pinned memories never expire and are never evicted.")


class Memories(BaseModel):
    memories: list[Memory]


class Added(BaseModel):
    candidates: int = Field(description="Texts found (small talk is dropped).")
    added: int = Field(description="New memories stored.")
    duplicates: int = Field(description="Already stored.")
    previously_evicted: int = Field(description="Evicted before; not brought back.")
    refreshed: int = Field(description="Already this user's memories: counted as used instead.")
    evicted: int = Field(description="Memories the app's policy evicted after this write.")


class Deleted(BaseModel):
    deleted: int


class Reported(BaseModel):
    recorded: bool
    matched_recent_eviction: bool


class Refused(Exception):
    """Input or key refused; the message is for people."""


def as_memory(entry: MemoryEntry) -> Memory:
    parts = (entry.content.parts or []) if entry.content else []
    metadata = entry.custom_metadata or {}
    return Memory(
        id=entry.id or "",
        text="\n".join(p.text for p in parts if p.text),
        time=entry.timestamp or "",
        importance=metadata["importance"],
        pinned=metadata["pinned"],
    )


def _refusals(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` as the API's error handlers would answer it: a refused key, a domain
    ValueError/TypeError or a value the database refused becomes ``Refused`` (the
    transaction rolled back: nothing written). Connections are handled as Django does
    around a request: this process lives for days."""

    def run():
        close_old_connections()
        try:
            return fn()
        except ApiError as exc:
            raise Refused(exc.detail) from None
        except ValidationError as exc:  # the API's schemas: name the fields, not the input
            problems = exc.errors(include_input=False, include_url=False)
            raise Refused(
                "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in problems)
            ) from None
        except (ValueError, TypeError) as exc:
            raise Refused(str(exc) or type(exc).__name__) from None
        except DataError as exc:
            raise Refused(refused_value(exc)) from None
        finally:
            close_old_connections()

    return run


async def _in_django(fn: Callable[[], Any], error: type[Exception]) -> Any:
    # The ORM is synchronous: one thread for it, as the ADK services use.
    try:
        return await sync_to_async(_refusals(fn), thread_sensitive=True)()
    except Refused as exc:
        raise error(str(exc)) from None


def _app(authorization: str | None) -> str:
    return key_for_header(authorization, timezone.now()).app_name


async def _read_for_app(
    authorization: str | None, app_name: str, read: Callable[[], dict[str, Any]]
) -> str:
    """A resource of ``app_name`` as JSON, if the key is that app's."""

    def run():
        check_app(key_for_header(authorization, timezone.now()), app_name)
        return json.dumps({"app_name": app_name, **read()})

    return await _in_django(run, ResourceError)


def refuse_unknown_arguments(server: MCPServer):
    """Middleware: a call with an argument the tool does not take is refused, as the API
    refuses an unknown field; a misspelt ``importance`` must not be silently dropped."""
    known: dict[str, frozenset[str]] = {}

    async def middleware(ctx, call_next):
        params = ctx.params if isinstance(ctx.params, Mapping) else {}
        arguments = params.get("arguments")
        if ctx.method == "tools/call" and isinstance(arguments, Mapping):
            if not known:
                for tool in await server.list_tools():
                    known[tool.name] = frozenset(tool.input_schema.get("properties", {}))
            allowed = known.get(params.get("name"))
            unknown = sorted(set(arguments) - allowed) if allowed is not None else []
            if unknown:
                message = (
                    f"Unknown argument(s) {', '.join(map(repr, unknown))}; "
                    f"{params['name']} takes {', '.join(sorted(allowed))}."
                )
                return CallToolResult(
                    content=[TextContent(type="text", text=message)], is_error=True
                )
        return await call_next(ctx)

    return middleware


def build_server(authorization: Authorization) -> MCPServer:
    server = MCPServer(
        NAME,
        title="memadmin memory",
        instructions=(
            "Long-term memory of your users, kept within the app's policy. search_memory "
            "before answering; add_memory for facts worth keeping; report_forgotten when "
            "the user says they told you before."
        ),
    )
    server.middleware.append(refuse_unknown_arguments(server))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False))
    async def search_memory(user_id: UserId, query: str, ctx: Context) -> Memories:
        """Search the user's memory: at most 10 memories, most relevant first. The
        memories returned count as used (the policy keeps used memories longer)."""
        header = authorization(ctx)

        def run():
            body = SearchIn(query=query)
            entries = memory_service.search_entries(
                _app(header), user_id, body.query, timezone.now()
            )
            return Memories(memories=[as_memory(e) for e in entries])

        return await _in_django(run, ToolError)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    async def add_memory(
        user_id: UserId,
        text: Annotated[str, Field(description="One fact to remember, in plain words.")],
        ctx: Context,
        importance: Annotated[float, Strict(), Field(description="0..1")] | None = None,
        pinned: Annotated[bool, Strict(), Field(description="Never expire or evict.")]
        | None = None,
    ) -> Added:
        """Remember a fact about the user. The app's rules set its importance and pin
        (unless given here), small talk and duplicates are not stored, and the app's
        policy is enforced for the user afterwards."""
        header = authorization(ctx)

        def run():
            if not text.strip():
                raise ValueError("text is empty: give the fact to remember.")
            metadata = {"importance": importance, "pinned": pinned}
            body = AddMemoriesIn(
                memories=[
                    MemoryEntryIn(content=types.Content(role="user", parts=[types.Part(text=text)]))
                ],
                custom_metadata={k: v for k, v in metadata.items() if v is not None},
            )
            result = memory_service.add_memories(
                _app(header), user_id, body.memories, timezone.now(), body.custom_metadata
            )
            return Added(**IngestOut.of(result).model_dump())

        return await _in_django(run, ToolError)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
    async def delete_memory(
        user_id: UserId,
        ctx: Context,
        memory_id: Annotated[
            MemoryId | None, Field(description="The id search_memory returned; omit to delete all.")
        ] = None,
    ) -> Deleted:
        """Delete one of the user's memories, or all of them when no memory_id is given.
        Logged as a manual eviction (without the text)."""
        header = authorization(ctx)

        def run():
            memory = None if memory_id is None else str(memory_id)
            deleted = memory_service.delete(_app(header), user_id, memory, timezone.now())
            return Deleted(deleted=deleted)

        return await _in_django(run, ToolError)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    async def report_forgotten(
        user_id: UserId,
        ctx: Context,
        about: Annotated[
            str, Field(description="A few words on what was forgotten; never stored.")
        ] = "",
    ) -> Reported:
        """Report that the user had to repeat something you should have remembered
        ("I told you before..."). Counted in the app's forgot-something rate."""
        header = authorization(ctx)

        def run():
            body = CorrectionIn(about=about)
            correction = report_correction(_app(header), user_id, timezone.now(), about=body.about)
            return Reported(recorded=True, matched_recent_eviction=correction.matched_eviction)

        return await _in_django(run, ToolError)

    @server.resource(
        "memadmin://apps/{app_name}/users/{user_id}/pinned",
        name="pinned facts",
        description="The user's pinned memories (read-only): they never expire.",
        mime_type="application/json",
        security=IDS,
    )
    async def pinned_facts(app_name: str, user_id: str, ctx: Context) -> str:
        def read():
            entries = memory_service.pinned_entries(app_name, user_id)
            return {"user_id": user_id, "memories": [as_memory(e).model_dump() for e in entries]}

        return await _read_for_app(authorization(ctx), app_name, read)

    @server.resource(
        "memadmin://apps/{app_name}/policy",
        name="policy",
        description="The app's eviction policy (read-only; staff change it on the dashboard).",
        mime_type="application/json",
        security=IDS,
    )
    async def policy(app_name: str, ctx: Context) -> str:
        def read():
            row = policy_for(app_name)
            return {"version": row.version, **row.snapshot()}

        return await _read_for_app(authorization(ctx), app_name, read)

    return server
