from django.core.management.base import BaseCommand, CommandError

from records import rescore
from records.ids import check_scope
from records.selectors.apps import check_known_app


class Command(BaseCommand):
    help = "Re-apply the current importance rules to existing records of an app (or one user)."

    def add_arguments(self, parser):
        parser.add_argument("--app", required=True)
        parser.add_argument("--user", help="Only this user id.")

    def handle(self, *args, app, user, **options):
        try:
            check_scope(app, user if user is not None else "-")
            check_known_app(app)
            changed = rescore.rescore(app, user)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{changed} record(s) re-scored in {app}" + (f" for {user}" if user else "")
        )
