"""``bench.search_parity``: LoCoMo with nothing evicted on both databases, compared."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import search_parity
from bench.cli import drop_database
from bench.quality import locomo

from .test_bench_smoke import ROOT, bench_database_url

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"


def _answer(top, answerable=True, category="4"):
    return {"category": category, "answerable": answerable, "top": top}


def test_questions_compare_as_same_reordered_or_other_and_answers_must_agree():
    first = {
        "q1": _answer(["D1:1", "D1:2"]),
        "q2": _answer(["D1:1", "D1:2"]),
        "q3": _answer(["D1:1"], category="1"),
    }
    second = {
        "q1": _answer(["D1:1", "D1:2"]),
        "q2": _answer(["D1:2", "D1:1"]),  # a tie ordered the other way
        "q3": _answer(["D2:1"], answerable=False, category="1"),
    }
    c = search_parity.compare(first, second)
    assert (c["same"], c["reordered"], c["other"]) == (1, 1, 1)
    assert c["differing"] == ["q3"] and c["answer_differs"] == ["q3"]
    assert search_parity.summary(second) == {
        "questions": 3,
        "answerable": 2,
        "categories": {"1": [0, 1], "4": [2, 2]},
    }
    table, alike = search_parity.report({"SQLite": {"end": first}, "PostgreSQL": {"end": second}})
    assert not alike
    assert "| database | mode | answerable@10 | by category (1 / 4) |" in table
    assert "| SQLite | end | 100.0% (3/3) | 100.0% (1/1) / 100.0% (2/2) |" in table
    assert "answerable on one database only: 1" in table
    _, alike = search_parity.report({"SQLite": {"end": first}, "PostgreSQL": {"end": first}})
    assert alike


@pytest.mark.postgres
def test_the_tiny_conversations_answer_alike_on_both_databases(tmp_path):
    out = tmp_path / "parity.json"
    url = bench_database_url().replace("memadmin_bench_smoke_", "memadmin_bench_parity_")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.search_parity", "--locomo", str(FIXTURE)]
            + ["--json", str(out)],
            cwd=ROOT,
            env={**os.environ, "BENCH_DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        drop_database(url)  # the command drops it too, unless it was killed
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    results = json.loads(out.read_text())
    assert set(results) == {"SQLite", "PostgreSQL"}
    sqlite, postgres = results["SQLite"], results["PostgreSQL"]
    assert set(sqlite) == set(postgres) == {"end", "interleaved"}
    asked = {q.id for u in locomo.load(FIXTURE).users for q in u.questions}
    for mode in ("end", "interleaved"):
        assert set(sqlite[mode]) == asked
        assert sqlite[mode] == postgres[mode]
    cat = [a for a in sqlite["end"].values() if a["category"] == "4"]
    assert any(a["answerable"] for a in cat)  # "What is the name of Ana's cat?"
    assert f"the same top 10 for {len(asked)} questions" in proc.stdout
