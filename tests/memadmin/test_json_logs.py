"""LOG_FORMAT=json: one JSON object per line, request ids carried into the tasks a request
queues (a real worker process), no content and no plain user ids."""

import io
import json
import logging

import pytest
from django.urls import reverse

from memadmin.log_format import JsonFormatter
from memadmin.pseudonyms import pseudonym
from memadmin.request_context import ContextFilter, incoming_request_id
from sweeper.models import Run

from ..conftest import wait_until
from ..sweeper.helpers import make_session

USER = "cust-k7q2xw"
SECRET_FACT = "I am allergic to penicillin"


def json_lines(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def json_log():
    """Django's request logger, also written to a buffer in the JSON format."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


@pytest.mark.django_db
def test_a_request_line_carries_its_request_id_and_no_user_id(login, json_log):
    client = login("support")
    url = reverse("records:pin", args=["pharmacy", USER, 999_999])
    response = client.post(url, HTTP_X_REQUEST_ID="req-1a2b3c")
    assert response.status_code == 404
    assert response["X-Request-ID"] == "req-1a2b3c"
    (line,) = json_lines(json_log.getvalue().splitlines())
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
    assert line["request_id"] == "req-1a2b3c" and line["task_id"] is None
    assert line["status_code"] == 404 and "timestamp" in line
    assert set(line) <= {"timestamp", "level", "logger", "message", "request_id", "task_id"} | {
        "status_code"
    }
    assert USER not in json_log.getvalue()
    assert pseudonym(USER) in line["message"]


def test_a_request_id_is_kept_only_as_a_plain_token_of_up_to_64_characters():
    for kept in ("x" * 64, "req-1.a_B9"):
        assert incoming_request_id(kept) == kept
    for refused in (None, "", "x" * 65, "é", "a/b", "a\nb", "a b"):
        assert incoming_request_id(refused) != refused


@pytest.mark.django_db
def test_an_unusable_request_id_is_replaced(client):
    for sent in ("", "x" * 65, "has space", "new\nline"):
        got = client.get("/healthz", HTTP_X_REQUEST_ID=sent)["X-Request-ID"]
        assert got != sent and len(got) == 32


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_worker_logs_json_with_the_request_id_of_the_request_that_queued_its_task(
    login, celery_worker_factory
):
    make_session("pharmacy", USER, "s1", [SECRET_FACT, "Deliver to 4 Mill Lane"], idle_days=9)
    worker = celery_worker_factory(concurrency=1, LOG_FORMAT="json", LOG_LEVEL="DEBUG")
    client = login("ops")
    data = {"mode": "dry_run", "dry-kind": "sweep", "dry-app": "", "dry-as_of": ""}
    response = client.post(reverse("sweeper:start"), data, HTTP_X_REQUEST_ID="req-sweep-42")
    assert response.status_code == 302
    run = Run.objects.get()

    def task_lines():
        lines = [json.loads(line) for line in worker.log if line.startswith("{")]
        return [line for line in lines if line.get("request_id") == "req-sweep-42"]

    carried = wait_until(task_lines, timeout=120, message="a task line with the request id")
    assert all(line["task_id"] for line in carried)
    wait_until(lambda: Run.objects.get(pk=run.pk).finished_at, timeout=120, message="the run")
    # While it runs, every line is one JSON object (no banner either) with the fixed keys.
    # (Stopping it, Celery prints "worker: Warm shutdown" as plain text, not as a log.)
    lines = json_lines(list(worker.log))
    worker.stop()
    assert any(line["message"].endswith(" ready.") for line in lines)
    for line in lines:
        assert {"timestamp", "level", "logger", "message", "request_id", "task_id"} <= set(line)
    output = "".join(worker.log)
    assert USER not in output and "penicillin" not in output
