"""Work the bench runs in separate OS processes: ``python -m bench.subproc KIND JSON``.

Each prints one JSON line with its measurements on stdout. The environment (database,
Redis, secret key) comes from the parent, ``bench.cli.configure_environment``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(kind: str, args: dict, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.subproc", kind, json.dumps(args)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def result(proc: subprocess.Popen, timeout: float = 3600) -> dict:
    out, _ = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"bench subprocess failed with exit code {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def _peak_rss_mb() -> float:
    """Peak RSS of this process: VmHWM (ru_maxrss would include the parent's peak,
    which Linux folds in at exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def enforcement_pass(args: dict, pipe=None) -> dict:
    """The real hourly pass, in this process: plan (sweeper.enforce) + enforce_many per batch."""
    from records.models import MemoryRecord
    from sweeper import runs, tasks
    from sweeper.models import Run, RunKind

    MemoryRecord.objects.exists()  # connect before measuring
    before = _peak_rss_mb()
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    start = time.perf_counter()
    tasks.run_inline(run)
    seconds = time.perf_counter() - start
    run = Run.objects.get(id=run.id)
    return {
        "seconds": seconds,
        "rss_before_mb": before,
        "peak_rss_mb": _peak_rss_mb(),
        "status": run.status,
        "items": run.total,
        "stats": run.stats,
    }


def fork(kind: str, args: dict):
    """Run ``kind`` in a forked child (Django already loaded: no start-up cost).

    Returns (process, pipe): the child sends "ready", waits for any message, and sends
    its result. Database connections are closed first so the child opens its own.
    """
    import multiprocessing

    from django.db import connections

    connections.close_all()
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_forked, args=(kind, args, child), daemon=True
    )
    process.start()
    return process, parent


def _forked(kind: str, args: dict, pipe) -> None:
    pipe.send(KINDS[kind](args, pipe))


def ingest(args: dict, pipe) -> dict:
    """Ingest sessions (ours or ADK's SQLite service) once the parent says go.

    Ours runs ``records.memory_service.add_session``, the function that
    ``EvictingMemoryService.add_session_to_memory`` awaits through ``sync_to_async``
    (a forked child cannot use the thread that asgiref's executor had in the parent).
    ADK's service is async and runs in an event loop of its own.
    """
    import asyncio

    sessions = _build_sessions(args)

    rounds = args.get("rounds", 1)

    def timed(add) -> dict:
        """Per round (the parent says go for each): that round's share of the sessions,
        timed, sent back; the parent interleaves the rounds of ours and the baseline."""
        add(_warmup_session(args))  # imports, connection, the app's policy row
        pipe.send("ready")
        for r in range(rounds):
            pipe.recv()
            times = []
            begin = time.time()
            for session in sessions[r::rounds]:
                t = time.perf_counter()
                add(session)
                times.append((time.perf_counter() - t) * 1000)
            out = {"times_ms": times, "start": begin, "end": time.time()}
            if r < rounds - 1:
                pipe.send(out)
        return {**out, "peak_rss_mb": _peak_rss_mb()}

    if args["service"] == "ours":
        from django.utils import timezone

        from records.memory_service import add_session

        return timed(lambda s: add_session(s, timezone.now()))
    from google.adk.memory._sqlite_memory_service import SqliteMemoryService

    service = SqliteMemoryService(args["sqlite_path"])
    loop = asyncio.new_event_loop()
    try:
        return timed(lambda s: loop.run_until_complete(service.add_session_to_memory(s)))
    finally:
        loop.close()


def _warmup_session(args: dict):
    from google.adk.sessions.session import Session

    from .corpus import events_for

    return Session(
        id=f"warmup-{args['process']}",
        app_name=args["app"],
        user_id=f"warmup-{args['process']}",
        events=events_for(f"warmup-{args['process']}", args["seed"] + 999, time.time()),
    )


def _build_sessions(args: dict) -> list:
    from google.adk.sessions.session import Session

    from .corpus import events_for

    out = []
    users = args["users"]
    for j in range(args["sessions"]):
        user = users[j % len(users)]
        sid = f"{user}-s{j}"
        events = events_for(sid, args["seed"] * 100_003 + j, 1_767_000_000.0 + j * 100)
        out.append(Session(id=sid, app_name=args["app"], user_id=user, events=events))
    return out


def quality(args: dict, pipe=None) -> dict:
    """Quality replays (``bench.quality.replay.worker``)."""
    from .quality.replay import worker

    return worker(args)


def quality_store(args: dict, pipe=None) -> dict:
    """Sessions of the quality datasets into the session service (one share of users)."""
    from .quality.replay import store_worker

    return store_worker(args)


def backtest(args: dict, pipe=None) -> dict:
    """``backtest.service.run`` (the article preset as the candidate) or
    ``backtest.tune.tune``, in this process, timed from the call."""
    from django.utils import timezone

    from backtest import history, service, tune
    from records.models import MemoryRecord

    MemoryRecord.objects.exists()  # connect before measuring
    now = timezone.now()
    start = time.perf_counter()
    if args["kind"] == "tune":
        tuning = tune.tune(args["app"], args["days"], now, workers=args.get("workers", 1))
        seconds = time.perf_counter() - start
        exact, tried = tuning.exact, tuning.tried
        users = len(history.users(args["app"], tuning.start))
    else:
        candidate = service.candidate_policy(args["app"], preset="article")
        report = service.run(
            args["app"], args["days"], candidate, now, workers=args.get("workers", 1)
        )
        seconds = time.perf_counter() - start
        exact, users, tried = report.exactness.exact, report.users, 1
    return {
        "seconds": seconds,
        "peak_rss_mb": _peak_rss_mb(),
        # The replaying children's (workers > 1; each reads its own batches): the
        # largest, counted from the fork, so with the pages it shares with this process.
        "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "exact": exact,
        "users": users,
        "tried": tried,
    }


def quality_tune(args: dict, pipe=None) -> dict:
    """The tuner on a half-year quality replay (``bench.quality.replay.tune_worker``)."""
    from .quality.replay import tune_worker

    return tune_worker(args)


KINDS = {
    "backtest": backtest,
    "quality_tune": quality_tune,
    "enforce_pass": enforcement_pass,
    "ingest": ingest,
    "quality": quality,
    "quality_store": quality_store,
}


def main() -> None:
    kind, raw = sys.argv[1], sys.argv[2]
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    # Only the result goes to stdout; anything else a library prints goes to stderr.
    real_stdout = sys.stdout
    out = KINDS[kind](json.loads(raw))
    real_stdout.write(json.dumps(out, default=str) + "\n")
    real_stdout.flush()


if __name__ == "__main__":
    main()
