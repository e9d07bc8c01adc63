"""The Django admin lets superusers browse the memory models without changing them."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from records.models import MemoryRecord

pytestmark = pytest.mark.django_db


def test_superuser_can_browse_records_but_not_change_them(login):
    now = timezone.now()
    record = MemoryRecord.objects.create(
        app_name="app",
        user_id="alice",
        content="likes tea",
        created_at=now,
        last_accessed_at=now - timedelta(days=30),
    )
    client = login(superuser=True, username="root")
    assert client.get(reverse("admin:records_memoryrecord_changelist")).status_code == 200
    change_url = reverse("admin:records_memoryrecord_change", args=[record.pk])
    assert client.get(change_url).status_code == 200
    assert client.post(change_url, {"content": "changed", "pinned": "on"}).status_code == 403
    assert client.get(reverse("admin:records_memoryrecord_add")).status_code == 403
    record.refresh_from_db()
    assert (record.content, record.pinned) == ("likes tea", False)


@pytest.mark.parametrize(
    "model",
    ["agentsession", "artifact", "policy", "policyversion", "evictionevent", "retiredsession"],
)
def test_every_memory_model_has_a_changelist(login, model):
    client = login(superuser=True, username="root")
    assert client.get(reverse(f"admin:records_{model}_changelist")).status_code == 200
