"""Existing sessions placed at their last update (``AgentSession.listed_at``), by ranges
of ids, each batch committed on its own (this migration is not atomic): no long lock
on a large table, and a run stopped half way is taken up again where rows are unset."""

from django.db import migrations

TABLE = "records_agentsession"
BATCH = 10_000


def place_existing_sessions(apps, schema_editor):
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


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("records", "0019_session_listed_at"),
    ]

    operations = [
        migrations.RunPython(place_existing_sessions, migrations.RunPython.noop),
    ]
