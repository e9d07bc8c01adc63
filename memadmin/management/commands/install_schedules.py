from django.core.management.base import BaseCommand

from memadmin.schedules import install


class Command(BaseCommand):
    help = "Install memadmin's periodic tasks into django-celery-beat (keeps edited ones)."

    def add_arguments(self, parser):
        parser.add_argument("--reset", action="store_true", help="Restore the default schedules.")

    def handle(self, *args, reset, **options):
        for name, action in install(reset=reset).items():
            self.stdout.write(f"  {action:<8} {name}")
