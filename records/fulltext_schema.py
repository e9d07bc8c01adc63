"""Full-text search structures, which differ by database vendor.

PostgreSQL: a stored generated tsvector column and a GIN index over (app, user,
vector) via btree_gin, so one index scan finds one user's matching records. Where the
btree_gin extension cannot be created, a plain GIN index on the vector is used.

SQLite: an external-content FTS5 table kept in step with the records by triggers.
"""

from django.db import migrations

TABLE = "records_memoryrecord"
FTS = f"{TABLE}_fts"

PG_FORWARD = [
    f"""ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED""",
]
PG_BACKWARD = [
    "DROP INDEX IF EXISTS record_search",
    f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
]

SQLITE_FORWARD = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        content, content='{TABLE}', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO {FTS}(rowid, content) VALUES (new.id, new.content); END""",
    f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.id, old.content); END""",
    f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF content ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO {FTS}(rowid, content) VALUES (new.id, new.content); END""",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {FTS}_ai",
    f"DROP TRIGGER IF EXISTS {FTS}_ad",
    f"DROP TRIGGER IF EXISTS {FTS}_au",
    f"DROP TABLE IF EXISTS {FTS}",
]


def _run(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql)


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(schema_editor, PG_FORWARD)
        try:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute("SAVEPOINT memadmin_btree_gin")
                cursor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
                cursor.execute("RELEASE SAVEPOINT memadmin_btree_gin")
            columns = "app_name, user_id, search_vector"
            index = f"CREATE INDEX record_search ON {TABLE} USING gin ({columns})"
        except Exception:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute("ROLLBACK TO SAVEPOINT memadmin_btree_gin")
            index = f"CREATE INDEX record_search ON {TABLE} USING gin (search_vector)"
        schema_editor.execute(index)
    elif vendor == "sqlite":
        _run(schema_editor, SQLITE_FORWARD)
    else:
        raise RuntimeError(f"memadmin supports PostgreSQL and SQLite, not {vendor}")


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    _run(schema_editor, PG_BACKWARD if vendor == "postgresql" else SQLITE_BACKWARD)


def operation():
    return migrations.RunPython(forward, backward, elidable=False)
