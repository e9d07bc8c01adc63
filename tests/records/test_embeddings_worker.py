"""The embedding back-fill on a real Celery worker, started from the dashboard."""

import pytest
from django.urls import reverse
from django.utils import timezone

from records import embeddings
from records.models import MemoryRecord, RecordEmbedding

from ..conftest import wait_until
from .rows import make_records

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

EMBEDDER = "tests.embedders.bag_of_concepts"


def test_the_dashboard_starts_a_back_fill_that_a_worker_finishes(
    celery_worker_factory, login, settings
):
    # Written before the embedder was set: no vectors.
    make_records("garage", "u1", 150, now=timezone.now(), content="My car is blue")
    assert not RecordEmbedding.objects.exists()
    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": EMBEDDER}
    celery_worker_factory(MEMADMIN_EMBEDDER=EMBEDDER)
    client = login("ops")
    response = client.post(reverse("records:embeddings_backfill"), headers={"HX-Request": "true"})
    assert response.status_code == 200
    wait_until(
        lambda: embeddings.progress().missing == 0,
        timeout=120,
        message="the worker to embed every record",
    )
    assert set(RecordEmbedding.objects.values_list("record_id", flat=True)) == set(
        MemoryRecord.objects.values_list("id", flat=True)
    )
    body = client.get(reverse("records:embeddings") + "?watch=1").content.decode()
    assert '<progress value="150" max="150"' in body
