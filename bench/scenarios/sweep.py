"""Scenario 5, the sweep: retire idle sessions with a real Celery worker on Redis.

Two apps hold the same shape of data: ``users`` users with ``sessions_per_user`` idle
sessions of 20 events each (a realistic conversation, stored as the session service
stores events), one session artifact each, and 200 memory records per user under a
cap of 250, so the ingest that retirement does evicts. The sweep of the first app runs
on a ``celery worker --concurrency 1``, the second on ``--concurrency 2`` (one and two
worker processes). Time is from creating the Run (which nudges the worker through the
broker) to the Run being done, polled every 50 ms.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import zlib
from datetime import UTC, datetime

from django.db.models import Count
from django.utils import timezone
from google.genai import types

from records.artifacts import _split_part
from records.models import AgentSession, Artifact, MemoryRecord, RetiredSession, SessionEvent
from records.policies import update_policy
from sweeper import runs, tasks
from sweeper.models import Run, RunKind, RunStatus

from ..corpus import events_for
from ..harness import Row
from ..load import UserSpec, load_records, reset_data, vacuum_analyze
from ..subproc import ROOT

NAME = "sweep"
PREFILL, CAP = 200, 250


def make_sessions(app: str, users: int, per_user: int, idle_days: float = 10) -> int:
    start = time.time() - idle_days * 86400
    part_json, data = _split_part(types.Part.from_bytes(data=b"receipt", mime_type="text/plain"))
    made = 0
    for first in range(0, users, 100):
        rows, events, artifacts = [], [], []
        for u in range(first, min(users, first + 100)):
            user = f"sweep-{u:05d}"
            for s in range(per_user):
                sid = f"{user}-s{s}"
                t0 = start + s * 3600
                evs = events_for(sid, zlib.crc32(f"{app}:{sid}".encode()), t0)
                row = AgentSession(
                    app_name=app,
                    user_id=user,
                    session_id=sid,
                    state={},
                    created_at=datetime.fromtimestamp(t0, UTC),
                    last_update_time=evs[-1].timestamp,
                    revision=len(evs),
                    event_count=len(evs),
                )
                rows.append((row, evs))
                artifacts.append(
                    Artifact(
                        app_name=app,
                        user_id=user,
                        session_id=sid,
                        filename="receipt.txt",
                        version=0,
                        part=part_json,
                        data=data,
                        mime_type="text/plain",
                        custom_metadata={},
                        created_at=datetime.fromtimestamp(t0, UTC),
                    )
                )
        AgentSession.objects.bulk_create([r for r, _ in rows], batch_size=1000)
        for row, evs in rows:
            for i, e in enumerate(evs):
                events.append(
                    SessionEvent(
                        session=row,
                        position=i,
                        event_id=e.id,
                        invocation_id=e.invocation_id,
                        author=e.author,
                        timestamp=e.timestamp,
                        is_compaction=False,
                        data=e.model_dump(mode="json", exclude_none=True),
                    )
                )
        SessionEvent.objects.bulk_create(events, batch_size=2000)
        Artifact.objects.bulk_create(artifacts, batch_size=1000)
        made += len(rows)
    return made


class Worker:
    """A ``celery worker`` subprocess on the bench database and broker."""

    def __init__(self, concurrency: int):
        self._ready = threading.Event()
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memadmin",
                "worker",
                "-l",
                "info",
                "--concurrency",
                str(concurrency),
                "-P",
                "prefork",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"bench-{os.getpid()}-{concurrency}@%h",
            ],
            cwd=ROOT,
            env={**os.environ, "LOG_LEVEL": "INFO"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout=120):
            self.stop()
            raise RuntimeError("celery worker did not start:\n" + "".join(self.log[-40:]))

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)
            if " ready." in line:
                self._ready.set()

    def stop(self):
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)


def sweep_with_worker(app: str, concurrency: int, timeout: float = 7200) -> tuple[float, Run]:
    from memadmin.celery import app as celery_app

    celery_app.control.purge()  # nothing left over from an earlier run
    worker = Worker(concurrency)
    try:
        start = time.perf_counter()
        run = runs.create_run(RunKind.SWEEP, app_name=app, enqueue=tasks.execute_run.delay)
        while time.perf_counter() - start < timeout:
            run = Run.objects.get(id=run.id)
            if run.status in (RunStatus.DONE, RunStatus.FAILED):
                break
            time.sleep(0.05)
        return time.perf_counter() - start, run
    finally:
        worker.stop()


def run(report, size: dict, env: dict) -> None:
    reset_data()
    users, per_user = size["users"], size["sessions_per_user"]
    total = users * per_user
    apps = {1: "bench-sweep-1", 2: "bench-sweep-2"}
    now = timezone.now()
    for app in apps.values():
        update_policy(app, {"max_records": CAP})
        load_records(app, [UserSpec(f"sweep-{u:05d}", PREFILL) for u in range(users)], now, seed=53)
        make_sessions(app, users, per_user)
    vacuum_analyze()

    rates = {}
    for concurrency, app in apps.items():
        seconds, run_row = sweep_with_worker(app, concurrency)
        rates[concurrency] = total / seconds
        left = AgentSession.objects.filter(app_name=app).count()
        retired = RetiredSession.objects.filter(app_name=app).count()
        biggest = (
            MemoryRecord.objects.filter(app_name=app)
            .values("user_id")
            .annotate(n=Count("id"))
            .order_by("-n")
            .values_list("n", flat=True)
            .first()
        )
        report.check(
            NAME,
            f"{concurrency} worker process(es): run done, {total:,} sessions retired, "
            f"none left, every user within the cap ({biggest} ≤ {CAP})",
            run_row.status == RunStatus.DONE
            and run_row.stats.get("sessions_retired") == total
            and left == 0
            and retired == total
            and biggest <= CAP,
            f"status {run_row.status}, stats {run_row.stats}, left {left}",
        )
    label = f"{total:,} sessions × 20 events"
    report.rows.append(
        Row(
            "sweep, 1 worker process",
            label,
            rates[1],
            unit="sessions/s",
            baseline="",
            higher_is_better=True,
        )
    )
    report.rows.append(
        Row(
            "sweep, 2 worker processes",
            label,
            rates[2],
            base=rates[1],
            unit="sessions/s",
            baseline="the same sweep on 1 process",
            higher_is_better=True,
            target="scales (ratio > 1)",
            met=rates[2] > rates[1],
        )
    )
