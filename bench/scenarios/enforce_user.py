"""Scenario 2, enforcement for one user: victim selection in SQL vs the article's approach.

Ours is ``records.victims.select_victims`` (what ``store.enforce`` runs under the user's
lock); the baseline is ``select_victims_python``: list every record of the user into
Python, score, sort. The shape is the one enforcement meets after an ingest: the user
has just gone over the record cap by one session's worth (20 records), holds a few
records past the TTL (0.2%), and a token cap that binds after the record cap, so all
three reasons occur. Both must choose identical victims, in the same order, with the
same reasons; that is checked on every size.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Count, Sum
from django.utils import timezone

from memadmin.stats import percentile
from records import policy as pure
from records.models import POLICY_RECORD_FIELDS, MemoryRecord
from records.policies import policy_for, update_policy
from records.victims import select_victims

from ..harness import Row, median, timed
from ..load import UserSpec, load_records, reset_data, vacuum_analyze

NAME = "enforce_user"


def select_victims_python(
    app_name: str, user_id: str, now: datetime, p: pure.PolicyParams
) -> list[pure.Victim]:
    """The article's approach: list every record into Python, score, sort (the baseline)."""
    records = [
        r.as_policy_record()
        for r in MemoryRecord.objects.filter(app_name=app_name, user_id=user_id)
        .order_by("id")
        .only(*POLICY_RECORD_FIELDS)
    ]
    return pure.HybridPolicy(p).victims(records, now)


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    for n in size["records"]:
        app = f"bench-enforce-{n}"
        user = f"enforce-{n}"
        expired = max(1, n // 500)
        load_records(app, [UserSpec(user, n, expired=expired)], now, seed=23)
        live = MemoryRecord.objects.filter(
            app_name=app, user_id=user, created_at__gte=now - timedelta(days=365)
        ).aggregate(n=Count("id"), t=Sum("tokens"))
        avg_tokens = live["t"] / live["n"]
        update_policy(
            app,
            {
                "max_records": live["n"] - 20,
                # binds after the record cap: about five more records go for tokens
                "max_tokens": int(live["t"] - 25 * avg_tokens),
            },
        )
    vacuum_analyze()
    for n in size["records"]:
        app, user = f"bench-enforce-{n}", f"enforce-{n}"
        params = policy_for(app).params()
        ours = select_victims(app, [user], now, params)
        theirs = select_victims_python(app, user, now, params)
        same = [(v.id, v.reason) for v in ours] == [(v.id, v.reason) for v in theirs]
        reasons = sorted({v.reason for v in ours})
        report.check(
            NAME,
            f"{n:,} records: identical victims ({len(ours)}: {', '.join(reasons)})",
            same and len(ours) >= 21,
        )
        repeat = size["repeat"]
        our_times = timed(lambda a=app, u=user, p=params: select_victims(a, [u], now, p), repeat)
        base_times = timed(
            lambda a=app, u=user, p=params: select_victims_python(a, u, now, p), repeat
        )
        ratio = median(base_times) / median(our_times)
        if n >= 100_000:
            target, met = "≥ 10×", ratio >= 10
        elif n == min(size["records"]):
            target, met = "≥ 1× (no slower)", ratio >= 1
        else:
            target, met = "", None
        report.rows.append(
            Row(
                "enforce one user",
                f"{n:,} records",
                median(our_times),
                percentile(our_times, 0.99),
                median(base_times),
                percentile(base_times, 0.99),
                baseline="list + score in Python (article)",
                target=target,
                met=met,
            )
        )
