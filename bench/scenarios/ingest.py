"""Scenario 4, ingest: ``add_session_to_memory`` of 20-event sessions, enforcement included.

Each process ingests its own users' sessions (a realistic support conversation: user
and agent turns, some small talk that the rules drop) through
``records.memory_service.add_session``, what ``EvictingMemoryService
.add_session_to_memory`` runs: extraction, dedupe, insert, the policy enforced under
the user's lock, the daily counters. Every user starts at 480 of the 500-record cap,
so from the first session on, ingest evicts (the steady state of a busy store).
Sessions go round-robin over the users. One process, then two OS processes at once
on distinct users. The baseline is ADK's ``SqliteMemoryService.add_session_to_memory``
(a file database) with the same sessions, one and two processes. Throughput is
sessions / wall time from the common start to the last process's end.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.db.models import Count
from django.utils import timezone

from records.models import MemoryRecord
from records.policies import policy_for

from .. import subproc
from ..harness import Row, median, percentile
from ..load import UserSpec, load_records, reset_data, vacuum_analyze

NAME = "ingest"


def _start_processes(service, app, processes, size, sqlite_path=""):
    return [
        subproc.fork(
            "ingest",
            {
                "service": service,
                "app": app,
                "process": p,
                "users": [f"ingest-p{p}-u{i:04d}" for i in range(size["users_per_process"])],
                "sessions": size["sessions_per_process"],
                "seed": 1000 + p,
                "sqlite_path": sqlite_path,
            },
        )
        for p in range(processes)
    ]


def _wait_ready(procs) -> None:
    for process, pipe in procs:  # the process has built its sessions and warmed up
        if not pipe.poll(600) or pipe.recv() != "ready":
            raise RuntimeError(f"ingest process {process.pid} did not start")


def _go(procs):
    """Start the processes at once; (per-session ms, sessions/s over the common wall)."""
    for _, pipe in procs:
        pipe.send("go")
    outs = []
    for process, pipe in procs:
        if not pipe.poll(3600):
            raise RuntimeError(f"ingest process {process.pid} did not finish")
        outs.append(pipe.recv())
        process.join(timeout=60)
    times = [t for o in outs for t in o["times_ms"]]
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    return times, len(times) / wall


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    cap = policy_for("bench-ingest-1").max_records
    policy_for("bench-ingest-2")
    for app, processes in (("bench-ingest-1", 1), ("bench-ingest-2", 2)):
        specs = [
            UserSpec(f"ingest-p{p}-u{i:04d}", size["prefill"])
            for p in range(processes)
            for i in range(size["users_per_process"])
        ]
        load_records(app, specs, now, seed=41)
    vacuum_analyze()

    with tempfile.TemporaryDirectory(prefix="bench-adk-sqlite-") as tmp:
        # Every process (forked: Django is loaded) builds its sessions and warms up
        # before any is timed; then each phase runs alone, the others waiting idle.
        phases = [
            _start_processes("ours", "bench-ingest-1", 1, size),
            _start_processes("ours", "bench-ingest-2", 2, size),
            _start_processes("sqlite", "bench-ingest-1", 1, size, str(Path(tmp) / "one.db")),
            _start_processes("sqlite", "bench-ingest-2", 2, size, str(Path(tmp) / "two.db")),
        ]
        for procs in phases:
            _wait_ready(procs)
        (ours1, rate1), (ours2, rate2), (base1, base_rate1), (base2, base_rate2) = [
            _go(procs) for procs in phases
        ]

    n = size["sessions_per_process"]
    for app, processes in (("bench-ingest-1", 1), ("bench-ingest-2", 2)):
        per_user = (
            MemoryRecord.objects.filter(app_name=app).values("user_id").annotate(n=Count("id"))
        )
        biggest = max((row["n"] for row in per_user), default=0)
        dupes = (
            MemoryRecord.objects.filter(app_name=app, dedupe_key__isnull=False)
            .values("user_id", "dedupe_key")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
        report.check(
            NAME,
            f"{processes} process(es): {processes * n} sessions ingested, every user within "
            f"the cap ({biggest} ≤ {cap}), no duplicate record",
            biggest <= cap and dupes == 0,
        )
    label = f"{n} sessions × 20 events"
    report.rows.append(
        Row(
            "ingest, 1 process (per session)",
            label,
            median(ours1),
            percentile(ours1, 99),
            median(base1),
            percentile(base1, 99),
            baseline="ADK SqliteMemoryService",
        )
    )
    report.rows.append(
        Row(
            "ingest, 1 process (throughput)",
            label,
            rate1,
            base=base_rate1,
            unit="sessions/s",
            baseline="ADK SqliteMemoryService",
            higher_is_better=True,
        )
    )
    report.rows.append(
        Row(
            "ingest, 2 processes (throughput)",
            f"2 × {label}",
            rate2,
            base=base_rate2,
            unit="sessions/s",
            baseline="ADK SqliteMemoryService",
            higher_is_better=True,
            target="≥ 200 sessions/s",
            met=rate2 >= 200,
            note=f"per session median {median(ours2):.1f} ms, p99 {percentile(ours2, 99):.1f} ms",
        )
    )
