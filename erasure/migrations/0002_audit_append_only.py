"""The erasure audit log refuses UPDATE and DELETE in the database itself.

PostgreSQL: a trigger raises on any UPDATE or DELETE of an audit entry, whoever runs
it (ORM, raw SQL, psql). SQLite: the same for UPDATE only, because Django's flush (used
between tests) empties tables with DELETE there; the ORM refuses deletes on both.
TRUNCATE is not blocked: it is what PostgreSQL test runs use to reset tables.
"""

from django.db import migrations

TABLE = "erasure_erasureauditentry"

PG_FORWARD = [
    """CREATE OR REPLACE FUNCTION erasure_audit_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'erasure audit entries are append-only (% refused)', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END;
    $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER erasure_audit_append_only BEFORE UPDATE OR DELETE ON {TABLE}
        FOR EACH ROW EXECUTE FUNCTION erasure_audit_append_only()""",
]
PG_BACKWARD = [
    f"DROP TRIGGER IF EXISTS erasure_audit_append_only ON {TABLE}",
    "DROP FUNCTION IF EXISTS erasure_audit_append_only()",
]
SQLITE_FORWARD = [
    f"""CREATE TRIGGER erasure_audit_no_update BEFORE UPDATE ON {TABLE}
        BEGIN SELECT RAISE(ABORT, 'erasure audit entries are append-only (UPDATE refused)'); END""",
]
SQLITE_BACKWARD = ["DROP TRIGGER IF EXISTS erasure_audit_no_update"]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        statements = PG_FORWARD
    elif vendor == "sqlite":
        statements = SQLITE_FORWARD
    else:
        raise RuntimeError(f"memadmin supports PostgreSQL and SQLite, not {vendor}")
    for sql in statements:
        schema_editor.execute(sql, None)  # None: no placeholders (the trigger uses %)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in PG_BACKWARD if vendor == "postgresql" else SQLITE_BACKWARD:
        schema_editor.execute(sql, None)  # None: no placeholders (the trigger uses %)


class Migration(migrations.Migration):

    dependencies = [
        ("erasure", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(forward, backward, elidable=False),
    ]
