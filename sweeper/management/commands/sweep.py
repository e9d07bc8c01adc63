from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from records.selectors.apps import UnknownApp
from sweeper import plans, runs
from sweeper.forms import LONGEST_PREVIEW
from sweeper.models import PlanEntry, Run, RunKind
from sweeper.tasks import execute_run

from ._progress import queue_or_run


def parse_as_of(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:  # well-formed but no such date (2027-02-30T00:00)
        parsed = None
    if parsed is None:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
    if parsed is None:
        raise CommandError(
            f"--as-of must be an ISO date or datetime, e.g. 2027-01-01T02:00, not {value!r}"
        )
    parsed = parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, timezone.UTC)
    parsed = parsed.astimezone(timezone.UTC)  # its date in UTC, as today's
    # As the dashboard's dry-run form: a preview looks ahead, and not past what dates hold.
    today = timezone.now().date()
    if not today <= parsed.date() <= today + LONGEST_PREVIEW:
        raise CommandError(
            f"--as-of must be from today ({today}) to ten years ahead "
            f"({today + LONGEST_PREVIEW}): a dry-run previews what would go, not {value!r}"
        )
    return parsed


class Command(BaseCommand):
    help = "Retire idle sessions (ingest, delete artifacts, delete session), or preview it."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="Change nothing; store a report."
        )
        parser.add_argument("--as-of", help="Preview as of this time (with --dry-run).")
        parser.add_argument("--app", default="", help="Only this app.")
        parser.add_argument(
            "--apply",
            type=int,
            metavar="DRY_RUN_ID",
            help="Apply the plan stored by that dry-run, exactly.",
        )
        parser.add_argument(
            "--async",
            dest="background",
            action="store_true",
            help="Queue the run for the Celery workers instead of running here.",
        )

    def handle(self, *args, dry_run, as_of, app, apply, background, **options):
        as_of = parse_as_of(as_of)
        if as_of and not dry_run:
            raise CommandError("--as-of previews the future; use it with --dry-run.")
        if apply is not None:
            plan = Run.objects.filter(id=apply).first()
            if plan is None:
                raise CommandError(f"No run #{apply}.")
            try:
                plans.check_appliable(plan)
            except plans.PlanError as exc:
                raise CommandError(str(exc)) from exc
            run = runs.create_run(
                RunKind.APPLY, plan=plan, enqueue=execute_run.delay if background else None
            )
            if run is None:  # applied by someone else since the check: the database says once
                raise CommandError(f"The plan of dry-run #{plan.pk} was applied already.")
        else:
            try:
                run = runs.create_run(
                    RunKind.SWEEP,
                    as_of=as_of,
                    app_name=app,
                    dry_run=dry_run,
                    enqueue=execute_run.delay if background else None,
                )
            except UnknownApp as exc:
                raise CommandError(str(exc)) from exc
        queue_or_run(self.stdout, run, background=background, would=would_retire)


def would_retire(run) -> str:
    sessions = PlanEntry.objects.filter(run=run, kind="session").count()
    records = PlanEntry.objects.filter(run=run, kind="record").count()
    return (
        f"Would retire {sessions} session(s) and evict {records} record(s). "
        f"Apply with: manage.py sweep --apply {run.id}"
    )
