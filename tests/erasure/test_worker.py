"""A real Celery worker killed mid-job: another worker finishes it, counts add up.

Needs PostgreSQL and Redis: the worker is a separate process that must reach the test
database, and "mid-job" is made deterministic with a row lock (the test holds the
subject's UserState row, so the job commits every earlier store and then waits there).
On the embedded default (SQLite, filesystem broker) this is skipped: SQLite has no row
locks to stop the job at a known point, and the filesystem broker has no redelivery.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.utils import timezone

from erasure import jobs
from erasure.models import ErasureRequest, ErasureStatus
from memadmin.celery import app as celery_app
from records.models import MemoryRecord, RecordEmbedding, UserState

from .conftest import populate, subject_counts
from .helpers import OTHER, USER, submit

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") or not settings.REDIS_URL,
        reason="a real worker killed mid-job needs PostgreSQL + Redis: SQLite has no row "
        "locks to stop the job at a known point, and the filesystem broker does not redeliver",
    ),
    pytest.mark.worker,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def worker_database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s["PASSWORD"]:
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{quote(s['NAME'], safe='')}"


class Worker:
    def __init__(self, env, log: Path, name: str):
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memadmin",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{name}-{uuid.uuid4().hex[:8]}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(condition, what: str, workers=(), timeout=120.0):
    """Poll the database (bounded) until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        for w in workers:
            assert w.proc.poll() is None, f"worker exited:\n{w.log.read_text()[-3000:]}"
        time.sleep(0.05)
    logs = "\n".join(w.log.read_text()[-3000:] for w in workers)
    pytest.fail(f"timed out waiting until {what}\n{logs}")


def blocked_on_a_row_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def test_a_worker_killed_mid_job_is_finished_by_another(project_env, tmp_path):
    expected = populate("pharmacy", USER, "mk1x9q")
    now = timezone.now()
    MemoryRecord.objects.bulk_create(
        MemoryRecord(
            app_name="pharmacy",
            user_id=USER,
            content=f"note {i}",
            created_at=now,
            last_accessed_at=now,
        )
        for i in range(3000)
    )
    expected["records.MemoryRecord"] += 3000
    others = populate("pharmacy", OTHER, "mk2x9q")
    # populate's back-fill embeds every record of the app: the 3,000 above got vectors too
    vectors = RecordEmbedding.objects.filter(record__app_name="pharmacy", record__user_id=USER)
    assert vectors.count() == expected["records.RecordEmbedding"] + 3000
    expected["records.RecordEmbedding"] += 3000
    celery_app.control.purge()  # messages left by earlier runs

    env = {
        **project_env,
        "DATABASE_URL": worker_database_url(),
        "MEMADMIN_ERASURE_BATCH_SIZE": "500",
        "DJANGO_SETTINGS_MODULE": "memadmin.settings",
    }
    locked, release = threading.Event(), threading.Event()

    def hold_user_state_row():
        try:
            with transaction.atomic():
                rows = UserState.objects.select_for_update().filter(user_id=USER)
                assert len(list(rows)) == 1
                locked.set()
                assert release.wait(timeout=300)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_user_state_row)
    holder.start()
    workers = []
    try:
        assert locked.wait(timeout=30)
        req = submit("pharmacy", enqueue_job=True)  # autocommit: sent at once
        first = Worker(env, tmp_path / "worker1.log", "erasure-first")
        workers.append(first)

        def mid_job():
            progress = ErasureRequest.objects.get(pk=req.pk).progress
            return progress.get("records.Artifact", {}).get("done") and blocked_on_a_row_lock()

        wait_for(mid_job, "the first worker committed batches and waits", [first])
        first.kill()
        workers.remove(first)

        req.refresh_from_db()
        assert req.status == ErasureStatus.RUNNING and req.claim_token is not None
        assert req.progress["records.MemoryRecord"] == {
            "deleted": expected["records.MemoryRecord"],
            "batches": 7,
            "done": True,
        }
        assert not req.progress.get("records.UserState", {}).get("done")
        release.set()
        holder.join(timeout=30)

        # The dead worker's message stays unacked (visibility timeout: an hour); the
        # reconciler hands the request on once its lease is over.
        later = timezone.now() + jobs.lease() + timedelta(seconds=1)
        assert jobs.reconcile(later) == [req.pk]
        second = Worker(env, tmp_path / "worker2.log", "erasure-second")
        workers.append(second)
        wait_for(
            lambda: (
                ErasureRequest.objects.get(pk=req.pk).status
                not in (ErasureStatus.RUNNING, ErasureStatus.COMPLETED, ErasureStatus.SUBMITTED)
            ),
            "the second worker finished",
            [second],
        )
    finally:
        release.set()
        for w in workers:
            w.stop()
        holder.join(timeout=30)

    req.refresh_from_db()
    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    assert req.attempts == 2
    assert {k: req.progress[k]["deleted"] for k in expected} == expected
    assert subject_counts(jobs.Subject("pharmacy", USER)) == dict.fromkeys(expected, 0)
    assert subject_counts(jobs.Subject("pharmacy", OTHER)) == others
    actions = list(req.audit.values_list("action", flat=True))
    assert actions.count("completed") == 1 and actions.count("verified") == 1
    assert "requeued" in actions and "resumed" in actions
    assert os.path.getsize(tmp_path / "worker2.log") > 0
