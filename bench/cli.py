"""``python -m bench``: create the bench database, run the scenarios, print one table.

    python -m bench [--size smoke|full] [--only SCENARIO ...] [--json PATH] [--keep]
                    [--locomo PATH]

Environment: ``BENCH_DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/memadmin_bench``) and ``BENCH_REDIS_URL`` (default
``redis://127.0.0.1:6379/8``; broker of the sweep's Celery worker and the touch buffer).
The database is dropped and created by the command, so it refuses one whose name does
not contain "bench", and one that exists but was not created by the bench (no
``bench_marker`` table) unless ``--force``. It is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from .harness import Report, checks_text, load_average, machine_info, machine_line, table

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/memadmin_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/8"

SCENARIOS = (
    "search",
    "recall",
    "enforce_user",
    "enforce_pass",
    "ingest",
    "sessions",
    "sweep",
    "dashboard",
    "rules",
    "scale",
    "backtest",
    "quality",
    "tuning",
)

# The public half of LoCoMo sits beside the repository (its licence forbids a copy in it).
DEFAULT_LOCOMO = Path(__file__).resolve().parents[1] / "../shared/data/locomo/locomo-public.json"

# Every size a scenario uses. "smoke" keeps the whole run well under a minute (CI);
# "full" is the sizes, for a quiet machine.
SIZES: dict[str, dict[str, dict]] = {
    "smoke": {
        "search": {
            "records": [100, 500],
            "queries": 21,
            "baseline_queries": 21,
            "repetitions": 3,
            "sessions_after": 5,
        },
        "recall": {"records": [100, 500], "repetitions": 3},
        "enforce_user": {"records": [500, 2_000], "repeat": 3},
        "enforce_pass": {"users": 20, "records": 10_000},
        "ingest": {
            "sessions_per_process": 9,
            "users_per_process": 4,
            "prefill": 480,
            "repetitions": 3,
        },
        "sessions": {
            "repetitions": 3,
            "events": 8,
            "gets": 3,
            "sessions": 300,
            "users": 30,
            "lists": 2,
        },
        "sweep": {"users": 3, "sessions_per_user": 2},
        "dashboard": {
            "stage1": (20, 2_000),
            "stage2": (100, 10_000),
            "user_pages": [500, 2_000],
            "repeat": 5,
        },
        "rules": {"repeat": 5},
        "scale": {
            "records": 20_000,
            "small_users": 4,
            "queries": 12,
            "repetitions": 3,
            "ingest_sessions": 2,
        },
        "backtest": {
            "users": 4,
            "days": 90,
            "searches_per_day": 2,
            "evictions": 20,
            "tune": True,
            "workers": 2,  # as full: the pool's path
        },
        "tuning": {
            "budgets": [10],
            "synthetic_users": 2,
            "synthetic_sessions": 40,
            "processes": 2,
            "starts": ["article", "default"],  # the policies the tuner starts from
        },
        # A taste of every dataset and policy: one conversation, two small users.
        "quality": {
            "budgets": [10, 30],
            "policies": None,
            "locomo_conversations": 1,
            "synthetic_users": 2,
            "synthetic_sessions": 12,
            "processes": 2,
        },
    },
    "full": {
        "search": {
            "records": [500, 5_000, 50_000],
            "queries": 200,
            "baseline_queries": {500: 200, 5_000: 200, 50_000: 40},
            "repetitions": 5,
            # Then the 500-record user's searches again, after this many sessions of other
            # users were ingested with no vacuum since (about 17 records each).
            "sessions_after": 300,
        },
        # All three sizes took 300 s on 2 shared cores (docs/search.md), most of it in
        # ADK's in-memory scan at 50,000; lower with --set 'recall.records=[500,5000]'.
        "recall": {"records": [500, 5_000, 50_000], "repetitions": 5},
        "enforce_user": {"records": [500, 10_000, 100_000], "repeat": 15},
        "enforce_pass": {"users": 2_000, "records": 1_000_000},
        "ingest": {
            "sessions_per_process": 300,
            "users_per_process": 100,
            "prefill": 480,
            "repetitions": 5,
        },
        "sessions": {
            "repetitions": 5,
            "events": 200,
            "gets": 20,
            "sessions": 10_000,
            "users": 1_000,
            "lists": 3,
        },
        "sweep": {"users": 2_000, "sessions_per_user": 5},
        "dashboard": {
            "stage1": (1_000, 100_000),
            "stage2": (10_000, 1_000_000),
            "user_pages": [500, 5_000],
            "repeat": 30,
        },
        "rules": {"repeat": 30},
        # 10M records take long to generate on a small machine: lower with
        # --set scale.records=N (docs/scaling.md names the size each figure was run at).
        "scale": {
            "records": 10_000_000,
            "small_users": 20,
            "queries": 300,
            "repetitions": 5,
            "ingest_sessions": 10,
        },
        # The size; the tuner replays ~90 candidates (--set backtest.tune=false
        # to time the backtest alone).
        "backtest": {
            "users": 10_000,
            "days": 90,
            "searches_per_day": 2,
            "evictions": 100,
            "tune": True,
            # Processes reading and replaying users (backtest.parallel; docs/backtest.md):
            # one per core of the machine the issue names.
            "workers": 2,
        },
        "tuning": {
            "budgets": [100, 200],
            "synthetic_users": 12,
            "synthetic_sessions": 110,
            "processes": 2,
            "starts": ["article", "default"],
        },
        "quality": {
            "budgets": [50, 100, 200, 400],
            "policies": None,  # all: default, article, fifo, lru, lfu, random (+ keep-all)
            "locomo_conversations": None,  # all in the file
            "synthetic_users": 12,
            "synthetic_sessions": 110,  # per user, in 360 days
            "processes": 2,
        },
    },
}


class Refused(Exception):
    """The command will not touch this database; the message says why."""


def _admin_conninfo(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise Refused(f"the bench runs on PostgreSQL; {parts.scheme}:// is not a bench database")
    name = unquote(parts.path.lstrip("/"))
    if "bench" not in name.lower():
        raise Refused(
            f"database {name!r} does not look like a bench database (its name must contain "
            "'bench'); the bench drops and re-creates it"
        )
    admin = urlunsplit(parts._replace(path="/postgres"))
    return name, admin


def prepare_database(url: str, *, force: bool = False) -> None:
    """Drop and create the bench database; refuse one the bench did not create."""
    import psycopg
    from psycopg import sql

    name, admin = _admin_conninfo(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and not force:
            with psycopg.connect(url) as db:
                tables = db.execute(
                    "SELECT count(*), count(*) FILTER (WHERE tablename = 'bench_marker') "
                    "FROM pg_tables WHERE schemaname = 'public'"
                ).fetchone()
            if tables[0] and not tables[1]:
                raise Refused(
                    f"database {name!r} exists, holds {tables[0]} tables and was not created "
                    "by the bench (no bench_marker table); pass --force to drop it anyway"
                )
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE bench_marker (created_at timestamptz NOT NULL DEFAULT now())")
        db.execute("INSERT INTO bench_marker DEFAULT VALUES")


def drop_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name, admin = _admin_conninfo(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def configure_environment(database_url: str, redis_url: str) -> dict[str, str]:
    """Settings for this process and every subprocess the bench starts."""
    env = {
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": redis_url,
        "REDIS_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "memadmin.settings",
        "DEBUG": "0",
        "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
    }
    os.environ.update(env)
    return env


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="smoke")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SCENARIOS,
        metavar="SCENARIO",
        help=f"run only these ({', '.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SCENARIO.KEY=VALUE",
        help="override one size parameter, e.g. --set sweep.users=200 (VALUE is JSON)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--locomo",
        metavar="PATH",
        default=str(DEFAULT_LOCOMO),
        help="LoCoMo-format JSON for the quality scenario (skipped if the file is absent; "
        "default: ../shared/data/locomo/locomo-public.json beside the repository)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    parser.add_argument(
        "--force",
        action="store_true",
        help="drop the bench database even if the bench did not create it",
    )
    return parser.parse_args(argv)


def sizes(args: argparse.Namespace) -> dict[str, dict]:
    chosen = {name: dict(values) for name, values in SIZES[args.size].items()}
    for item in args.set:
        key, _, raw = item.partition("=")
        scenario, _, field = key.partition(".")
        if scenario not in chosen or field not in chosen[scenario]:
            raise SystemExit(f"bench: --set {item!r}: no size parameter {key!r}")
        chosen[scenario][field] = json.loads(raw)
    chosen["quality"]["locomo"] = args.locomo
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.sizes = sizes(args)
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    try:
        prepare_database(database_url, force=args.force)
    except Refused as refused:
        print(f"bench: refused: {refused}", file=sys.stderr)
        return 2
    env = configure_environment(database_url, redis_url)
    try:
        report = run(args, env)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_database(database_url)
    output(report, args)
    return 0 if all(c.passed for c in report.checks) else 1


def run(args: argparse.Namespace, env: dict[str, str]) -> Report:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from . import scenarios

    call_command("migrate", verbosity=0, interactive=False)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = f"PostgreSQL {cursor.fetchone()[0]}"
    report = Report(machine=machine_info(pg))
    report.machine["size"] = args.size
    report.machine["overrides"] = args.set
    chosen = [s for s in SCENARIOS if not args.only or s in args.only]
    for name in chosen:
        start = time.perf_counter()
        load = load_average()
        print(f"bench: {name} ({args.size}), load average {load} ...", file=sys.stderr, flush=True)
        first_row = len(report.rows)
        scenarios.run(name, report, args.sizes[name], env)
        for row in report.rows[first_row:]:
            if row.load is None:
                row.load = load
        report.machine.setdefault("load_average_by_scenario", {})[name] = [load, load_average()]
        report.scenarios.append(name)
        report.seconds[name] = round(time.perf_counter() - start, 1)
        print(f"bench: {name} done in {report.seconds[name]:.1f} s", file=sys.stderr, flush=True)
    return report


def output(report: Report, args: argparse.Namespace) -> None:
    print(table(report))
    print()
    for extra in report.tables:
        print(extra)
        print()
    print(machine_line(report.machine))
    loads = report.machine.get("load_average_by_scenario", {})
    if loads:
        print(
            "Load average (1 min) at each scenario's start → end: "
            + ", ".join(f"{name} {a} → {b}" for name, (a, b) in loads.items())
        )
    overrides = f" with {', '.join(args.set)}" if args.set else ""
    print(f"Size: {args.size}{overrides}; seconds per scenario: {report.seconds}")
    if args.size != "full":
        print("Targets are for --size full; at this size only the checks below mean anything.")
    print("Checks:")
    print(checks_text(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.as_json(), f, indent=2, default=str)
