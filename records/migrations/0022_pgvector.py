"""Where the ``vector`` extension exists, each stored vector also gets a ``pgvector``
column, so PostgreSQL can rank a user's vectors (``records.pgvector``). Elsewhere
(SQLite, or PostgreSQL without the extension) nothing changes; ``manage.py pgvector
--enable`` does the same later, once the extension is installed."""

from django.db import migrations


def forwards(apps, schema_editor):
    from records import pgvector

    pgvector.enable(schema_editor.connection)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE records_recordembedding DROP COLUMN IF EXISTS pgvector")
        from records import pgvector

        pgvector.forget()


class Migration(migrations.Migration):
    dependencies = [("records", "0021_session_listed_indexes")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
