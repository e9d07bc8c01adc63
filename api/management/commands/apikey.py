"""manage.py apikey create --app A --name N | revoke PREFIX | list [--app A]"""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api import keys


class Command(BaseCommand):
    help = "Create, revoke and list API keys (each key can use one app only)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a key; its token is printed once.")
        create.add_argument("--app", required=True, help="The app the key may use.")
        create.add_argument("--name", required=True, help="What the key is for.")
        revoke = sub.add_parser("revoke", help="Revoke a key by its prefix (or id).")
        revoke.add_argument("key", help="The key's prefix, as 'list' shows it, or its id.")
        listing = sub.add_parser("list", help="List keys (never their tokens).")
        listing.add_argument("--app", help="Only this app's keys.")

    def handle(self, *args, action, **options):
        now = timezone.now()
        if action == "create":
            try:
                new = keys.create_key(options["app"], options["name"], now)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(
                f"Created key {new.key.prefix} for app {new.key.app_name!r} ({new.key.name}).\n"
                "Copy the key now; it is not shown again:\n"
            )
            self.stdout.write(new.token)
        elif action == "revoke":
            try:
                key = keys.revoke_key(options["key"], now)
            except keys.UnknownApiKey as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"Revoked {key.prefix} ({key.app_name}: {key.name}).")
        else:
            rows = keys.list_keys(options.get("app"))
            if not rows:
                self.stdout.write("No API keys.")
            for key in rows:
                status = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
                used = f"{key.last_used_at:%Y-%m-%d %H:%M}" if key.last_used_at else "never"
                self.stdout.write(
                    f"{key.prefix}  {key.app_name:<24} {key.name:<30} {status:<18} last used {used}"
                )
