from django.core.management.base import BaseCommand, CommandError

from records import embeddings
from records.selectors.apps import check_known_app
from records.tasks import backfill_embeddings


class Command(BaseCommand):
    help = (
        "Embed the records that have no vector yet with MEMADMIN_EMBEDDER (records written "
        "before it was set, or whose embedding failed). Safe to stop and run again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app", default="", help="Only this app's records.")
        parser.add_argument(
            "--batch-size", type=int, default=embeddings.BACKFILL_BATCH, help="Texts per call."
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="Delete the stored vectors first (after changing the embedding model).",
        )
        parser.add_argument(
            "--queue", action="store_true", help="Queue the Celery task instead of running here."
        )

    def handle(self, *args, app, batch_size, rebuild, queue, **options):
        try:
            if app:
                check_known_app(app)
            if embeddings.embedder() is None:
                raise CommandError("MEMADMIN_EMBEDDER is not set: nothing to embed with.")
            if batch_size < 1:
                raise CommandError("--batch-size must be at least 1.")
        except (ValueError, embeddings.EmbedderError) as exc:
            raise CommandError(str(exc)) from exc
        if rebuild:
            self.stdout.write(f"{embeddings.clear(app or None)} vector(s) deleted")
        if queue:
            backfill_embeddings.delay(app, 0)
            self.stdout.write("back-fill queued")
            return
        result = embeddings.BackfillResult()
        for step in embeddings.backfill_steps(app_name=app or None, batch_size=batch_size):
            result = step
            p = embeddings.progress(app or None)
            self.stdout.write(f"{p.embedded}/{p.records} records have a vector ({p.percent}%)")
        self.stdout.write(
            f"{result.embedded} record(s) embedded, {result.failed} unusable vector(s) skipped"
        )
        if result.error:
            raise CommandError(f"the back-fill stopped: {result.error}")
