"""The end-to-end ADK scenario of tests/records/test_e2e_runner.py, through HTTP:
a real Runner with the scripted model, its sessions and memory in a memadmin server
reached only by RemoteSessionService and RemoteMemoryService."""

import random

import pytest
from django.utils import timezone
from google.adk.agents.llm_agent import LlmAgent
from google.adk.runners import Runner
from google.adk.tools.load_memory_tool import load_memory_tool
from google.adk.tools.preload_memory_tool import preload_memory_tool

from memadmin_client import RemoteMemoryService, RemoteSessionService
from records import demo
from records.models import (
    AgentSession,
    EvictionEvent,
    ImportanceRule,
    MemoryRecord,
    SessionEvent,
)

from ..asyncutil import run
from ..records.factories import text_event
from ..records.scripted_llm import ScriptedLlm, call, say
from ..records.test_e2e_runner import turn

pytestmark = pytest.mark.django_db(transaction=True)

APP = demo.PHARMACY
USER = demo.PHARMACY_CUSTOMER


def make_runner(model, client):
    agent = LlmAgent(
        name="pharmacy_agent",
        model=model,
        instruction="You help pharmacy customers.",
        tools=[preload_memory_tool, load_memory_tool],
    )
    return Runner(
        app_name=APP,
        agent=agent,
        session_service=RemoteSessionService(client=client),
        memory_service=RemoteMemoryService(client=client),
    )


def test_turns_reach_memadmin_search_through_preload_and_load_memory_tools(remote_client):
    model = ScriptedLlm(
        script=[
            say("Noted, thank you. Anything else?"),  # turn 1
            call("load_memory", query="penicillin allergy"),  # turn 2: the model asks memory
            say("You told me you are allergic to penicillin."),
        ]
    )
    runner = make_runner(model, remote_client)

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
    # the sessions live in memadmin's database, written over HTTP
    visit_1 = AgentSession.objects.get(app_name=APP, user_id=USER, session_id="visit-1")
    assert SessionEvent.objects.filter(session=visit_1).count() == 2  # user + agent
    # the agent's "Noted, thank you" was small talk: only the allergy became a memory
    [record] = MemoryRecord.objects.filter(app_name=APP, user_id=USER)
    assert record.pinned and record.source_session_id == "visit-1"
    # preload_memory put it in the prompt of turn 2 before the model spoke ...
    assert "allergic to penicillin" in model.request_text(1)
    # ... and load_memory's function response carried it back to the model
    assert "allergic to penicillin" in model.request_text(2)


def test_the_articles_pharmacy_scenario_end_to_end(remote_client):
    now = timezone.now()
    MemoryRecord.objects.bulk_create(demo.pharmacy_customer_records(now, random.Random(7)))
    low_notes = set(
        MemoryRecord.objects.filter(user_id=USER, importance=0.1).values_list("id", flat=True)
    )
    assert len(low_notes) == 4
    allergy = MemoryRecord.objects.get(user_id=USER, pinned=True)
    ImportanceRule.objects.create(
        app_name=APP,
        name="chit-chat",
        category="small-talk",
        pattern=r"weather|my cat|hope your day|busy week",
        importance=0.1,
    )
    model = ScriptedLlm(script=[say("Noted, thank you.")])
    runner = make_runner(model, remote_client)
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
