from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from records import server_functions


class Command(BaseCommand):
    help = (
        "List ingest's server-side functions (PostgreSQL) that this version no longer "
        "calls, made by earlier versions; --drop drops them. Drop only once every "
        "process runs this version: an older one calling a dropped function fails its ingest."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--drop", action="store_true", help="Drop them (default: only list them)."
        )

    def handle(self, *args, drop, **options):
        if connection.vendor != "postgresql":
            raise CommandError("server-side functions exist on PostgreSQL only")
        listed = server_functions.drop_unused() if drop else server_functions.unused()
        for signature in listed:
            self.stdout.write(signature)
        verb = "dropped" if drop else "not called by this version (--drop drops them)"
        self.stdout.write(f"{len(listed)} function(s) {verb}")
