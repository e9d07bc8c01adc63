"""Staff actions on runs: start a sweep or an enforcement pass, apply a dry-run's plan.

Each writes its audit entry in the transaction that creates the run, so a run started
from the dashboard without its entry cannot exist. The Celery nudge is sent only after
that transaction commits (``runs.create_run``); the workers do the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Q

from memadmin import audit

from . import plans, runs, tasks
from .models import ApplyStatus, EntryKind, PlanEntry, Run, RunKind

STARTABLE = (RunKind.SWEEP, RunKind.ENFORCE)


def start_run(
    actor, kind: str, *, dry_run: bool, app_name: str = "", as_of: datetime | None = None
) -> Run:
    """Queue a sweep or an enforcement pass (or its dry-run). ``as_of`` is for dry-runs."""
    if kind not in STARTABLE:
        raise ValueError(f"Only a sweep or an enforcement pass can be started, not {kind!r}.")
    if as_of is not None and not dry_run:
        raise ValueError("A real run happens now; 'as of' previews the future in a dry-run.")
    with transaction.atomic():
        run = runs.create_run(
            kind,
            as_of=as_of,
            app_name=app_name,
            dry_run=dry_run,
            by=actor,
            enqueue=tasks.execute_run.delay,
        )
        audit.record(
            actor,
            audit.RUN_START,
            app_name=app_name,
            target=run.pk,
            after={"kind": kind, "dry_run": dry_run, "as_of": run.as_of.isoformat()},
        )
    return run


@dataclass(frozen=True)
class PlanCounts:
    """What applying a plan would do: its entries not applied yet."""

    sessions: int
    records: int
    new_records: int  # records the plan's own session ingest would create, then evict

    @property
    def empty(self) -> bool:
        return not (self.sessions or self.records)


def pending_counts(plan: Run) -> PlanCounts:
    """One aggregate over the plan's entries."""
    pending = Q(apply_status=ApplyStatus.PENDING)
    counts = PlanEntry.objects.filter(run=plan).aggregate(
        sessions=Count("id", filter=pending & Q(kind=EntryKind.SESSION)),
        records=Count("id", filter=pending & Q(kind=EntryKind.RECORD)),
        new_records=Count("id", filter=pending & Q(kind=EntryKind.RECORD, record_id__isnull=True)),
    )
    return PlanCounts(**counts)


def apply_plan(actor, plan: Run) -> Run:
    """Queue the run that applies exactly this dry-run's plan, once.

    Raises ``plans.PlanError`` (nothing written) when the plan cannot be applied: not a
    finished dry-run, or applied already (also when two people click at once: the
    database allows one application per plan).
    """
    with transaction.atomic():
        plan = Run.objects.select_for_update().get(pk=plan.pk)
        plans.check_appliable(plan)
        counts = pending_counts(plan)
        run = runs.create_run(
            RunKind.APPLY,
            plan=plan,
            app_name=plan.app_name,
            by=actor,
            enqueue=tasks.execute_run.delay,
        )
        if run is None:
            raise plans.PlanError(f"The plan of dry-run #{plan.pk} was applied already.")
        audit.record(
            actor,
            audit.PLAN_APPLY,
            app_name=plan.app_name,
            target=plan.pk,
            before={"sessions_pending": counts.sessions, "records_pending": counts.records},
            after={
                "apply_run": run.pk,
                "sessions_to_retire": counts.sessions,
                "records_to_evict": counts.records,
            },
        )
    return run
