"""Vectors go with their records, in the database (see ``RecordEmbedding``).

PostgreSQL: a foreign key ON DELETE CASCADE (and it refuses a vector for a record that
is gone). SQLite: an AFTER DELETE trigger on the records table; the insert in
``records.embeddings`` only writes vectors of records that exist.
"""

from django.db import migrations

RECORDS = "records_memoryrecord"
VECTORS = "records_recordembedding"

PG_FORWARD = f"""
ALTER TABLE {VECTORS} ADD CONSTRAINT recordembedding_record_cascade
    FOREIGN KEY (record_id) REFERENCES {RECORDS} (id) ON DELETE CASCADE
"""
PG_BACKWARD = f"ALTER TABLE {VECTORS} DROP CONSTRAINT IF EXISTS recordembedding_record_cascade"
_SQLITE_DELETE = f"DELETE FROM {VECTORS} WHERE record_id = OLD.id;"  # noqa: S608 - our tables
SQLITE_FORWARD = (
    f"CREATE TRIGGER memadmin_embedding_delete AFTER DELETE ON {RECORDS} BEGIN {_SQLITE_DELETE} END"
)
SQLITE_BACKWARD = "DROP TRIGGER IF EXISTS memadmin_embedding_delete"


def forward(apps, schema_editor):
    pg = schema_editor.connection.vendor == "postgresql"
    schema_editor.execute(PG_FORWARD if pg else SQLITE_FORWARD, params=None)


def backward(apps, schema_editor):
    pg = schema_editor.connection.vendor == "postgresql"
    schema_editor.execute(PG_BACKWARD if pg else SQLITE_BACKWARD, params=None)


def operation():
    return migrations.RunPython(forward, backward, elidable=False)
