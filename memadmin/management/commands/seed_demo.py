from django.core.management.base import BaseCommand, CommandError

from memadmin import demo


class Command(BaseCommand):
    help = "Generate demo apps, users, memory records and sessions (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--reset", action="store_true", help="Delete demo data and regenerate.")
        parser.add_argument("--seed", type=int, default=42, help="Random seed (default 42).")
        parser.add_argument("--users-per-app", type=int, default=14)
        parser.add_argument(
            "--history-days",
            type=int,
            default=14,
            help="Days of past traffic, enforcement and metric roll-ups (default 14; 0: none).",
        )

    def handle(self, *args, reset, seed, users_per_app, history_days, **options):
        if users_per_app < 0 or users_per_app > 10_000:
            raise CommandError("--users-per-app must be between 0 and 10000.")
        if history_days < 0 or history_days > 90:
            raise CommandError("--history-days must be between 0 and 90.")
        if demo.demo_present():
            if not reset:
                self.stdout.write("Demo data already present (use --reset to regenerate).")
                return
            demo.clear_demo()
        stats = demo.seed(seed=seed, users_per_app=users_per_app, history_days=history_days)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data: {stats.apps} apps, {stats.users} users, {stats.records} records, "
                f"{stats.sessions} sessions, {stats.events} events, "
                f"{stats.history_days} days of history."
            )
        )
