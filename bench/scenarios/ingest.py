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

from memadmin.stats import percentile
from records.models import MemoryRecord
from records.policies import policy_for

from .. import subproc
from ..harness import Row, median
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
                "rounds": size["repetitions"],
            },
        )
        for p in range(processes)
    ]


def _wait_ready(procs) -> None:
    for process, pipe in procs:  # the process has built its sessions and warmed up
        if not pipe.poll(600) or pipe.recv() != "ready":
            raise RuntimeError(f"ingest process {process.pid} did not start")


def _go(procs):
    """Start one round in the processes at once; (per-session ms, sessions/s over the
    common wall)."""
    for _, pipe in procs:
        pipe.send("go")
    outs = []
    for process, pipe in procs:
        if not pipe.poll(3600):
            raise RuntimeError(f"ingest process {process.pid} did not finish")
        outs.append(pipe.recv())
    times = [t for o in outs for t in o["times_ms"]]
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    return times, len(times) / wall


def _rounds(phases: dict, repetitions: int) -> dict[str, list]:
    """Every phase runs one round per repetition, the order rotating, each alone (the
    others wait idle): ours and the baseline see the same load, round by round."""
    names = list(phases)
    out: dict[str, list] = {name: [] for name in names}
    for rep in range(repetitions):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(_go(phases[name]))
    for procs in phases.values():
        for process, _ in procs:
            process.join(timeout=60)
    return out


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
        phases = {
            "ours1": _start_processes("ours", "bench-ingest-1", 1, size),
            "ours2": _start_processes("ours", "bench-ingest-2", 2, size),
            "base1": _start_processes("sqlite", "bench-ingest-1", 1, size, str(Path(tmp) / "1.db")),
            "base2": _start_processes("sqlite", "bench-ingest-2", 2, size, str(Path(tmp) / "2.db")),
        }
        for procs in phases.values():
            _wait_ready(procs)
        rounds = _rounds(phases, size["repetitions"])

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
    times = {name: [t for t, _ in rs] for name, rs in rounds.items()}
    rates = {name: [[r] for _, r in rs] for name, rs in rounds.items()}
    report.rows.append(
        Row.interleaved(
            "ingest, 1 process (per session)",
            label,
            times["ours1"],
            times["base1"],
            baseline="ADK SqliteMemoryService",
            target="≥ 0.6×",
        )
    )
    report.rows[-1].met = report.rows[-1].ratio >= 0.6
    one = Row.interleaved(
        "ingest, 1 process (throughput)",
        label,
        rates["ours1"],
        rates["base1"],
        unit="sessions/s",
        baseline="ADK SqliteMemoryService",
        higher_is_better=True,
    )
    two = Row.interleaved(
        "ingest, 2 processes (throughput)",
        f"2 × {label}",
        rates["ours2"],
        rates["base2"],
        unit="sessions/s",
        baseline="ADK SqliteMemoryService",
        higher_is_better=True,
        target="≥ 200 sessions/s",
    )
    two.met = two.ours >= 200
    for row in (one, two):  # one rate per repetition: no tail to speak of
        row.ours_p99 = row.base_p99 = None
    report.rows.append(one)
    ours2 = [t for r in times["ours2"] for t in r]
    two.note = f"per session median {median(ours2):.1f} ms, p99 {percentile(ours2, 0.99):.1f} ms"
    report.rows.append(two)
