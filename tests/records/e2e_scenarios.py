"""The article's ADK scenarios, run by a real Runner with a scripted model; shared by the
in-process test (tests/records/test_e2e_runner.py) and the same scenarios over HTTP
(tests/api/test_remote_e2e.py), which differ only in the services the runner gets."""

import random

from google.adk.agents.llm_agent import LlmAgent
from google.adk.tools.load_memory_tool import load_memory_tool
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types

from memadmin import demo
from records.models import EvictionEvent, ImportanceRule, MemoryRecord

from ..asyncutil import run
from .factories import text_event
from .scripted_llm import ScriptedLlm, call, say

APP = demo.PHARMACY
USER = demo.PHARMACY_CUSTOMER


def pharmacy_agent(model) -> LlmAgent:
    return LlmAgent(
        name="pharmacy_agent",
        model=model,
        instruction="You help pharmacy customers.",
        tools=[preload_memory_tool, load_memory_tool],
    )


def user_says(text):
    return types.Content(role="user", parts=[types.Part(text=text)])


async def turn(runner, session_id, text):
    return [
        e
        async for e in runner.run_async(
            user_id=USER, session_id=session_id, new_message=user_says(text)
        )
    ]


# --- 1. told in one visit, recalled in the next through the memory tools -------------


def recall_model() -> ScriptedLlm:
    return ScriptedLlm(
        script=[
            say("Noted, thank you. Anything else?"),  # turn 1
            call("load_memory", query="penicillin allergy"),  # turn 2: the model asks memory
            say("You told me you are allergic to penicillin."),
        ]
    )


def remember_then_recall(runner, model) -> None:
    """Visit 1 states the allergy and is ingested; visit 2's answer comes from memory."""

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
    # the agent's "Noted, thank you" was small talk: only the allergy became a memory
    [record] = MemoryRecord.objects.filter(app_name=APP, user_id=USER)
    assert record.pinned and record.source_session_id == "visit-1"
    # preload_memory put it in the prompt of turn 2 before the model spoke ...
    assert "allergic to penicillin" in model.request_text(1)
    # ... and load_memory's function response carried it back to the model
    assert "allergic to penicillin" in model.request_text(2)


# --- 2. the article's customer at the cap: a delayed-order chat evicts four old notes --


def delayed_order_model() -> ScriptedLlm:
    return ScriptedLlm(script=[say("Noted, thank you.")])


def store_the_articles_customer(now):
    """cust-0042 at 498 records (four long-unread notes at 0.1, the pinned allergy) and
    the app's chit-chat rule; returns (ids of the four notes, the allergy)."""
    MemoryRecord.objects.bulk_create(demo.pharmacy_customer_records(now, random.Random(7)))
    assert MemoryRecord.objects.filter(user_id=USER).count() == 498
    low_notes = set(
        MemoryRecord.objects.filter(user_id=USER, importance=0.1).values_list("id", flat=True)
    )
    assert len(low_notes) == 4
    # staff rule: chit-chat that is not pure small talk scores 0.1 in this app
    ImportanceRule.objects.create(
        app_name=APP,
        name="chit-chat",
        category="small-talk",
        pattern=r"weather|my cat|hope your day|busy week",
        importance=0.1,
    )
    return low_notes, MemoryRecord.objects.get(user_id=USER, pinned=True)


DELAYED_ORDER_CHAT = [
    "Please deliver to 4 Mill Lane, Leeds from now on",  # 0.8
    "The courier was rude and the parcel was damaged",  # 0.5
    "Lovely weather in Leeds today",  # 0.1 x 4
    "My cat says hello",
    "Hope your day is going well",
    "It has been a busy week",
]


def delayed_order(runner, low_notes, allergy) -> None:
    """One turn, five more events, ingest: six new records, exactly the four notes go."""

    async def scenario():
        sessions = runner.session_service
        await sessions.create_session(app_name=APP, user_id=USER, session_id="delayed-order")
        await turn(runner, "delayed-order", DELAYED_ORDER_CHAT[0])
        session = await sessions.get_session(app_name=APP, user_id=USER, session_id="delayed-order")
        for text in DELAYED_ORDER_CHAT[1:]:
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
