"""The tuning scenario end to end at the smoke size (PostgreSQL): the tuner runs on the
synthetic year's first half, and both whole-year replays count the same questions of
the second half. The shape of its row, never the figure."""

import json
import os
import subprocess
import sys

import pytest

from bench.quality.replay import Job

from .test_bench_smoke import ROOT, bench_database_url


def test_a_half_year_job_has_its_own_app_and_a_tuned_one_its_values():
    full = Job("synthetic", "year", "default", 100)
    half = Job("synthetic", "year", "default", 100, until_day=180)
    tuned = Job("synthetic", "year", "tuned", 100, values='{"w_recency": 0.25}')
    other = Job("synthetic", "year", "tuned", 100, values='{"w_recency": 0.75}')
    from_article = Job(
        "synthetic", "year", "tuned", 100, values='{"w_recency": 0.25}', start="article"
    )
    assert len({full.app, half.app, tuned.app, other.app, from_article.app}) == 5


@pytest.mark.postgres
@pytest.mark.redis
def test_tuning_bench_tunes_on_the_first_half_and_judges_the_second(tmp_path, settings):
    out = tmp_path / "bench.json"
    env = {
        **os.environ,
        "BENCH_DATABASE_URL": bench_database_url(),
        "BENCH_REDIS_URL": settings.REDIS_URL,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "smoke", "--only", "tuning", "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    checks = [c for c in report["checks"] if c["scenario"] == "tuning"]
    assert checks and all(c["passed"] for c in checks), checks
    rows = [r for r in report["rows"] if r["scenario"].startswith("tuning from ")]
    assert [r["baseline"] for r in rows] == [
        "the starting policy (article)",
        "the starting policy (default)",
    ]
    for row in rows:
        assert 0 <= row["ours"] <= 100 and 0 <= row["base"] <= 100
        assert "92 candidates" in row["size"]
