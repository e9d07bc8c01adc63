"""The quality benchmark: its datasets (pure), and its CI run end to end (PostgreSQL).

The end-to-end run replays a hand-written LoCoMo-format fixture and a small synthetic
year through the real services and asserts the bench's own checks (two runs agree,
nothing pinned evicted, ...) and the shape of its rows, never the figures.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality import locomo, synthetic, tables
from bench.quality.data import END
from bench.quality.policies import KEEP_ALL, POLICIES

from .test_bench_smoke import ROOT, bench_database_url

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"


def _session_of(user) -> dict[str, int]:
    return {t.key: i for i, s in enumerate(user.sessions) for t in s.turns}


def test_locomo_file_is_read_as_the_format_defines_it():
    dataset = locomo.load(FIXTURE, seed=7)
    assert [u.user_id for u in dataset.users] == ["tiny-1", "tiny-2"]
    ana = dataset.users[0]
    assert [s.id for s in ana.sessions] == ["tiny-1-s1", "tiny-1-s2", "tiny-1-s3"]
    texts = {t.key: (t.author, t.text) for s in ana.sessions for t in s.turns}
    assert texts["D1:3"] == (
        "Ana",
        "She is two years old and loves cardboard boxes. "
        "[shares a photo of a grey cat sitting in a cardboard box]",
    )
    questions = {q.text: q for q in ana.questions}
    assert "What is Rui's favourite boat?" not in questions  # category 5
    assert "When does Rui go rowing?" not in questions  # no evidence
    regatta = "Which place did Rui's rowing team finish in the regatta on the Douro river?"
    assert questions[regatta].evidence == ("D2:3", "D3:2")
    assert questions["What did Ana paint in her hallway?"].evidence == ("D2:2",)
    assert questions["What is Ana's sourdough starter called?"].evidence == ("D3:3",)
    assert dataset.notes == [
        "1 evidence ids name no turn and were ignored",
        "1 questions without usable evidence were skipped",
    ]
    assert dataset.questions == 9


def test_turn_ids_are_read_as_evidence_ids_are_so_the_two_meet(tmp_path):
    raw = json.loads(FIXTURE.read_text())
    turn = raw[0]["conversation"]["session_2"][1]
    assert turn["dia_id"] == "D2:2"
    turn["dia_id"] = " D2:02"
    changed = tmp_path / "ids.json"
    changed.write_text(json.dumps(raw))
    questions = {q.text: q for q in locomo.load(changed, seed=7).users[0].questions}
    assert questions["What did Ana paint in her hallway?"].evidence == ("D2:2",)
    assert locomo.turn_key("D:11:26") == "D11:26" and locomo.turn_key("x-1") == "x-1"


def test_interleaved_questions_come_after_their_evidence_and_are_seeded():
    dataset = locomo.load(FIXTURE, seed=7)
    asks = []
    for user in dataset.users:
        session_of = _session_of(user)
        for q in user.questions:
            last = max(session_of[e] for e in q.evidence)
            assert q.ask["end"] == END
            assert q.ask["interleaved"] == END or q.ask["interleaved"] > last
            asks.append(q.ask["interleaved"])
    again = locomo.load(FIXTURE, seed=7)
    assert asks == [q.ask["interleaved"] for u in again.users for q in u.questions]
    assert set(asks) != {END}  # some are asked before a later session


def test_a_file_not_in_locomo_format_is_refused_with_the_reason(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(locomo.LocomoError, match="is not JSON"):
        locomo.load(bad)
    raw = json.loads(FIXTURE.read_text())
    raw[0]["conversation"]["session_1_date_time"] = "yesterday"
    bad.write_text(json.dumps(raw))
    with pytest.raises(locomo.LocomoError, match="'yesterday' is not like"):
        locomo.load(bad)


def test_synthetic_year_is_seeded_and_its_ground_truth_is_consistent():
    year = synthetic.generate(users=3, sessions=40, seed=7)
    assert year == synthetic.generate(users=3, sessions=40, seed=7)
    assert year != synthetic.generate(users=3, sessions=40, seed=8)
    kinds = set()
    for user in year.users:
        session_of = _session_of(user)
        times = [s.at for s in user.sessions]
        assert times == sorted(times) and len(times) == 40
        assert (times[-1] - times[0]).days < synthetic.YEAR_DAYS
        for q in user.questions:
            kinds.add(q.category)
            said = session_of[q.evidence[0]]
            assert q.ask["year"] == END or q.ask["year"] > said
            assert not q.pinned or q.high  # what should be pinned is important
            for old in q.stale:  # superseded values were said before the current one
                assert q.category == "address" and session_of[old] < said
    assert {"identity", "allergy", "address", "order", "complaint", "trivia"} <= kinds
    assert any(q.stale for u in year.users for q in u.questions)


def _run_bench(tmp_path, settings, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "bench.json"
    env = {
        **os.environ,
        "BENCH_DATABASE_URL": bench_database_url(),
        "BENCH_REDIS_URL": settings.REDIS_URL,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--size", "smoke", "--only", "quality", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, out


@pytest.mark.postgres
@pytest.mark.redis
def test_quality_bench_replays_both_datasets_and_its_checks_pass(tmp_path, settings):
    proc, out = _run_bench(
        tmp_path,
        settings,
        "--locomo",
        str(FIXTURE),
        "--set",
        "quality.synthetic_sessions=12",
        "--set",
        "quality.budgets=[8]",
        "--set",
        "quality.locomo_conversations=null",
        "--json",
        str(tmp_path / "bench.json"),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads(out.read_text())
    checks = [c for c in report["checks"] if c["scenario"] == "quality"]
    assert all(c["passed"] for c in checks), checks
    names = " / ".join(c["name"] for c in checks)
    for expected in (
        "synthetic year: two runs",
        "locomo end: two runs",
        "locomo interleaved: two runs",
        "no pinned record evicted",
        "keep-all evicts nothing",
    ):
        assert expected in names
    rows = [r for r in report["rows"] if r["scenario"] == "quality"]
    common = {"scenario", "dataset", "mode", "budget", "policy", "questions"}
    common |= {"answerable", "retained"}
    synthetic_only = {"pinned_answerable", "high_answerable", "stale"}
    expected = set()
    for dataset, mode in (("locomo", "end"), ("locomo", "interleaved"), ("synthetic", "year")):
        expected |= {(dataset, mode, 8, p) for p in POLICIES} | {(dataset, mode, None, KEEP_ALL)}
    assert sorted((r["dataset"], r["mode"], r["budget"] or 0, r["policy"]) for r in rows) == sorted(
        (d, m, b or 0, p) for d, m, b, p in expected
    )
    for row in rows:
        keys = common | (synthetic_only if row["dataset"] == "synthetic" else set())
        assert set(row) == keys
        assert row["questions"] > 0
        for key in keys - {"scenario", "dataset", "mode", "budget", "policy", "questions"}:
            assert row[key] is None or 0 <= row[key] <= 1
    keep_all = [r for r in rows if r["policy"] == KEEP_ALL]
    assert all(r["retained"] > 0 for r in keep_all)
    assert "Memory quality: answerable@10" in proc.stdout
    assert "locomo: 2 users, 25 turns, 9 questions" in proc.stdout


@pytest.mark.postgres
@pytest.mark.redis
def test_quality_bench_skips_locomo_with_a_clear_message_when_the_file_is_absent(
    tmp_path, settings
):
    missing = tmp_path / "absent.json"
    proc, _ = _run_bench(
        tmp_path, settings, "--locomo", str(missing), "--set", "quality.synthetic_users=0"
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert f"LoCoMo skipped: no file at {missing}" in proc.stderr
    assert "Memory quality: nothing to replay" in proc.stdout


def test_tables_are_rendered_from_a_saved_run(tmp_path, capsys):
    def row(dataset, mode, budget, policy, answerable, **extra):
        return {
            "scenario": "quality",
            "dataset": dataset,
            "mode": mode,
            "budget": budget,
            "policy": policy,
            "questions": 10,
            "answerable": answerable,
            "retained": 0.5,
            **extra,
        }

    year = {"pinned_answerable": 1.0, "high_answerable": 0.25, "stale": None}
    saved = {
        "rows": [
            {"scenario": "search", "size": "500 records/user"},  # a timing row: ignored
            row("locomo", "end", 50, "default", 0.125),
            row("locomo", "end", None, "keep-all", 0.5),
            row("synthetic", "year", 50, "lru", 0.75, **year),
        ],
        "details": {
            "quality": [
                {
                    "job": {
                        "dataset": "locomo",
                        "mode": "end",
                        "budget": None,
                        "policy": "keep-all",
                    },
                    "evictions": 0,
                    "pins_per_user": [2, 4],
                    "evidence_dropped": 1,
                    "evidence": 12,
                }
            ]
        },
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(saved))
    assert tables.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| locomo | end | 50 | 12.5 (50.0) | — | 50.0 (50.0) |" in out
    assert "| 50 | — | 100.0 / 25.0 / — | — |" in out
    assert "pinned records per user 3.0 on average, 4 at most; 1 of 12 evidence" in out
    path.write_text(json.dumps({"rows": saved["rows"][:1]}))
    assert tables.main([str(path)]) == 1
    assert "holds no quality rows" in capsys.readouterr().err
