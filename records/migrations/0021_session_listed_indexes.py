"""The listing's indexes on ``listed_at`` (for the app and for one user) replace the
per-user one on ``last_update_time``. Built concurrently on PostgreSQL (this migration
is not atomic), so sessions stay writable; an index a failed concurrent build left
behind (invalid) is dropped first, so running the migration again after a failure
works."""

from django.db import migrations, models

TABLE = "records_agentsession"
NEW = (
    ("session_app_listed", "app_name, listed_at, user_id, session_id"),
    ("session_user_listed", "app_name, user_id, listed_at, session_id"),
)
OLD = ("session_user_listing", "app_name, user_id, last_update_time, session_id")


def _create(schema_editor, name: str, columns: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        schema_editor.execute(f"CREATE INDEX CONCURRENTLY {name} ON {TABLE} ({columns})")
    else:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {TABLE} ({columns})")


def _drop(schema_editor, name: str) -> None:
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")


def forwards(apps, schema_editor):
    for name, columns in NEW:
        _create(schema_editor, name, columns)
    _drop(schema_editor, OLD[0])


def backwards(apps, schema_editor):
    _create(schema_editor, *OLD)
    for name, _ in NEW:
        _drop(schema_editor, name)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("records", "0020_session_listed_at_backfill"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards)],
            state_operations=[
                migrations.AddIndex(
                    model_name="agentsession",
                    index=models.Index(
                        fields=["app_name", "listed_at", "user_id", "session_id"],
                        name="session_app_listed",
                    ),
                ),
                migrations.AddIndex(
                    model_name="agentsession",
                    index=models.Index(
                        fields=["app_name", "user_id", "listed_at", "session_id"],
                        name="session_user_listed",
                    ),
                ),
                migrations.RemoveIndex(model_name="agentsession", name="session_user_listing"),
            ],
        ),
    ]
