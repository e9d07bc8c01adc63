from django.db import migrations

from records import fulltext_schema


class Migration(migrations.Migration):
    """PostgreSQL: the search index's pending list at 256 kB (``fulltext_schema``)."""

    dependencies = [
        ("records", "0017_evicted_record_information"),
    ]

    operations = [fulltext_schema.index_options_operation()]
