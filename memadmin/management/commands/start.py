"""The main job: migrate, seed demo data, create role accounts, run web, the workers
and beat: one worker for sweeps, enforcement and re-scoring, one for erasure alone (its
own queue), so a stuck sweep cannot delay an erasure.

Ctrl-C (or SIGTERM) stops them all; if one of them dies, the others are stopped too.
The staff accounts are printed after set-up and again once every process has said it is
ready, so the passwords do not scroll away under the workers' banners.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memadmin import demo
from memadmin.accounts import create_role_accounts

# What each process prints once it serves (runserver, celery worker, celery beat).
READY_MARKERS = {
    "web": "Quit the server with",
    "worker": " ready.",
    "erasure worker": " ready.",
    "beat": "beat: Starting",
}
# Print the accounts again after this long even if a process never said it was ready.
READY_WAIT_SECONDS = 120


class Command(BaseCommand):
    help = (
        "Set up (migrate, demo data, accounts) and run web, the Celery workers (default and "
        "erasure queues) and beat together."
    )

    def add_arguments(self, parser):
        parser.add_argument("--addr", default=os.environ.get("MEMADMIN_ADDR", "127.0.0.1:8000"))
        parser.add_argument("--no-demo", action="store_true", help="Do not generate demo data.")
        parser.add_argument(
            "--concurrency", type=int, default=2, help="Processes of the default-queue worker."
        )
        parser.add_argument(
            "--setup-only",
            action="store_true",
            help="Migrate, seed and create accounts, then exit.",
        )

    def handle(self, *args, addr, no_demo, concurrency, setup_only, **options):
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1.")
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.")
        call_command("install_schedules", verbosity=0)
        if not no_demo:
            if demo.demo_present():
                self.stdout.write("Demo data already present.")
            else:
                stats = demo.seed()
                self.stdout.write(
                    f"Demo data: {stats.users} users, {stats.records} records, "
                    f"{stats.sessions} sessions."
                )
        accounts = create_role_accounts()
        self.write_accounts(accounts)
        if setup_only:
            return
        self.run_processes(addr, concurrency, accounts)

    def write_accounts(self, accounts: dict[str, str | None]) -> None:
        self.stdout.write(
            self.style.SUCCESS("Staff accounts (passwords are shown only by this start):")
        )
        for username, password in accounts.items():
            shown = password or "(exists; manage.py create_role_accounts --reset-passwords)"
            self.stdout.write(f"  {username:<11} {shown}")

    def announce(self, addr: str, accounts: dict, ready: dict[str, threading.Event]) -> None:
        """The end of start-up: where to go and how to sign in, after every banner."""
        waiting = [name for name, event in ready.items() if not event.is_set()]
        self.stdout.write("")
        if waiting:
            self.stdout.write(f"Still starting: {', '.join(waiting)}.")
        else:
            self.stdout.write(self.style.SUCCESS("memadmin is up: web, workers and beat."))
        self.stdout.write(self.style.SUCCESS(f"Open http://{addr}/ — Ctrl-C stops everything."))
        self.write_accounts(accounts)
        self.stdout.flush()

    @staticmethod
    def process_commands(addr: str, concurrency: int) -> dict[str, list[str]]:
        """The processes ``start`` runs, by name."""
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        celery = [sys.executable, "-m", "celery", "-A", "memadmin"]
        worker = [*celery, "worker", "-l", "info"]
        beat_schedule = str(Path(settings.VAR_DIR) / "celerybeat-schedule")
        return {
            "web": [sys.executable, manage, "runserver", "--noreload", addr],
            "worker": [
                *worker,
                *("--concurrency", str(concurrency), "-Q", settings.CELERY_TASK_DEFAULT_QUEUE),
                *("-n", "worker@%h"),
            ],
            "erasure worker": [
                *worker,
                *("--concurrency", "1", "-Q", settings.ERASURE_QUEUE, "-n", "erasure@%h"),
            ],
            "beat": [*celery, "beat", "-l", "info", "-s", beat_schedule],
        }

    def _forward(self, name: str, proc: subprocess.Popen, ready: threading.Event, lock) -> None:
        """Copy the process's output to ours, line by line; note when it says it is ready."""
        for line in proc.stdout:
            with lock:
                self.stdout.write(line, ending="")
                self.stdout.flush()
            if READY_MARKERS[name] in line:
                ready.set()

    def run_processes(self, addr: str, concurrency: int, accounts=None) -> None:
        commands = self.process_commands(addr, concurrency)
        self.stdout.write(self.style.SUCCESS(f"Open http://{addr}/ — Ctrl-C stops everything."))
        # Unbuffered children, so each line (and each "ready") arrives when it is written.
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        procs = {
            name: subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for name, cmd in commands.items()
        }
        lock = threading.Lock()
        ready = {name: threading.Event() for name in procs}
        for name, proc in procs.items():
            threading.Thread(
                target=self._forward, args=(name, proc, ready[name], lock), daemon=True
            ).start()
        announce_by = time.monotonic() + READY_WAIT_SECONDS
        announced = False
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        exit_code = 0
        try:
            while not stopping:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with {proc.returncode}; stopping.")
                        exit_code = proc.returncode or 1
                        stopping = True
                        break
                else:
                    if not announced and (
                        all(e.is_set() for e in ready.values()) or time.monotonic() > announce_by
                    ):
                        announced = True
                        with lock:
                            self.announce(addr, accounts or {}, ready)
                    time.sleep(0.5)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 15
            for proc in procs.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
        if exit_code:
            raise SystemExit(exit_code)
