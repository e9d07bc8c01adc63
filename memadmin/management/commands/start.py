"""The main job: migrate, seed demo data, create role accounts, run web, the workers
and beat: one worker for sweeps, enforcement and re-scoring, one for erasure alone (its
own queue), so a stuck sweep cannot delay an erasure.

Ctrl-C (or SIGTERM) stops them all; if one of them dies, the others are stopped too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memadmin import demo
from memadmin.accounts import create_role_accounts


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
        self.stdout.write(self.style.SUCCESS("Staff accounts (passwords are shown only once):"))
        for username, password in accounts.items():
            shown = password or "(exists; manage.py create_role_accounts --reset-passwords)"
            self.stdout.write(f"  {username:<11} {shown}")
        if setup_only:
            return
        self.run_processes(addr, concurrency)

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

    def run_processes(self, addr: str, concurrency: int) -> None:
        commands = self.process_commands(addr, concurrency)
        self.stdout.write(self.style.SUCCESS(f"Open http://{addr}/ — Ctrl-C stops everything."))
        procs = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}
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
