"""Run in a subprocess by test_tracing: one dashboard request and the task it queues,
then a database error quoting a stored row, traced into an in-memory exporter; prints
the finished spans (attributes, events, status) as JSON.

The worker is Celery's in-process test worker (a thread consuming from the real broker):
a worker in another process could not hand its spans to this process's in-memory exporter.
"""

import json
import os
import sys
import time

import django


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from memadmin import tracing

    exporter = InMemorySpanExporter()
    # Before django.setup() and the handler, as memadmin.wsgi does.
    assert tracing.configure(SimpleSpanProcessor(exporter), service="memadmin-test")
    django.setup()

    from celery.contrib.testing.worker import start_worker
    from django.contrib.auth import get_user_model
    from django.test import Client

    from memadmin.accounts import ensure_role_groups
    from memadmin.celery import app
    from sweeper.models import Run

    user = get_user_model().objects.create_user("trace-ops", password="pw-Secret-123")
    user.groups.add(ensure_role_groups()["ops"])
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    exporter.clear()  # the login's own queries are not part of the request
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        data = {"mode": "dry_run", "dry-kind": "sweep", "dry-app": "", "dry-as_of": ""}
        response = client.post("/sweeps/start/", data)
        assert response.status_code == 302, response.status_code
        deadline = time.monotonic() + 120
        while not Run.objects.filter(finished_at__isnull=False).exists():
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.05)
    # A page whose path and query carry a memory user id and search text.
    assert client.get("/users/pharmacy/cust-trace-77/?q=penicillin").status_code == 200
    # A database error whose text quotes the row: its content and its user id.
    from datetime import UTC, datetime

    from django.db import IntegrityError, transaction

    from records.models import MemoryRecord
    from tests.records.factories import make_records

    [record] = make_records(
        "pharmacy",
        "cust-trace-77",
        1,
        datetime(2026, 6, 1, tzinfo=UTC),
        content="I am allergic to penicillin",
    )
    try:
        with transaction.atomic():
            MemoryRecord.objects.filter(pk=record.pk).update(tokens=-1)
    except IntegrityError:
        pass
    MemoryRecord.objects.filter(pk=record.pk).delete()
    spans = [
        {
            "name": span.name,
            "trace_id": format(span.context.trace_id, "032x"),
            "span_id": format(span.context.span_id, "016x"),
            "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
            "attributes": {k: str(v) for k, v in (span.attributes or {}).items()},
            "instrumentation": span.instrumentation_scope.name,
            "events": [
                {"name": e.name, "attributes": {k: str(v) for k, v in (e.attributes or {}).items()}}
                for e in span.events
            ],
            "status": span.status.description or "",
        }
        for span in exporter.get_finished_spans()
    ]
    print(json.dumps(spans))
    return 0


if __name__ == "__main__":
    sys.exit(main())
