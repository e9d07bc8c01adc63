from django.core.management.base import BaseCommand
from django.utils import timezone

from sweeper.metrics import measure


class Command(BaseCommand):
    help = "The article's first step: records and tokens per user, growth, session events."

    def add_arguments(self, parser):
        parser.add_argument("--app", default=None)

    def handle(self, *args, app, **options):
        rows = measure(timezone.now(), app)
        if not rows:
            self.stdout.write("No records or sessions yet.")
            return
        for m in rows:
            r, t, e = m.records_per_user, m.tokens_per_user, m.session_events
            self.stdout.write(self.style.MIGRATE_HEADING(m.app_name))
            self.stdout.write(f"  users                 {r.count}")
            self.stdout.write(
                f"  records per user      p50 {r.p50:.0f}  p99 {r.p99:.0f}  "
                f"max {r.max:.0f}  (cap {m.max_records})"
            )
            self.stdout.write(
                f"  tokens per user       p50 {t.p50:.0f}  p99 {t.p99:.0f}  "
                f"max {t.max:.0f}  (cap {m.max_tokens})"
            )
            self.stdout.write(f"  records added, 7 days {m.added_last_7_days}")
            self.stdout.write(
                f"  session events        p50 {e.p50:.0f}  p99 {e.p99:.0f}  "
                f"max {e.max:.0f}  ({e.count} sessions)"
            )
