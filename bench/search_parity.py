"""LoCoMo with nothing evicted, through the real services on SQLite and on PostgreSQL:
answerable@10 on each database, and whether both return the same top 10.

    python -m bench.search_parity --locomo ../shared/data/locomo/locomo-public.json
    python -m bench.search_parity --locomo PATH --json parity.json

The quality bench's keep-all row (``python -m bench --only quality``) is measured on
PostgreSQL only; this replays the same jobs (``bench.quality.replay``: every session
stored through the session service, ingested with ``add_session_to_memory``, each
question asked with ``search_memory`` where the mode puts it) once per database, each
in a process of its own: SQLite in a file of a temporary directory, PostgreSQL in
``BENCH_DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/memadmin_bench_parity``;
the name must contain "bench": it is dropped and created, and dropped after). Then it
compares, question by question, the ten turns each database returned: the same list,
the same ten in another order (a tie ordered differently), or other turns.

Answers are counted as the quality bench counts them (every evidence turn in the top
10), per mode and per LoCoMo category. The LoCoMo file is read from its path (its
licence forbids copying it into the repository). Exit status 1 if the two databases
answer a question differently, or a replay fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/memadmin_bench_parity"


def replay_here(locomo: str) -> dict:
    """In a process whose ``DATABASE_URL`` is the database to measure: migrate, store
    LoCoMo's sessions, replay the keep-all jobs of every mode. Returns, per mode, each
    question's category, whether it was answerable, and its top 10 as turn keys."""
    import asyncio

    import django

    django.setup()
    from django.core.management import call_command

    from .quality import replay
    from .quality.policies import KEEP_ALL

    call_command("migrate", verbosity=0, interactive=False)
    spec = {"name": "locomo", "path": locomo, "seed": replay.SEED, "conversations": None}
    dataset = replay.load_dataset(spec)
    replay.skip_commit_waits()
    asyncio.run(replay.store_sessions(dataset))
    jobs = [replay.Job("locomo", mode, KEEP_ALL, None).__dict__ for mode in dataset.modes]
    outcomes = replay.worker({"datasets": [spec], "jobs": jobs})["outcomes"]
    questions = {q.id: q for u in dataset.users for q in u.questions}
    out = {}
    for outcome in outcomes:
        answers = {}
        for question_id, top in outcome["answers"]:
            q = questions[question_id]
            answers[question_id] = {
                "category": q.category,
                "answerable": all(e in top for e in q.evidence),
                "top": top,
            }
        if sum(a["answerable"] for a in answers.values()) != outcome["answerable"]:
            raise RuntimeError("answerable questions counted two ways disagree")
        out[outcome["job"]["mode"]] = answers
    return out


def _child(database_url: str, locomo: str, var_dir: str) -> dict:
    from .cli import configure_environment

    # The bench's settings for this database, no Redis (the quality replays' shape).
    env = configure_environment(database_url, "")
    proc = subprocess.run(  # noqa: S603 - this interpreter, this module
        [sys.executable, "-m", "bench.search_parity", "--child", "--locomo", locomo],
        cwd=ROOT,
        env={**os.environ, **env, "MEMADMIN_VAR_DIR": var_dir},
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the replay on {database_url.split(':')[0]} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(answers: dict) -> dict:
    """Answerable counts overall and per category, of one database's one mode."""
    by_category: Counter = Counter()
    of_category: Counter = Counter()
    for a in answers.values():
        of_category[a["category"]] += 1
        by_category[a["category"]] += a["answerable"]
    return {
        "questions": len(answers),
        "answerable": sum(by_category.values()),
        "categories": {c: [by_category[c], of_category[c]] for c in sorted(of_category)},
    }


def compare(first: dict, second: dict) -> dict:
    """Per question: the same top 10 in the same order, the same ten in another, or not."""
    same = reordered = other = 0
    differing = []
    for question_id, a in first.items():
        b = second[question_id]
        if a["top"] == b["top"]:
            same += 1
        elif sorted(a["top"]) == sorted(b["top"]):
            reordered += 1
        else:
            other += 1
            differing.append(question_id)
    answer_differs = [q for q, a in first.items() if a["answerable"] != second[q]["answerable"]]
    return {
        "same": same,
        "reordered": reordered,
        "other": other,
        "differing": differing,
        "answer_differs": answer_differs,
    }


def _percent(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "-"


def report(results: dict) -> tuple[str, bool]:
    """The table, and whether both databases answered every question alike."""
    asked = sorted(
        {a["category"] for modes in results.values() for m in modes.values() for a in m.values()}
    )
    lines = [
        f"| database | mode | answerable@10 | by category ({' / '.join(asked)}) |",
        "|---|---|---|---|",
    ]
    for database, modes in results.items():
        for mode, answers in modes.items():
            s = summary(answers)
            categories = " / ".join(_percent(*s["categories"].get(c, [0, 0])) for c in asked)
            answerable = _percent(s["answerable"], s["questions"])
            lines.append(f"| {database} | {mode} | {answerable} | {categories} |")
    alike = True
    if len(results) == 2:
        a, b = results.values()
        for mode in a:
            c = compare(a[mode], b[mode])
            alike = alike and not c["answer_differs"]
            lines.append(
                f"{mode}: the same top 10 for {c['same']} questions, the same ten in another "
                f"order for {c['reordered']}, other turns for {c['other']}"
                + (f" ({', '.join(c['differing'][:10])})" if c["differing"] else "")
                + f"; answerable on one database only: {len(c['answer_differs'])}"
            )
    return "\n".join(lines), alike


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_parity", description=__doc__)
    parser.add_argument("--locomo", required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--json", help="also write every database's answers here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    locomo = str(Path(args.locomo).resolve())
    if not Path(locomo).is_file():
        parser.error(f"no LoCoMo file at {args.locomo}")
    if args.child:
        sys.path.insert(0, str(ROOT))
        real_stdout, sys.stdout = sys.stdout, sys.stderr  # only the result on stdout
        out = replay_here(locomo)
        real_stdout.write(json.dumps(out) + "\n")
        return 0

    from .cli import Refused, drop_database, prepare_database

    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    try:
        prepare_database(database_url)
    except Refused as refused:
        print(f"bench: refused: {refused}", file=sys.stderr)
        return 2
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-parity-") as tmp:
            print("bench: search parity: SQLite ...", file=sys.stderr, flush=True)
            sqlite_url = f"sqlite:///{tmp}/parity.db"
            results["SQLite"] = _child(sqlite_url, locomo, tmp)
            print("bench: search parity: PostgreSQL ...", file=sys.stderr, flush=True)
            results["PostgreSQL"] = _child(database_url, locomo, tmp)
    finally:
        drop_database(database_url)
    table, alike = report(results)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0 if alike else 1


if __name__ == "__main__":
    sys.exit(main())
