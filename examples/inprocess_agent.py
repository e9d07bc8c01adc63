"""An ADK agent with memadmin as its session, memory and artifact services (in-process).

    .venv/bin/python examples/inprocess_agent.py

With GOOGLE_API_KEY set it talks to Gemini (MEMADMIN_EXAMPLE_MODEL, default
gemini-2.5-flash); without one it uses a small offline stand-in model, so the example
always runs. It uses the same settings as the rest of memadmin (the embedded SQLite
default unless DATABASE_URL is set).
"""

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from google.adk.agents.llm_agent import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.tools.preload_memory_tool import preload_memory_tool  # noqa: E402
from google.genai import types  # noqa: E402

from records.artifact_service import DjangoArtifactService  # noqa: E402
from records.memory_service import EvictingMemoryService  # noqa: E402
from records.session_service import DjangoSessionService  # noqa: E402
from records.tools import report_forgotten_tool  # noqa: E402

APP, USER = "example-pharmacy", "example-user"


class OfflineModel(BaseLlm):
    """Answers with what preload_memory put into the prompt (no network)."""

    model: str = "offline"

    async def generate_content_async(self, llm_request, stream=False):
        shown = "\n".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        past = shown.split("<PAST_CONVERSATIONS>")[-1].split("</PAST_CONVERSATIONS>")[0]
        remembered = [line for line in past.splitlines() if line.startswith("user:")]
        text = "I remember: " + "; ".join(remembered) if remembered else "Noted, thank you."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def model():
    if os.environ.get("GOOGLE_API_KEY"):
        return os.environ.get("MEMADMIN_EXAMPLE_MODEL", "gemini-2.5-flash")
    return OfflineModel()


async def say(runner, session_id, text):
    message = types.Content(role="user", parts=[types.Part(text=text)])
    reply = ""
    async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            reply = event.content.parts[0].text
    print(f"user: {text}\nagent: {reply}\n")


async def main():
    agent = LlmAgent(
        name="pharmacy_agent",
        model=model(),
        instruction="You help pharmacy customers. Use what you remember about them.",
        tools=[preload_memory_tool, report_forgotten_tool],
    )
    runner = Runner(
        app_name=APP,
        agent=agent,
        session_service=DjangoSessionService(),
        memory_service=EvictingMemoryService(),
        artifact_service=DjangoArtifactService(),
    )
    sessions = runner.session_service
    first = await sessions.create_session(app_name=APP, user_id=USER)
    await say(runner, first.id, "Hi! I am allergic to penicillin.")
    # Ingest the finished conversation (the sweeper does this for idle sessions).
    first = await sessions.get_session(app_name=APP, user_id=USER, session_id=first.id)
    await runner.memory_service.add_session_to_memory(first)

    second = await sessions.create_session(app_name=APP, user_id=USER)
    await say(runner, second.id, "Which antibiotics should I avoid with my allergy?")


if __name__ == "__main__":
    call_command("migrate", verbosity=0)
    asyncio.run(main())
