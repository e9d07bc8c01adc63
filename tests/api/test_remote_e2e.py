"""The end-to-end ADK scenarios of tests/records/test_e2e_runner.py, through HTTP:
a real Runner with the scripted model, its sessions and memory in a memadmin server
reached only by RemoteSessionService and RemoteMemoryService."""

import asyncio

import pytest
from django.utils import timezone
from google.adk.runners import Runner
from google.adk.sessions.session import Session

from memadmin_client import RemoteMemoryService, RemoteSessionService
from records import later, touches
from records.models import AgentSession, MemoryRecord, SessionEvent

from ..records.e2e_scenarios import (
    APP,
    USER,
    delayed_order,
    delayed_order_model,
    pharmacy_agent,
    recall_model,
    remember_then_recall,
    store_the_articles_customer,
)
from ..records.factories import text_event

pytestmark = pytest.mark.django_db(transaction=True)


def make_runner(model, client):
    return Runner(
        app_name=APP,
        agent=pharmacy_agent(model),
        session_service=RemoteSessionService(client=client),
        memory_service=RemoteMemoryService(client=client),
    )


def test_turns_reach_memadmin_search_through_preload_and_load_memory_tools(remote_client):
    model = recall_model()
    remember_then_recall(make_runner(model, remote_client), model)
    # the sessions live in memadmin's database, written over HTTP
    visit_1 = AgentSession.objects.get(app_name=APP, user_id=USER, session_id="visit-1")
    assert SessionEvent.objects.filter(session=visit_1).count() == 2  # user + agent


def test_the_articles_pharmacy_scenario_end_to_end(remote_client):
    low_notes, allergy = store_the_articles_customer(timezone.now())
    delayed_order(make_runner(delayed_order_model(), remote_client), low_notes, allergy)


FACTS = [
    "I am allergic to penicillin",
    "Deliver to 12 Elm Street",
    "My name is Ana",
    "My date of birth is 1 May 1980",
    "I prefer morning deliveries",
]


def test_an_agent_that_saves_what_it_recalled_does_not_double_its_memory(remote_client):
    """search_memory, then add_memory of those very entries, through RemoteMemoryService."""
    memory = RemoteMemoryService(client=remote_client)
    session = Session(
        id="visit-1",
        app_name=APP,
        user_id=USER,
        events=[text_event(t) for t in FACTS],
    )
    asyncio.run(memory.add_session_to_memory(session))
    found = asyncio.run(
        memory.search_memory(app_name=APP, user_id=USER, query="penicillin elm ana birth morning")
    ).memories
    assert len(found) == len(FACTS)

    for _ in range(2):
        asyncio.run(memory.add_memory(app_name=APP, user_id=USER, memories=found))

    assert MemoryRecord.objects.filter(app_name=APP, user_id=USER).count() == len(FACTS)
    again = asyncio.run(
        memory.search_memory(app_name=APP, user_id=USER, query="penicillin elm ana birth morning")
    ).memories
    assert sorted(e.id for e in again) == sorted(e.id for e in found)
    later.drain()  # the searches' touches are written after the answer
    touches.flush_touches()  # with Redis the search hits land now, not in a later test
