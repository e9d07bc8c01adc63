import pytest
from django.core.management import call_command
from google.adk.events.event import Event

from records import demo
from records.models import AgentSession, MemoryRecord, SessionEvent

pytestmark = pytest.mark.django_db


def test_seed_demo_builds_the_articles_pharmacy_customer(capsys):
    call_command("seed_demo", "--users-per-app", "3")
    customer = MemoryRecord.objects.filter(app_name=demo.PHARMACY, user_id=demo.PHARMACY_CUSTOMER)
    assert customer.count() == 498
    tokens = sum(customer.values_list("tokens", flat=True))
    assert 30_000 < tokens < 40_000  # about 70 tokens each, under the 40k cap
    allergy = customer.get(content__icontains="allergic to penicillin")
    assert allergy.pinned and allergy.importance == 0.9
    assert "Demo data:" in capsys.readouterr().out


def test_seed_demo_sessions_hold_valid_adk_events_some_idle_some_active():
    call_command("seed_demo", "--users-per-app", "3")
    for e in SessionEvent.objects.all()[:50]:
        assert Event.model_validate(e.data).id == e.event_id
    updates = list(AgentSession.objects.values_list("last_update_time", flat=True))
    import time

    now = time.time()
    assert any(now - t > 7 * 86400 for t in updates)
    assert any(now - t < 86400 for t in updates)


def test_seed_demo_is_idempotent_and_reset_regenerates(capsys):
    call_command("seed_demo", "--users-per-app", "2")
    first = MemoryRecord.objects.count()
    call_command("seed_demo", "--users-per-app", "2")
    assert "already present" in capsys.readouterr().out
    assert MemoryRecord.objects.count() == first
    call_command("seed_demo", "--users-per-app", "2", "--reset")
    assert MemoryRecord.objects.count() == first  # same seed, same data, no duplicates


def test_seed_demo_refuses_nonsense():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="between 0 and 10000"):
        call_command("seed_demo", "--users-per-app", "-1")
