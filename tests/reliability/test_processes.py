"""Faults with real processes: a Celery worker killed with SIGKILL mid-sweep, again and
again; two beat processes firing the same schedule.

MEMADMIN_KILL_LOOPS sets the number of kills (3 in CI, where the suite runs twice;
`make reliability` runs 20).
"""

import os
import random
import subprocess
import sys
import time

import pytest
from django.db.models import Count

from records.models import AgentSession, MemoryRecord, RetiredSession
from sweeper import runs, tasks
from sweeper.models import Run, RunKind, RunStatus

from ..conftest import wait_until
from ..sweeper.helpers import make_session

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

KILLS = int(os.environ.get("MEMADMIN_KILL_LOOPS", "3"))
# Enough work that the sweep outlasts every kill (each round lets it make some progress).
USERS, SESSIONS_PER_USER, EVENTS = max(24, KILLS * 8), 2, 6


def test_a_sweep_survives_its_worker_being_killed_again_and_again(celery_worker_factory, settings):
    settings.MEMADMIN = {**settings.MEMADMIN, "STALE_CLAIM_SECONDS": 1}
    rng = random.Random(int(os.environ.get("MEMADMIN_KILL_SEED", "7")))
    idle = set()
    for u in range(USERS):
        for s in range(SESSIONS_PER_USER):
            sid = f"u{u}-s{s}"
            make_session(
                "app",
                f"u{u}",
                sid,
                [f"My name is Ana {sid} fact {k}" for k in range(EVENTS)],
                idle_days=9,
            )
            idle.add(sid)
    run = runs.create_run(RunKind.SWEEP, enqueue=tasks.execute_run.delay)
    kills = 0
    for _ in range(KILLS):
        before = Run.objects.get(id=run.id).done
        worker = celery_worker_factory(concurrency=2, MEMADMIN_STALE_CLAIM_SECONDS=1)
        progressed = wait_until(
            lambda before=before: (
                Run.objects.get(id=run.id).done > before
                or Run.objects.get(id=run.id).status == RunStatus.DONE
            ),
            timeout=120,
            message="progress",
        )
        assert progressed
        time.sleep(rng.random() * 0.3)  # a random kill point, not a synchronisation
        worker.kill()
        kills += 1
        if Run.objects.get(id=run.id).status == RunStatus.DONE:
            break
        # The dead worker's claims go stale after a second; then re-queue its work.
        wait_until(
            lambda: (
                tasks.reconcile()["items"] or Run.objects.get(id=run.id).status == RunStatus.DONE
            ),
            timeout=60,
            message="stale claims to be re-queued",
        )
    celery_worker_factory(concurrency=2, MEMADMIN_STALE_CLAIM_SECONDS=1)
    done = wait_until(
        lambda: (tasks.reconcile(), finished(run.id))[1], timeout=300, message="the sweep to finish"
    )

    present = set(AgentSession.objects.values_list("session_id", flat=True))
    retired = list(RetiredSession.objects.values_list("session_id", flat=True))
    lost = idle - present - set(retired)
    duplicates = (
        MemoryRecord.objects.values("dedupe_key").annotate(n=Count("id")).filter(n__gt=1).count()
    )
    report = (
        f"kill loop: runs=1 kills={kills} sessions={len(idle)} retired={len(retired)} "
        f"present={len(present)} lost={len(lost)} duplicate_records={duplicates} "
        f"attempts={done.attempts}"
    )
    print(report)
    assert done.status == RunStatus.DONE, done.error
    assert len(retired) == len(set(retired))  # each retired exactly once
    assert not lost and not (present & set(retired))
    assert present == set()  # all were idle: the finished sweep retired every one
    # the run's totals count the sessions killed attempts retired too
    assert done.stats["sessions_retired"] == len(retired)
    assert duplicates == 0
    # each retired session was ingested exactly once: EVENTS records apiece
    per_session = MemoryRecord.objects.values("source_session_id").annotate(n=Count("id"))
    assert {row["n"] for row in per_session} == {EVENTS}
    assert per_session.count() == len(idle)


def finished(run_id):
    run = Run.objects.get(id=run_id)
    return run if run.status in (RunStatus.DONE, RunStatus.FAILED) else None


def start_beat(env, schedule_dir):
    schedule_dir.mkdir()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memadmin",
            "beat",
            "-l",
            "info",
            "-s",
            str(schedule_dir / "beat"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_two_beats_running_at_once_fire_each_scheduled_run_once(celery_worker_factory, tmp_path):
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    every, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="test: enforce every second",
        interval=every,
        task="sweeper.tasks.scheduled_enforce",
        kwargs='{"slot_seconds": 1}',
    )
    worker = celery_worker_factory(concurrency=2)
    beats = [start_beat(celery_worker_factory.env, tmp_path / f"b{i}") for i in range(2)]
    try:
        wait_until(
            lambda: Run.objects.filter(kind=RunKind.ENFORCE).count() >= 6,
            timeout=120,
            message="six scheduled runs",
        )
    finally:
        for beat in beats:
            os.killpg(beat.pid, 9)
            beat.wait(timeout=30)
    scheduled = Run.objects.filter(kind=RunKind.ENFORCE)
    keys = list(scheduled.values_list("schedule_key", flat=True))
    # Two beats each firing every second would make two runs a slot; one run per slot.
    # (Judged by the slots themselves: the runs' creation times lag their slots when the
    # worker is busy, so a bound on the creation times' span failed on a loaded machine
    # with six distinct, consecutive slots.)
    assert len(keys) == len(set(keys)), keys
    assert worker.proc.poll() is None
