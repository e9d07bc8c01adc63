from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from records import store
from records.selectors.apps import UnknownApp, is_known_app
from sweeper import runs
from sweeper.models import PlanEntry, RunKind
from sweeper.tasks import execute_run

from ._progress import queue_or_run
from .sweep import parse_as_of


class Command(BaseCommand):
    help = "Enforce TTL and caps: one user, one app, or every app (a full pass)."

    def add_arguments(self, parser):
        parser.add_argument("--app", default="")
        parser.add_argument("--user", help="Only this user (needs --app).")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--as-of", help="Preview as of this time (with --dry-run).")
        parser.add_argument("--async", dest="background", action="store_true")

    def handle(self, *args, app, user, dry_run, as_of, background, **options):
        as_of = parse_as_of(as_of)
        if as_of and not dry_run:
            raise CommandError("--as-of previews the future; use it with --dry-run.")
        if user and not app:
            raise CommandError("--user needs --app.")
        if user and dry_run:
            # A dry-run plans an app (or every app); applying it would evict other users.
            raise CommandError(
                "--dry-run plans a whole app, not one user: drop --user to preview the app "
                "(its plan can be applied), or see the user's dry-run on their dashboard page."
            )
        if app and not is_known_app(app):
            raise CommandError(str(UnknownApp(app)))
        if user and not dry_run:
            try:
                victims = store.enforce(app, user, timezone.now())
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            for reason in sorted({v.reason for v in victims}):
                n = sum(v.reason == reason for v in victims)
                self.stdout.write(f"  {reason}: {n}")
            self.stdout.write(f"Evicted {len(victims)} record(s) of {app}/{user}.")
            return
        run = runs.create_run(
            RunKind.ENFORCE,
            as_of=as_of,
            app_name=app,
            dry_run=dry_run,
            enqueue=execute_run.delay if background else None,
        )
        queue_or_run(self.stdout, run, background=background, would=would_evict)


def would_evict(run) -> str:
    n = PlanEntry.objects.filter(run=run).count()
    return f"Would evict {n} record(s). Apply with: manage.py sweep --apply {run.id}"
