"""manage.py policy: list the apps memadmin knows, or create a new app's first policy."""

from __future__ import annotations

import getpass
from types import SimpleNamespace

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from records import staff
from records.models import Policy
from records.selectors.apps import known_apps


class Command(BaseCommand):
    help = (
        "List the apps memadmin knows (with a policy or data), or create a new app's "
        "first policy with the defaults (audited). Change values on the Policies page."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="every known app and its policy version")
        create = sub.add_parser("create", help="create the first policy of a new app")
        create.add_argument("--app", required=True, help="the app name, exactly as agents use it")
        create.add_argument("--reason", default="", help="kept in the audit log")

    def handle(self, *args, action, **options):
        if action == "list":
            self._list()
        else:
            self._create(options["app"], options["reason"])

    def _list(self):
        versions = dict(Policy.objects.values_list("app_name", "version"))
        apps = known_apps()
        if not apps:
            self.stdout.write("No app yet: agents create theirs by writing, or use 'create'.")
        for app in apps:
            version = versions.get(app)
            state = f"policy v{version}" if version else "no policy yet (the defaults apply)"
            self.stdout.write(f"{app}\t{state}")

    def _create(self, app, reason):
        # Not a staff account: the audit entry names who ran the command, from where.
        actor = SimpleNamespace(
            username=f"{getpass.getuser()} via manage.py policy", is_authenticated=False
        )
        try:
            policy = staff.create_policy(actor, app, reason=reason)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(
            f"Created the policy of {policy.app_name!r} (version {policy.version}, the "
            "defaults). Change its values on the Policies page."
        )
