"""/healthz and /readyz with real services: a real worker process, the test database."""

import json
from datetime import timedelta

import pytest
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from memadmin import schedules

pytestmark = pytest.mark.django_db(transaction=True)


def readiness(client) -> tuple[int, dict]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    body = json.loads(response.content)
    return response.status_code, body


def beat_fired(seconds_ago: float) -> None:
    if not PeriodicTask.objects.exists():
        schedules.install()
    PeriodicTask.objects.update(last_run_at=timezone.now() - timedelta(seconds=seconds_ago))


def test_liveness_is_cheap_and_needs_no_login(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}


def test_readiness_fails_when_the_worker_stops(client, celery_worker_factory, settings):
    beat_fired(30)
    worker = celery_worker_factory(concurrency=1)
    status, body = readiness(client)
    assert (status, body["status"]) == (200, "ready"), body
    expected = {"database", "migrations", "broker", "worker", "beat"}
    if settings.REDIS_URL:
        expected.add("redis")
    assert body["checks"] == dict.fromkeys(expected, "ok")

    worker.stop()
    assert worker.proc.poll() is not None
    status, body = readiness(client)
    assert (status, body["status"]) == (503, "unavailable")
    assert body["checks"]["worker"].startswith("Unavailable")
    assert {name for name, state in body["checks"].items() if state != "ok"} == {"worker"}


def test_readiness_names_a_silent_beat_and_a_worker_missing_for_a_queue(
    client, celery_worker_factory, settings
):
    beat_fired(settings.READYZ_BEAT_MAX_SILENCE + 60)
    celery_worker_factory(concurrency=1, queues=("celery",))  # nobody consumes erasure's
    status, body = readiness(client)
    assert status == 503
    assert "beat last fired" in body["checks"]["beat"]
    assert "erasure" in body["checks"]["worker"]
    assert body["checks"]["database"] == body["checks"]["broker"] == "ok"


def test_readiness_fails_while_a_migration_is_not_applied(client):
    recorder = MigrationRecorder.Migration.objects
    last = recorder.filter(app="sweeper").order_by("-id").first()
    recorder.filter(pk=last.pk).delete()
    try:
        status, body = readiness(client)
        assert status == 503
        assert body["checks"]["migrations"] == (
            "Unavailable: 1 migration(s) not applied; run migrate"
        )
    finally:
        recorder.create(app=last.app, name=last.name, applied=last.applied)
    assert readiness(client)[1]["checks"]["migrations"] == "ok"


def test_an_unreachable_database_is_reported_without_its_address():
    """/readyz needs no login: its database check says that the database is unreachable,
    not where the server is (the library's own message can name its host)."""
    from django.db import connections
    from django.db.backends.postgresql.base import DatabaseWrapper
    from health_check.checks import Database
    from health_check.exceptions import ServiceUnavailable

    from memadmin.readiness import DatabaseAnswers

    unknown = dict(connections["default"].settings_dict)  # .invalid never resolves
    unknown.update(ENGINE="django.db.backends.postgresql", HOST="db.memadmin.invalid", PORT="5432",
                  NAME="memadmin", USER="postgres", PASSWORD="", OPTIONS={})  # fmt: skip
    # Set on this thread only, not in the settings: the test database stays the only one.
    connections["closed"] = DatabaseWrapper(unknown, alias="closed")
    try:
        with pytest.raises(ServiceUnavailable) as library:
            Database(alias="closed").run()
        with pytest.raises(ServiceUnavailable) as ours:
            DatabaseAnswers(alias="closed").run()
    finally:
        del connections["closed"]
    assert "db.memadmin.invalid" in str(library.value)
    assert str(ours.value) == "Unavailable: database unreachable (OperationalError)"
    # the cause is kept on the exception (the library logs its traceback, with the
    # database error's text withheld as in every log line)
    assert "db.memadmin.invalid" in str(ours.value.__cause__)
