"""A real ADK Runner with a scripted model drives turns through memadmin's services."""

import pytest
from django.utils import timezone
from google.adk.runners import Runner

from records.artifact_service import DjangoArtifactService
from records.memory_service import EvictingMemoryService
from records.models import AgentSession
from records.session_service import DjangoSessionService

from .e2e_scenarios import (
    APP,
    USER,
    delayed_order,
    delayed_order_model,
    pharmacy_agent,
    recall_model,
    remember_then_recall,
    store_the_articles_customer,
)

pytestmark = pytest.mark.django_db(transaction=True)


def make_runner(model, now):
    return Runner(
        app_name=APP,
        agent=pharmacy_agent(model),
        session_service=DjangoSessionService(),
        memory_service=EvictingMemoryService(clock=lambda: now),
        artifact_service=DjangoArtifactService(),
    )


def test_turns_reach_memadmin_search_through_preload_and_load_memory_tools():
    model = recall_model()
    remember_then_recall(make_runner(model, timezone.now()), model)
    # the turns live in memadmin's session store, events in order
    visits = {s.session_id: s for s in AgentSession.objects.filter(user_id=USER)}
    assert set(visits) == {"visit-1", "visit-2"}
    assert visits["visit-1"].event_count == 2 and visits["visit-2"].event_count >= 4


def test_the_articles_pharmacy_scenario_end_to_end():
    now = timezone.now()
    low_notes, allergy = store_the_articles_customer(now)
    delayed_order(make_runner(delayed_order_model(), now), low_notes, allergy)
