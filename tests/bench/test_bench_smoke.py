"""The benchmarks run end to end at the smoke size, so they cannot rot.

The quality and tuning scenarios replay datasets for minutes rather than seconds; each has its own
end-to-end test on small fixtures (tests/bench/test_quality.py).

Timings are not asserted (CI machines vary); the table must hold every scenario and
every correctness check inside the bench must pass (identical victims, nothing left
to evict, every session retired, constant query counts, ...).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from bench.cli import SCENARIOS
from records.rules import DEFAULT_RULES

TIMED = [s for s in SCENARIOS if s not in ("quality", "tuning")]

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.worker]

ROOT = Path(__file__).resolve().parents[2]


def bench_database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/memadmin_bench_smoke_{os.getpid()}"


def test_smoke_size_runs_every_scenario_and_its_checks_pass(tmp_path, settings):
    out = tmp_path / "bench.json"
    env = {
        **os.environ,
        "BENCH_DATABASE_URL": bench_database_url(),
        "BENCH_REDIS_URL": settings.REDIS_URL,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "smoke", "--json", str(out), "--only", *TIMED],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["scenarios"] == TIMED
    assert {row["scenario"].split(",")[0].split(" (")[0] for row in report["rows"]} >= {
        "search",
        "recall: known-answer recall@10",
        "recall: search latency",
        "enforce one user",
        "enforcement pass",
        "ingest",
        "sweep",
        "dashboard: user page",
        f"rules: {len(DEFAULT_RULES)} defaults",
        "rules: staff pattern",
        "sessions: append_event",
        "sessions: get_session",
        "sessions: list_sessions",
        "sessions: first page of 100",
        "scale: enforcement pass",
        "scale: search",
        "scale: ingest",
        "backtest: backtest",
        "backtest: tune",
    }
    # The backtest replays on two processes, each child reading its own users.
    assert "backtest: backtest (peak RSS of the largest child)" in {
        row["scenario"] for row in report["rows"]
    }
    # Ours and each baseline alternate within repetitions: at least three, the range of
    # the per-repetition medians beside the median, the load average on every row.
    interleaved = [
        r
        for r in report["rows"]
        if r["scenario"].startswith(
            ("search", "recall: search", "sessions:", "scale: search", "scale: ingest")
        )
    ]
    session_baselines = {r["baseline"] for r in interleaved if r["scenario"].startswith("sess")}
    assert {"ADK DatabaseSessionService", "ADK InMemorySessionService"} <= session_baselines
    for row in interleaved:
        assert row["repetitions"] >= 3, row
        assert row["ours_range"][0] <= row["ours_range"][1], row
        assert row["ratio_range"][0] <= row["ratio"] <= row["ratio_range"][1], row
    assert all(isinstance(r.get("load"), float) for r in report["rows"]), report["rows"]
    assert set(report["machine"]["load_average_by_scenario"]) == set(TIMED)
    # Known-answer recall: a percentage per size against both ADK services, every
    # question's answer planted (a check), the misses listed per system.
    recall = [r for r in report["rows"] if r["scenario"] == "recall: known-answer recall@10"]
    assert {(r["size"], r["baseline"]) for r in recall} == {
        (f"{n} records/user", base)
        for n in (100, 500)
        for base in ("ADK SqliteMemoryService", "ADK InMemoryMemoryService")
    }
    assert all(r["unit"] == "%" and 0 <= r["ours"] <= 100 and r["base"] is not None for r in recall)
    planted = [c for c in report["checks"] if "questions' answers is planted once" in c["name"]]
    assert len(planted) == 2 and all(c["passed"] for c in planted)
    assert [d["records"] for d in report["details"]["recall"]] == [100, 500]
    assert "Known-answer questions missed in the top 10" in proc.stdout
    failed = [c for c in report["checks"] if not c["passed"]]
    assert not failed, failed
    assert len(report["checks"]) >= 15
    table = proc.stdout
    for column in ("ours (median)", "baseline (median)", "ratio", "target", "met?", "reps", "load"):
        assert column in table
    assert "Machine: " in table and "PostgreSQL" in table
    assert "Load average (1 min) at each scenario's start" in table


def test_refuses_a_database_that_does_not_look_like_a_bench_database():
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "smoke", "--only", "search"],
        cwd=ROOT,
        env={**os.environ, "BENCH_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/memadmin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "does not look like a bench database" in proc.stderr
