"""An ADK agent in its own process, with its sessions and memory in memadmin.

Start memadmin (``make run``), create a key for the app as ops
(``.venv/bin/python manage.py apikey create --app pharmacy-support --name example``),
then:

    MEMADMIN_URL=http://127.0.0.1:8000 MEMADMIN_API_KEY=mma_... \\
        .venv/bin/python examples/remote_agent.py

The agent process needs google-adk and httpx only: no Django, no memadmin settings.
With GOOGLE_API_KEY set it talks to Gemini (with ADK's preload_memory tool); without,
a small deterministic agent answers from memadmin's memory search, so the example
runs anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types

from memadmin_client import MemadminClient, RemoteMemoryService, RemoteSessionService


class RecallAgent(BaseAgent):
    """Answers with what memory holds about the user's message (no model needed)."""

    async def _run_async_impl(self, ctx):
        question = ctx.user_content.parts[0].text
        found = await ctx.memory_service.search_memory(
            app_name=ctx.app_name, user_id=ctx.user_id, query=question
        )
        remembered = [m.content.parts[0].text for m in found.memories if m.content.parts]
        reply = (
            "You told me: " + " / ".join(remembered)
            if remembered
            else "Noted, I will remember that."
        )
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=reply)]),
        )


def make_agent():
    if os.environ.get("GOOGLE_API_KEY") or os.environ.get("GOOGLE_GENAI_USE_VERTEXAI"):
        return LlmAgent(
            name="pharmacy_agent",
            model=os.environ.get("MEMADMIN_EXAMPLE_MODEL", "gemini-2.5-flash"),
            instruction="You help pharmacy customers. Use what you remember about them.",
            tools=[preload_memory_tool],
        )
    return RecallAgent(name="pharmacy_agent")


async def say(runner: Runner, user_id: str, session_id: str, text: str) -> str:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    replies = []
    async for event in runner.run_async(
        user_id=user_id, session_id=session_id, new_message=message
    ):
        if event.content and event.content.parts and event.content.parts[0].text:
            replies.append(event.content.parts[0].text)
    return " ".join(replies)


async def main(url: str, api_key: str, app_name: str, user_id: str) -> None:
    client = MemadminClient(url, api_key)  # one connection pool, shared by the services
    runner = Runner(
        app_name=app_name,
        agent=make_agent(),
        session_service=RemoteSessionService(client=client),
        memory_service=RemoteMemoryService(client=client),
    )
    sessions, memory = runner.session_service, runner.memory_service
    try:
        first = await sessions.create_session(
            app_name=app_name, user_id=user_id, session_id=f"visit-{uuid.uuid4().hex[:8]}"
        )
        print("user :", "I am allergic to penicillin.")
        print("agent:", await say(runner, user_id, first.id, "I am allergic to penicillin."))
        # End of the visit: what was said becomes long-term memory (rules, pins, caps).
        ended = await sessions.get_session(app_name=app_name, user_id=user_id, session_id=first.id)
        await memory.add_session_to_memory(ended)

        second = await sessions.create_session(app_name=app_name, user_id=user_id)
        question = "Which antibiotic allergy do I have?"
        print("user :", question)
        print("agent:", await say(runner, user_id, second.id, question))
    finally:
        await client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("MEMADMIN_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("MEMADMIN_API_KEY"))
    parser.add_argument("--app", default="pharmacy-support")
    parser.add_argument("--user", default="example-customer")
    args = parser.parse_args()
    if not args.api_key:
        parser.error("set MEMADMIN_API_KEY (manage.py apikey create --app ... --name ...)")
    asyncio.run(main(args.url, args.api_key, args.app, args.user))
