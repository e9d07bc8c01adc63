"""OpenTelemetry: one trace from a dashboard request through the task it queues; and
nothing of it loaded when OTEL_EXPORTER_OTLP_ENDPOINT is unset."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memadmin.celery import app
from memadmin.pseudonyms import pseudonym

from ..conftest import subprocess_database_url

ROOT = Path(__file__).resolve().parents[2]


def environment(settings, **extra) -> dict:
    env = dict(os.environ)
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    env.update(
        DATABASE_URL=subprocess_database_url(),
        SECRET_KEY=settings.SECRET_KEY,
        SECURE_SSL_REDIRECT="0",
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return env


@pytest.fixture(scope="module")
def traced_spans(django_db_setup, django_db_blocker):
    """The probe's spans (it writes to the test database; the module's tests read them)."""
    from django.conf import settings

    app.control.purge()
    with django_db_blocker.unblock():
        env = environment(settings)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "tests.memadmin.trace_probe"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            from django.core.management import call_command

            call_command("flush", interactive=False, verbosity=0)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.worker
def test_one_trace_runs_from_the_dashboard_request_through_its_task(traced_spans):
    spans = traced_spans
    by_id = {span["span_id"]: span for span in spans}
    (request,) = [s for s in spans if s["name"] == "POST sweeps/start/"]
    assert request["instrumentation"].endswith(".django")
    (task,) = [s for s in spans if s["name"] == "run/sweeper.tasks.execute_run"]
    assert task["trace_id"] == request["trace_id"]
    # The task's ancestors lead back to the request: publish, then run.
    chain, span = [], task
    while span["parent_id"] in by_id:
        span = by_id[span["parent_id"]]
        chain.append(span["name"])
    assert chain[-1] == request["name"]
    assert "apply_async/sweeper.tasks.execute_run" in chain
    traced = {
        s["instrumentation"].rsplit(".", 1)[-1] for s in spans if s["trace_id"] == task["trace_id"]
    }
    assert {"django", "celery"} <= traced
    assert ("psycopg" in traced) == (connection.vendor == "postgresql")


@pytest.mark.worker
def test_spans_name_memory_users_by_pseudonym_and_keep_no_search_text(traced_spans):
    (page,) = [s for s in traced_spans if s["name"].startswith("GET users/")]
    assert page["name"] == "GET users/<id:app>/<id:user>/"
    text = json.dumps(traced_spans)
    assert "cust-trace-77" not in text and "penicillin" not in text
    assert pseudonym("cust-trace-77") in text


@pytest.mark.worker
def test_a_database_errors_text_is_withheld_from_spans_as_from_logs(traced_spans):
    """PostgreSQL's error quotes the failing row (content, user id): the psycopg span
    records the exception; its message, stack trace and status keep the class only."""
    from memadmin.log_filters import WITHHELD

    if connection.vendor != "postgresql":
        pytest.skip("psycopg is traced on PostgreSQL only")
    failed = [
        (s, e)
        for s in traced_spans
        for e in s["events"]
        if e["name"] == "exception" and "CheckViolation" in e["attributes"]["exception.type"]
    ]
    assert failed, "the probe's failing UPDATE recorded no exception"
    for span, event in failed:
        assert event["attributes"]["exception.message"] == WITHHELD
        assert f"CheckViolation: {WITHHELD}" in event["attributes"]["exception.stacktrace"]
        assert "File " in event["attributes"]["exception.stacktrace"]  # the frames stay
        assert span["status"] in ("", f"CheckViolation: {WITHHELD}")
    text = json.dumps(traced_spans)
    assert "penicillin" not in text and "cust-trace-77" not in text


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ["", "http://127.0.0.1:4318"])
def test_tracing_loads_only_when_an_endpoint_is_set(settings, endpoint):
    probe = (
        "import sys, memadmin.wsgi; "
        "print(any(m.startswith('opentelemetry.instrumentation') for m in sys.modules))"
    )
    env = environment(settings)
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == str(bool(endpoint))
