"""Scenario 6, the dashboard: server time and query count of the heaviest pages.

Requests go through Django's test client (URL routing, every middleware, the login
check, the view, template rendering), logged in as a staff user holding all three
roles; the time is the whole request in this process. Data grows in two stages in one
app: first ``stage1`` (users, records), then up to ``stage2``; the users list and the
overview are measured at both, so the table shows how their cost grows, and the query
count of every page must be the same at both stages (and for a user of 500 or 5,000
records). Two users hold exactly ``user_pages`` records (and 3 expired ones each); the
app's cap is the larger of the two, as a store holding such a user would have it.
"""

from __future__ import annotations

import random
import warnings

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memadmin.accounts import ensure_role_groups
from memadmin.stats import percentile
from records.policies import update_policy

from ..harness import Row, median
from ..load import UserSpec, load_records, reset_data, vacuum_analyze

APP = "bench-dash"
NAME = "dashboard"


def _specs(first: int, last: int, records: int, seed: int) -> list[UserSpec]:
    """Users ``first``..``last - 1`` sharing ``records``, spread 0.2–1.8× the mean."""
    rng = random.Random(seed)
    n = last - first
    weights = [rng.uniform(0.2, 1.8) for _ in range(n)]
    scale = records / sum(weights)
    counts = [max(1, round(w * scale)) for w in weights]
    counts[-1] += records - sum(counts)
    return [UserSpec(f"dash-{first + i:06d}", max(1, c)) for i, c in enumerate(counts)]


def _measure(client: Client, url: str, repeat: int) -> tuple[list[float], int, int]:
    import time

    response = client.get(url)  # warm-up, and the status
    with CaptureQueriesContext(connection) as ctx:
        client.get(url)
    queries = len(ctx.captured_queries)  # now: the next request clears the log
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    return times, queries, response.status_code


def run(report, size: dict, env: dict) -> None:
    warnings.filterwarnings("ignore", message="No directory at")  # static files: not used
    reset_data()
    now = timezone.now()
    pages = size["user_pages"]
    # A user holds 5,000 records only where the cap allows it: the app's cap is the
    # largest user page, so that user sits at the cap (plus a few expired records).
    update_policy(APP, {"max_records": max(pages), "max_tokens": 1_000_000})
    (users1, records1), (users2, records2) = size["stage1"], size["stage2"]
    # A few expired records each, so both pages show victims (the same queries run).
    special = [UserSpec(f"dash-page-{n}", n, expired=3) for n in pages]
    load_records(APP, special, now, seed=61)
    rest1 = records1 - sum(pages)
    load_records(APP, _specs(0, users1 - len(pages), rest1, 62), now, seed=61)
    vacuum_analyze()

    User = get_user_model()
    groups = ensure_role_groups()
    staff = User.objects.create_user("bench-staff", password=None)
    staff.groups.add(*groups.values())
    client = Client()
    client.force_login(staff)
    repeat = size["repeat"]
    counts: dict[str, list[int]] = {}

    with override_settings(ALLOWED_HOSTS=["testserver"], SECURE_SSL_REDIRECT=False):
        list_url, overview_url = reverse("records:users"), reverse("records:overview")
        measured = {}
        for stage, users, records in (("stage1", users1, records1), ("stage2", users2, records2)):
            if stage == "stage2":
                load_records(
                    APP,
                    _specs(users1 - len(pages), users2 - len(pages), records2 - records1, 63),
                    now,
                    seed=61,
                )
                vacuum_analyze()
            for page, url in (("users list", list_url), ("overview", overview_url)):
                times, queries, status = _measure(client, url, repeat)
                counts.setdefault(page, []).append(queries)
                measured[(page, stage)] = (times, queries, status, users, records)
        for n in pages:
            url = reverse("records:user", args=[APP, f"dash-page-{n}"])
            times, queries, status = _measure(client, url, repeat)
            counts.setdefault("user page", []).append(queries)
            measured[("user page", n)] = (times, queries, status, users2, records2)

    statuses = {key: value[2] for key, value in measured.items()}
    report.check(NAME, "every page answers 200", set(statuses.values()) == {200}, str(statuses))
    for page, seen in counts.items():
        report.check(NAME, f"{page}: query count constant across sizes {seen}", len(set(seen)) == 1)

    def row(page, key, size_label, target_ms):
        times, queries, *_ = measured[(page, key)]
        p95 = percentile(times, 0.95)
        report.rows.append(
            Row(
                f"dashboard: {page}",
                f"{size_label}; {queries} queries",
                median(times),
                p95,
                tail="p95",
                target=f"p95 ≤ {target_ms} ms" if target_ms else "",
                met=p95 <= target_ms if target_ms else None,
            )
        )

    for n in pages:
        row("user page", n, f"{n:,} records", 100)
    row("users list", "stage1", f"{users1:,} users, page 1", None)
    row("users list", "stage2", f"{users2:,} users, page 1", 150)
    row("overview", "stage1", f"{records1:,} records", None)
    row("overview", "stage2", f"{records2:,} records", 300)
