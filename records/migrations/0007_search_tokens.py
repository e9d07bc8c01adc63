"""Search indexes the tokens of one Python tokenizer on both databases (issue 16).

Adds ``MemoryRecord.search_tokens``, fills it for existing records, then replaces the
full-text structures of migration 0002 by ones over the tokens.
"""

from django.db import migrations, models

from records import fulltext_schema as fulltext
from records.search_text import index_tokens

BATCH = 2000


def fill_search_tokens(apps, schema_editor):
    MemoryRecord = apps.get_model("records", "MemoryRecord")
    last = 0
    while True:
        batch = list(
            MemoryRecord.objects.filter(id__gt=last).order_by("id").only("id", "content", "author")[:BATCH]
        )
        if not batch:
            return
        for record in batch:
            record.search_tokens = index_tokens(record.content, record.author)
        MemoryRecord.objects.bulk_update(batch, ["search_tokens"], batch_size=BATCH)
        last = batch[-1].id


class Migration(migrations.Migration):
    dependencies = [
        ("records", "0006_rule_pattern_engine"),
    ]

    operations = [
        # Plain ALTER TABLE on both databases: Django's SQLite AddField rebuilds the
        # table, which would drop the triggers of migrations 0002 and 0005.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="memoryrecord",
                    name="search_tokens",
                    field=models.TextField(blank=True, default="", editable=False),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE records_memoryrecord"
                    " ADD COLUMN search_tokens text NOT NULL DEFAULT ''",
                    "ALTER TABLE records_memoryrecord DROP COLUMN search_tokens",
                ),
            ],
        ),
        migrations.RunPython(fill_search_tokens, migrations.RunPython.noop, elidable=True),
        fulltext.tokens_operation(),
    ]
