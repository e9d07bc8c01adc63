"""/metrics: who may scrape it, and what the figures say about stored state."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from erasure.models import ErasureRequest
from memadmin.celery import app as celery_app
from records.memory_service import add_session, search_entries
from records.models import EvictionEvent
from sweeper import runs, tasks
from sweeper.models import Run, RunKind, RunStatus

from ..conftest import wait_until
from ..erasure.helpers import submit
from ..records.factories import session
from ..sweeper.helpers import make_session
from .metrics_helpers import scrape, value

pytestmark = pytest.mark.django_db

USERS = ("cust-a81kq2", "cust-b93zx7")


def test_metrics_answer_the_local_network_by_default(client):
    samples, _ = scrape(client)  # the test client comes from 127.0.0.1
    assert ("memadmin_scrape_source_failed", (("source", "held"),)) in samples


def test_metrics_refuse_other_networks_without_the_token(client, settings):
    settings.METRICS_TOKEN = "scrape-secret-7f3a"
    far = {"REMOTE_ADDR": "203.0.113.9"}
    refused = client.get("/metrics", **far)
    assert refused.status_code == 403
    assert b"METRICS_TOKEN" in refused.content
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope", **far)
    assert wrong.status_code == 403
    scrape(client, HTTP_AUTHORIZATION="Bearer scrape-secret-7f3a", **far)


def test_metrics_answer_an_allowed_network_and_no_token_is_no_way_in(client, settings):
    import ipaddress

    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    scrape(client, REMOTE_ADDR="10.20.30.40")
    assert client.get("/metrics").status_code == 403  # 127.0.0.1 is no longer allowed
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_the_figures_follow_what_is_stored_and_name_no_user(client):
    now = timezone.now()
    before, _ = scrape(client)
    for n, user in enumerate(USERS):
        texts = ["I am allergic to penicillin", "Deliver to 4 Mill Lane"]
        add_session(session(texts, user=user, id=f"s{n}"), now)
    found = search_entries("pharmacy", USERS[0], "penicillin allergy", now)
    assert found
    EvictionEvent.objects.create(
        record_id=1,
        app_name="pharmacy",
        user_id=USERS[1],
        reason="cap",
        evicted_at=now,
    )
    Run.objects.create(kind=RunKind.SWEEP, status=RunStatus.QUEUED, as_of=now)
    Run.objects.create(
        kind=RunKind.ENFORCE,
        status=RunStatus.DONE,
        as_of=now,
        started_at=now - timedelta(seconds=42),
        finished_at=now,
    )
    submit("pharmacy", USERS[1])
    ErasureRequest.objects.update(submitted_at=now - timedelta(hours=1))
    every_minute, _ = IntervalSchedule.objects.get_or_create(
        every=60, period=IntervalSchedule.SECONDS
    )
    PeriodicTask.objects.create(
        name="memadmin: flush touch buffer",
        task="sweeper.tasks.flush_touches",
        interval=every_minute,
        last_run_at=now - timedelta(seconds=120),
    )

    samples, text = scrape(client)

    assert value(samples, "memadmin_records", app="pharmacy") == 4
    assert value(samples, "memadmin_tokens", app="pharmacy") > 0
    assert value(samples, "memadmin_evictions_total", app="pharmacy", reason="cap") == 1
    for name, delta in (
        ("memadmin_ingests_total", 2),
        ("memadmin_records_added_total", 4),
        ("memadmin_searches_total", 1),
        ("memadmin_touches_total", len(found)),
    ):
        grown = value(samples, name, app="pharmacy") - value(before, name, app="pharmacy")
        assert grown == delta, name
    assert value(samples, "memadmin_runs", kind="sweep", status="queued") == 1
    assert value(samples, "memadmin_runs", kind="enforce", status="done") == 1
    assert value(samples, "memadmin_run_last_duration_seconds", kind="enforce") == 42
    assert value(samples, "memadmin_erasure_open_requests", status="submitted") == 1
    assert 3600 <= value(samples, "memadmin_erasure_oldest_open_age_seconds") < 3600 + 300
    age = value(
        samples, "memadmin_beat_last_fired_age_seconds", schedule="memadmin: flush touch buffer"
    )
    assert 120 <= age < 120 + 300
    for source in ("held", "evictions", "queues", "runs", "erasure", "beat"):
        assert value(samples, "memadmin_scrape_source_failed", source=source) == 0, source
    # HTTP and database figures (django-prometheus), counted in this process
    assert value(samples, "django_http_requests_before_middlewares_total") >= 1
    assert sum(v for (n, _), v in samples.items() if n == "django_db_execute_total") > 0
    for user in USERS:
        assert user not in text
    assert "penicillin" not in text


@pytest.mark.redis
def test_the_touch_buffer_backlog_counts_users_waiting_for_a_flush(client):
    from records import touches

    touches.redis_client().delete(touches.PENDING)
    now = timezone.now()
    for n, user in enumerate(USERS):
        add_session(session(["I am allergic to penicillin"], user=user, id=f"s{n}"), now)
        assert search_entries("pharmacy", user, "penicillin", now)
    try:
        samples, _ = scrape(client)
        assert value(samples, "memadmin_touch_buffer_backlog") == 2
    finally:
        touches.flush_touches()


def test_queue_depth_counts_the_messages_waiting_in_each_queue(client):
    celery_app.control.purge()
    try:
        for _ in range(3):
            celery_app.send_task("memadmin.tests.nothing", queue="erasure")
        samples, _ = scrape(client)
        assert value(samples, "memadmin_celery_queue_depth", queue="erasure") == 3
        assert value(samples, "memadmin_celery_queue_depth", queue="celery") == 0
    finally:
        celery_app.control.purge()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_counters_of_every_worker_process_add_up(
    client, celery_worker_factory, tmp_path, monkeypatch
):
    users = [f"cust-mp{n}" for n in range(4)]
    for n, user in enumerate(users):
        make_session("pharmacy", user, f"s{n}", ["I am allergic to penicillin"], idle_days=9)
    celery_worker_factory(concurrency=2, PROMETHEUS_MULTIPROC_DIR=tmp_path)
    run = runs.create_run(RunKind.SWEEP, enqueue=tasks.execute_run.delay)
    wait_until(
        lambda: Run.objects.get(pk=run.pk).status == RunStatus.DONE, timeout=180, message="sweep"
    )
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    samples, text = scrape(client)
    # Ingests ran in the worker's pool processes, each writing its own file; this process
    # wrote none, so every count below is theirs, added up by the scrape.
    assert list(tmp_path.glob("counter_*.db"))
    assert value(samples, "memadmin_ingests_total", app="pharmacy") == len(users)
    assert value(samples, "memadmin_records_added_total", app="pharmacy") == len(users)
    assert sum(v for (n, _), v in samples.items() if n == "django_db_execute_total") > 0
    assert value(samples, "memadmin_records", app="pharmacy") == len(users)  # read at scrape
    assert not any(user in text for user in users)
