"""Erasure has a Celery queue of its own, so sweep work queued ahead cannot delay it."""

import pytest
from django.utils import timezone

from erasure import signing
from erasure.models import ErasureRequest, ErasureStatus
from memadmin.celery import app as celery_app
from memadmin_client.receipts import verify_receipt
from records.models import MemoryRecord
from sweeper import runs, tasks
from sweeper.models import Run, RunKind, RunStatus

from ..conftest import wait_until
from ..records.rows import make_records
from .helpers import USER, submit

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_erasure_tasks_are_routed_to_the_erasure_queue_and_the_rest_to_the_default():
    route = celery_app.amqp.router.route
    assert route({}, "erasure.run_erasure")["queue"].name == "erasure"
    assert route({}, "erasure.reconcile_erasures")["queue"].name == "erasure"
    for task in (
        "sweeper.tasks.run_item",
        "sweeper.tasks.execute_run",
        "records.tasks.rescore_app",
    ):
        assert route({}, task)["queue"].name == "celery"


def test_an_erasure_worker_runs_it_while_sweep_work_waits_on_the_default_queue(
    celery_worker_factory,
):
    celery_worker_factory(queues=("erasure",))  # what `make run` starts next to the sweep worker
    make_records("pharmacy", USER, 3, now=timezone.now())
    sweep = runs.create_run(
        RunKind.SWEEP, enqueue=tasks.execute_run.delay
    )  # no worker here consumes the default queue
    request = submit("pharmacy", enqueue_job=True)
    wait_until(
        lambda: ErasureRequest.objects.get(pk=request.pk).status == ErasureStatus.VERIFIED,
        timeout=120,
        message="the erasure to be verified",
    )
    assert not MemoryRecord.objects.filter(user_id=USER).exists()
    assert Run.objects.get(pk=sweep.pk).status == RunStatus.QUEUED
    # The worker signed the receipt with the key this (web) process publishes.
    receipt = ErasureRequest.objects.get(pk=request.pk).receipt
    assert verify_receipt(receipt, signing.published_keys()).receipt["request_id"] == request.pk
