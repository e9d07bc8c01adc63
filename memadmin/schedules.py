"""Every periodic task of every app, declared in this one list and installed into
django-celery-beat's tables (``manage.py install_schedules``, run by ``start``).

Beat reads the schedules from the database (DatabaseScheduler), so ops can change one
in the Django admin without a deploy; installing again keeps such changes unless told
to reset them.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

SCHEDULES: dict[str, dict] = {
    "memadmin: retire idle sessions": {
        "task": "sweeper.tasks.scheduled_sweep",
        "crontab": {"minute": "15", "hour": "2"},  # nightly
    },
    "memadmin: enforce caps": {
        "task": "sweeper.tasks.scheduled_enforce",
        "crontab": {"minute": "5"},  # hourly
    },
    "memadmin: flush touch buffer": {
        "task": "sweeper.tasks.flush_touches",
        "every_seconds": 60,
    },
    "memadmin: metrics roll-up": {
        "task": "sweeper.tasks.rollup_metrics",
        "crontab": {"minute": "45", "hour": "0"},  # daily, after midnight UTC
    },
    "memadmin: prune access history": {
        "task": "backtest.tasks.prune_access_history",
        "crontab": {"minute": "55", "hour": "0"},  # daily
    },
    # Embeds records left without a vector (written before MEMADMIN_EMBEDDER was set, or
    # whose embedding failed at ingest); does nothing when no embedder is set.
    "memadmin: back-fill embeddings": {
        "task": "records.tasks.backfill_embeddings",
        "crontab": {"minute": "35"},  # hourly
    },
    "memadmin: reconcile stalled runs": {
        "task": "sweeper.tasks.reconcile_runs",
        "every_seconds": 120,
    },
    # Named as erasure's migration 0003 installed it, so databases that have the row keep it.
    "erasure: re-queue stalled or lost jobs": {
        "task": "erasure.reconcile_erasures",
        "every_seconds": 60,
    },
}


@transaction.atomic
def install(reset: bool = False) -> dict[str, str]:
    """Create missing schedules (or, with reset, restore every default). name -> action."""
    out = {}
    for name, spec in SCHEDULES.items():
        existing = PeriodicTask.objects.filter(name=name).first()
        if existing is not None and not reset:
            out[name] = "kept"
            continue
        fields = {"task": spec["task"], "enabled": True, "crontab": None, "interval": None}
        if "crontab" in spec:
            fields["crontab"], _ = CrontabSchedule.objects.get_or_create(
                timezone="UTC",
                day_of_week="*",
                day_of_month="*",
                month_of_year="*",
                **{"minute": "*", "hour": "*", **spec["crontab"]},
            )
        else:
            fields["interval"], _ = IntervalSchedule.objects.get_or_create(
                every=spec["every_seconds"], period=IntervalSchedule.SECONDS
            )
        PeriodicTask.objects.update_or_create(name=name, defaults=fields)
        out[name] = "reset" if existing else "created"
    return out


def last_fired() -> dict[str, datetime | None]:
    """Each enabled schedule's name -> when beat last fired it (None: not yet).

    Beat's DatabaseScheduler writes ``last_run_at`` back every few minutes, so a value
    can lag the real firing by that much.
    """
    return dict(PeriodicTask.objects.filter(enabled=True).values_list("name", "last_run_at"))
