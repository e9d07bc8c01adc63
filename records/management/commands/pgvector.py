from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from records import pgvector


class Command(BaseCommand):
    help = (
        "Say whether hybrid search ranks vectors in PostgreSQL with pgvector; with "
        "--enable, turn it on once the vector extension is installed (migrations do it "
        "where the extension existed already)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--enable",
            action="store_true",
            help="Create the extension and the column, and fill it for stored vectors.",
        )

    def handle(self, *args, enable, **options):
        if connection.vendor != "postgresql":
            raise CommandError(
                "pgvector is for PostgreSQL; on SQLite, vectors are ranked in Python."
            )
        if enable and not pgvector.enabled():
            if not pgvector.available():
                raise CommandError(
                    "this PostgreSQL has no vector extension: install pgvector "
                    "(https://github.com/pgvector/pgvector) first."
                )
            if not pgvector.enable():
                raise CommandError(
                    "the vector extension could not be created (see the log): it needs a "
                    "superuser; have one run CREATE EXTENSION vector in this database, "
                    "then run this again."
                )
        pgvector.forget()
        if pgvector.enabled():
            filled = pgvector.fill_missing()
            self.stdout.write(
                "pgvector: on (PostgreSQL ranks each user's vectors"
                + (f"; {filled} stored vector(s) filled)" if filled else ")")
            )
        else:
            hint = " (run with --enable)" if pgvector.available() else ""
            self.stdout.write(f"pgvector: off: vectors are ranked in Python{hint}")
