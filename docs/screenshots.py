"""Take the README's screenshots: the overview, a user page and a dry-run's report, on
fresh demo data.

    .venv/bin/python docs/screenshots.py

Builds a throwaway SQLite database with memadmin.demo.seed, starts the development
server on it, drives headless Chromium (Debian's binary) through Playwright, and writes
docs/screenshots/overview.png, user.png and sweep.png. Not part of the tests.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1280, "height": 1100}  # the narrowest width the dashboard is made for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(env: dict, password: str) -> None:
    """Migrate a fresh database, seed the demo, and create one account with every role."""
    code = f"""
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from memadmin.accounts import ensure_role_groups
from memadmin import demo
call_command("migrate", verbosity=0)
demo.seed()
user = get_user_model().objects.create_user("staff", password={password!r})
user.groups.add(*ensure_role_groups().values())
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)


def wait_until_up(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("The development server exited; see its output above.")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):  # noqa: S310 - local
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("The development server did not answer within 60 s.")


def shoot(base: str, password: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = shutil.which("chromium")
    if not chromium:
        raise SystemExit("chromium is not on PATH (apt-get install chromium).")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(base + "/login/")
        page.fill("#id_username", "staff")
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Overview")
        charts = page.locator("[data-figure]")
        expect(charts.first).to_be_visible()
        for chart in charts.all():  # every chart drawn, whichever the overview shows
            expect(chart.locator("svg.main-svg").first).to_be_visible()
        page.screenshot(path=OUT / "overview.png", full_page=True)

        # The article's pharmacy customer: 498 records; a what-if cap of 494 previews
        # the four lowest-scoring notes that would go, never the pinned allergy.
        page.goto(base + "/users/pharmacy-support/cust-0042/")
        page.fill("#id_max_records", "494")
        expect(page.locator("#preview .verdict")).to_contain_text("4 records")
        page.screenshot(path=OUT / "user.png")

        # The demo's dry-run sweep of the pharmacy app: what would go, and why.
        page.goto(base + "/sweeps/")
        page.locator("#run-table tr", has_text="dry-run").get_by_role("link").first.click()
        expect(page.locator("#report-table .badge.record_cap").first).to_be_visible()
        page.screenshot(path=OUT / "sweep.png")
        browser.close()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    with tempfile.TemporaryDirectory(prefix="memadmin-screens-") as var:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "DEBUG", "SECRET_KEY"}
        }
        env.update(DJANGO_SETTINGS_MODULE="memadmin.settings", MEMADMIN_VAR_DIR=var)
        prepare(env, password)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_up(base, server)
            shoot(base, password)
        finally:
            server.terminate()
            server.wait(timeout=15)
    print(f"Wrote {OUT / 'overview.png'}, {OUT / 'user.png'} and {OUT / 'sweep.png'}")


if __name__ == "__main__":
    main()
