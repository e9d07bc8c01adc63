"""`manage.py start` (`make run`): which processes it runs, and what it prints last."""

import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

from memadmin.management.commands.start import Command
from tests.conftest import subprocess_database_url, wait_until


def option(argv, name):
    return argv[argv.index(name) + 1]


def test_make_run_starts_one_worker_per_queue_so_erasure_never_waits_behind_a_sweep():
    commands = Command.process_commands("127.0.0.1:8000", 3)
    assert set(commands) == {"web", "worker", "erasure worker", "beat"}
    worker, erasure = commands["worker"], commands["erasure worker"]
    assert (option(worker, "-Q"), option(worker, "--concurrency")) == ("celery", "3")
    assert (option(erasure, "-Q"), option(erasure, "--concurrency")) == ("erasure", "1")
    assert option(worker, "-n") != option(erasure, "-n")  # two nodes on one host


@pytest.mark.django_db(transaction=True)
def test_the_accounts_are_printed_again_after_every_process_is_ready(settings, tmp_path):
    """`make run` for real (web, both workers, beat): the passwords come last, after the
    workers' banners, not 70 lines above them."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": subprocess_database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMADMIN_VAR_DIR": str(tmp_path),
    }
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "start", "--no-demo", "--concurrency", "1"]
        + ["--addr", f"127.0.0.1:{port}"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def read():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_until(
            lambda: (
                sum(line.startswith("Staff accounts") for line in lines) == 2
                and any(line.startswith("  compliance") for line in lines[-4:])
            ),
            timeout=150,
            message="the accounts printed at the end of start-up",
        )
        seen = list(lines)  # as it stood at the end of start-up, before the shutdown
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    first, last = (i for i, line in enumerate(seen) if line.startswith("Staff accounts"))
    ready = [i for i, line in enumerate(seen) if " ready." in line]
    assert len(ready) == 2 and first < min(ready) and max(ready) < last
    assert "memadmin is up: web, workers and beat." in seen[last - 2]
    assert seen[last - 1] == f"Open http://127.0.0.1:{port}/ — Ctrl-C stops everything."
    # the same passwords both times, and they are the last lines
    assert seen[first + 1 : first + 4] == seen[last + 1 : last + 4] == seen[-3:]
    assert [line.split()[0] for line in seen[-3:]] == ["support", "ops", "compliance"]
