"""Sessions get ``listed_at``: where listings place them (the latest last update they
have had), so a listing in progress cannot lose a session whose event was stamped
earlier than its last update.

Three migrations, each safe to run again after a failure, on a large table and during
a rolling upgrade (docs/operations.md#upgrading): this one adds the column without a
default (no rewrite) and, on PostgreSQL, a trigger that keeps ``listed_at`` at least
``last_update_time`` on every insert and update, so sessions that processes of the
version before create or append to (they know no such column) are placed too; 0020
places the existing sessions in batches; 0021 builds the indexes concurrently.
"""

from django.db import migrations, models

TABLE = "records_agentsession"

_PLACE = f"""
CREATE OR REPLACE FUNCTION memadmin_session_listed_at() RETURNS trigger AS $$
BEGIN
    -- GREATEST ignores NULL: a row written without a place is placed at its update.
    NEW.listed_at := GREATEST(NEW.listed_at, NEW.last_update_time);
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS memadmin_session_listed_at ON {TABLE};
CREATE TRIGGER memadmin_session_listed_at
    BEFORE INSERT OR UPDATE OF last_update_time, listed_at ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION memadmin_session_listed_at();
"""
_NO_PLACE = f"""
DROP TRIGGER IF EXISTS memadmin_session_listed_at ON {TABLE};
DROP FUNCTION IF EXISTS memadmin_session_listed_at();
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("records", "0018_search_index_pending_list"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="listed_at",
            field=models.FloatField(null=True),
        ),
        migrations.RunPython(_on_postgresql(_PLACE), _on_postgresql(_NO_PLACE), elidable=False),
    ]
