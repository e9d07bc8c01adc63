"""A real ADK Runner with a scripted model drives turns through memadmin's services."""

import random

import pytest
from django.utils import timezone
from google.adk.agents.llm_agent import LlmAgent
from google.adk.runners import Runner
from google.adk.tools.load_memory_tool import load_memory_tool
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types

from records import demo
from records.artifact_service import DjangoArtifactService
from records.memory_service import EvictingMemoryService
from records.models import AgentSession, EvictionEvent, ImportanceRule, MemoryRecord
from records.session_service import DjangoSessionService

from ..asyncutil import run
from .factories import text_event
from .scripted_llm import ScriptedLlm, call, say

pytestmark = pytest.mark.django_db(transaction=True)

APP = demo.PHARMACY
USER = demo.PHARMACY_CUSTOMER


def user_says(text):
    return types.Content(role="user", parts=[types.Part(text=text)])


async def turn(runner, session_id, text):
    return [
        e
        async for e in runner.run_async(
            user_id=USER, session_id=session_id, new_message=user_says(text)
        )
    ]


def make_runner(model, now):
    agent = LlmAgent(
        name="pharmacy_agent",
        model=model,
        instruction="You help pharmacy customers.",
        tools=[preload_memory_tool, load_memory_tool],
    )
    return Runner(
        app_name=APP,
        agent=agent,
        session_service=DjangoSessionService(),
        memory_service=EvictingMemoryService(clock=lambda: now),
        artifact_service=DjangoArtifactService(),
    )


def test_turns_reach_memadmin_search_through_preload_and_load_memory_tools():
    now = timezone.now()
    model = ScriptedLlm(
        script=[
            say("Noted, thank you. Anything else?"),  # turn 1
            call("load_memory", query="penicillin allergy"),  # turn 2: the model asks memory
            say("You told me you are allergic to penicillin."),
        ]
    )
    runner = make_runner(model, now)

    async def scenario():
        sessions = runner.session_service
        await sessions.create_session(app_name=APP, user_id=USER, session_id="visit-1")
        await turn(runner, "visit-1", "Hi! I am allergic to penicillin, please remember that.")
        visit_1 = await sessions.get_session(app_name=APP, user_id=USER, session_id="visit-1")
        await runner.memory_service.add_session_to_memory(visit_1)
        await sessions.create_session(app_name=APP, user_id=USER, session_id="visit-2")
        return await turn(runner, "visit-2", "Which antibiotics should I avoid given my allergy?")

    events = run(scenario())
    assert events[-1].content.parts[0].text == "You told me you are allergic to penicillin."
    # the turns live in memadmin's session store, events in order
    visits = {s.session_id: s for s in AgentSession.objects.filter(user_id=USER)}
    assert set(visits) == {"visit-1", "visit-2"}
    assert visits["visit-1"].event_count == 2 and visits["visit-2"].event_count >= 4
    # the agent's "Noted, thank you" was small talk: only the allergy became a memory
    [record] = MemoryRecord.objects.filter(app_name=APP, user_id=USER)
    assert record.pinned and record.source_session_id == "visit-1"
    # preload_memory put it in the prompt of turn 2 before the model spoke ...
    assert "allergic to penicillin" in model.request_text(1)
    # ... and load_memory's function response carried it back to the model
    assert "allergic to penicillin" in model.request_text(2)


def test_the_articles_pharmacy_scenario_end_to_end():
    now = timezone.now()
    MemoryRecord.objects.bulk_create(demo.pharmacy_customer_records(now, random.Random(7)))
    assert MemoryRecord.objects.filter(user_id=USER).count() == 498
    low_notes = set(
        MemoryRecord.objects.filter(user_id=USER, importance=0.1).values_list("id", flat=True)
    )
    assert len(low_notes) == 4
    allergy = MemoryRecord.objects.get(user_id=USER, pinned=True)
    # staff rule: chit-chat that is not pure small talk scores 0.1 in this app
    ImportanceRule.objects.create(
        app_name=APP,
        name="chit-chat",
        category="small-talk",
        pattern=r"weather|my cat|hope your day|busy week",
        importance=0.1,
    )
    model = ScriptedLlm(script=[say("Noted, thank you.")])
    runner = make_runner(model, now)
    delayed_order_chat = [
        "Please deliver to 4 Mill Lane, Leeds from now on",  # 0.8
        "The courier was rude and the parcel was damaged",  # 0.5
        "Lovely weather in Leeds today",  # 0.1 x 4
        "My cat says hello",
        "Hope your day is going well",
        "It has been a busy week",
    ]

    async def scenario():
        sessions = runner.session_service
        await sessions.create_session(app_name=APP, user_id=USER, session_id="delayed-order")
        await turn(runner, "delayed-order", "\n".join(delayed_order_chat[:1]))
        session = await sessions.get_session(app_name=APP, user_id=USER, session_id="delayed-order")
        for text in delayed_order_chat[1:]:
            await sessions.append_event(session, text_event(text))
        await runner.memory_service.add_session_to_memory(session)

    run(scenario())
    remaining = MemoryRecord.objects.filter(app_name=APP, user_id=USER)
    assert remaining.count() == 500
    evicted = set(EvictionEvent.objects.filter(user_id=USER).values_list("record_id", flat=True))
    assert evicted == low_notes  # exactly the four long-unread notes
    assert remaining.filter(id=allergy.id).exists()
    new = remaining.filter(source_session_id="delayed-order")
    assert sorted(new.values_list("importance", flat=True)) == [0.1, 0.1, 0.1, 0.1, 0.5, 0.8]
