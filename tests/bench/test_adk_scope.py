"""``bench.adk_scope``: ADK's SQLite service timed as other users' records join its file."""

import os
import subprocess
import sys

from .test_bench_smoke import ROOT


def test_it_prints_a_median_after_each_step(tmp_path):
    env = {**os.environ, "MEMADMIN_VAR_DIR": str(tmp_path), "SECRET_KEY": "x"}
    env.pop("DATABASE_URL", None)  # it needs no database of the project's
    out = subprocess.run(
        [sys.executable, "-m", "bench.adk_scope", "--scale", "0.01"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.splitlines()
    steps = [line.rsplit(": ", 1) for line in out]
    assert [step for step, _ in steps] == [
        "u500 stored",
        "u5000 stored",
        "u50000 stored",
        "other users' sessions written",
        "FTS5 optimize",
        "ANALYZE",
    ]
    assert all(ms.endswith(" ms") and float(ms[:-3]) > 0 for _, ms in steps)
