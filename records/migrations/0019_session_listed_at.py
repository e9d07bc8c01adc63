"""Sessions get ``listed_at``: where listings place them (the latest last update they
have had), so a listing in progress cannot lose a session whose event was stamped
earlier than its last update. Existing sessions are placed at their last update.

Safe on a large table and during a rolling upgrade (docs/operations.md#upgrading):
the column is added without a default (no rewrite), filled in batches of 10,000 rows
each committed on its own, and its indexes are built concurrently on PostgreSQL. A
PostgreSQL trigger places a session inserted without a place (by a process of the
version before, which knows no such column) at its last update, so old and new
processes can create sessions side by side; this version always sets it.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

TABLE = "records_agentsession"
BATCH = 10_000

_PLACE_ON_INSERT = f"""
CREATE OR REPLACE FUNCTION memadmin_session_listed_at() RETURNS trigger AS $$
BEGIN
    IF NEW.listed_at IS NULL THEN
        NEW.listed_at := NEW.last_update_time;
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS memadmin_session_listed_at ON {TABLE};
CREATE TRIGGER memadmin_session_listed_at BEFORE INSERT ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION memadmin_session_listed_at();
"""
_NO_PLACE_ON_INSERT = f"""
DROP TRIGGER IF EXISTS memadmin_session_listed_at ON {TABLE};
DROP FUNCTION IF EXISTS memadmin_session_listed_at();
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


def place_existing_sessions(apps, schema_editor):
    """listed_at = last_update_time where unset, by ranges of ids, each batch its own
    transaction (the migration is not atomic): no long lock on a large table."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT MIN(id), MAX(id) FROM {TABLE}")  # noqa: S608 - our table
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(
                f"UPDATE {TABLE} SET listed_at = last_update_time "  # noqa: S608 - our table
                "WHERE id >= %s AND id < %s AND listed_at IS NULL",
                [start, start + BATCH],
            )


class _OnPostgresqlConcurrently:
    """The concurrent index operation on PostgreSQL, the plain one elsewhere."""

    plain: type

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return self.plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return self.plain.database_backwards(self, app_label, schema_editor, from_state, to_state)


class AddIndexOnline(_OnPostgresqlConcurrently, AddIndexConcurrently):
    plain = migrations.AddIndex


class RemoveIndexOnline(_OnPostgresqlConcurrently, RemoveIndexConcurrently):
    plain = migrations.RemoveIndex


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("records", "0018_search_index_pending_list"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="listed_at",
            field=models.FloatField(null=True),
        ),
        migrations.RunPython(
            _on_postgresql(_PLACE_ON_INSERT), _on_postgresql(_NO_PLACE_ON_INSERT), elidable=False
        ),
        migrations.RunPython(place_existing_sessions, migrations.RunPython.noop),
        AddIndexOnline(
            model_name="agentsession",
            index=models.Index(
                fields=["app_name", "listed_at", "user_id", "session_id"],
                name="session_app_listed",
            ),
        ),
        AddIndexOnline(
            model_name="agentsession",
            index=models.Index(
                fields=["app_name", "user_id", "listed_at", "session_id"],
                name="session_user_listed",
            ),
        ),
        RemoveIndexOnline(model_name="agentsession", name="session_user_listing"),
    ]
