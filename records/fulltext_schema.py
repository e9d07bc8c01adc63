"""Full-text search structures, which differ by database vendor.

Both index ``search_tokens`` (``records.search_text.index_tokens`` of the content,
computed in Python at ingest), taking its space-separated tokens verbatim: neither
database stems, drops or splits anything, so both find the same candidates.

PostgreSQL: a stored generated tsvector column (``array_to_tsvector`` over the tokens,
no parser) and a GIN index over (app, user, vector) via btree_gin, so one index scan
finds one user's matching records. Where the btree_gin extension cannot be created, a
plain GIN index on the vector is used.

SQLite: an external-content FTS5 table over ``search_tokens`` kept in step with the
records by triggers; its ``ascii`` tokenizer splits on spaces only (non-ASCII
characters and the layer marks are token characters).

``operation()`` is the first version (migration 0002: the content, English
configuration / porter); ``tokens_operation()`` replaces it (migration 0007).
"""

from django.db import migrations

TABLE = "records_memoryrecord"
FTS = f"{TABLE}_fts"

# GIN's pending list: new entries wait in an unsorted list, and every search scans all
# of it, until a vacuum or the insert that fills it moves them into the index. At
# PostgreSQL's default 4 MB, searches between vacuums were 3 to 9 times slower (1.1 ms
# at 500 records with it empty, 4.2 to 9.6 ms with 160 to 500 pages waiting). At 256 kB
# the search bench's searches between vacuums took 2.1 ms against 3.8 ms (1.9 ms just
# after a vacuum), and two processes still ingest over 200 sessions a second; the
# smallest size, 64 kB, gained 0.1 ms more on search and cost 15-25% of that ingest
# throughput (docs/performance.md). Set when the index is made, and by migration 0018
# on an index made before.
PG_SEARCH_INDEX_OPTIONS = "gin_pending_list_limit = 256"

PG_FORWARD = [
    f"""ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED""",
]
PG_BACKWARD = [
    "DROP INDEX IF EXISTS record_search",
    f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
]


def _sqlite_fts(column: str, tokenize: str) -> list[str]:
    """An external-content FTS5 table over ``column`` and the triggers that keep it."""
    return [
        f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
            {column}, content='{TABLE}', content_rowid='id', tokenize={tokenize})""",
        f"""CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN
            INSERT INTO {FTS}(rowid, {column}) VALUES (new.id, new.{column}); END""",
        f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN
            INSERT INTO {FTS}({FTS}, rowid, {column})
            VALUES ('delete', old.id, old.{column}); END""",
        f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF {column} ON {TABLE} BEGIN
            INSERT INTO {FTS}({FTS}, rowid, {column}) VALUES ('delete', old.id, old.{column});
            INSERT INTO {FTS}(rowid, {column}) VALUES (new.id, new.{column}); END""",
        f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
    ]


SQLITE_FORWARD = _sqlite_fts("content", "'porter unicode61 remove_diacritics 2'")
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {FTS}_ai",
    f"DROP TRIGGER IF EXISTS {FTS}_ad",
    f"DROP TRIGGER IF EXISTS {FTS}_au",
    f"DROP TABLE IF EXISTS {FTS}",
]


PG_TOKENS_FORWARD = [
    *PG_BACKWARD,
    f"""ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS
        (array_to_tsvector(string_to_array(search_tokens, ' '))) STORED""",
]
PG_TOKENS_BACKWARD = [*PG_BACKWARD, *PG_FORWARD]

SQLITE_TOKENS_FORWARD = [
    *SQLITE_BACKWARD,
    # "ascii": split on spaces (and other ASCII punctuation, which tokens never hold);
    # non-ASCII characters and the layer marks are token characters.
    *_sqlite_fts("search_tokens", "\"ascii tokenchars '~^'\""),
]
SQLITE_TOKENS_BACKWARD = [*SQLITE_BACKWARD, *SQLITE_FORWARD]


def _run(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql)


def forward(apps, schema_editor, pg=PG_FORWARD, sqlite=SQLITE_FORWARD):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(schema_editor, pg)
        try:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute("SAVEPOINT memadmin_btree_gin")
                cursor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
                cursor.execute("RELEASE SAVEPOINT memadmin_btree_gin")
            columns = "app_name, user_id, search_vector"
        except Exception:
            with schema_editor.connection.cursor() as cursor:
                cursor.execute("ROLLBACK TO SAVEPOINT memadmin_btree_gin")
            columns = "search_vector"
        schema_editor.execute(
            f"CREATE INDEX record_search ON {TABLE} USING gin ({columns})"
            f" WITH ({PG_SEARCH_INDEX_OPTIONS})"
        )
    elif vendor == "sqlite":
        _run(schema_editor, sqlite)
    else:
        raise RuntimeError(f"memadmin supports PostgreSQL and SQLite, not {vendor}")


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    _run(schema_editor, PG_BACKWARD if vendor == "postgresql" else SQLITE_BACKWARD)


def operation():
    return migrations.RunPython(forward, backward, elidable=False)


def _index_options_forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER INDEX record_search SET ({PG_SEARCH_INDEX_OPTIONS})")


def _index_options_backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER INDEX record_search RESET (gin_pending_list_limit)")


def index_options_operation():
    """The search index's options (``PG_SEARCH_INDEX_OPTIONS``) on an existing index."""
    return migrations.RunPython(_index_options_forward, _index_options_backward, elidable=False)


def tokens_forward(apps, schema_editor):
    forward(apps, schema_editor, PG_TOKENS_FORWARD, SQLITE_TOKENS_FORWARD)


def tokens_backward(apps, schema_editor):
    forward(apps, schema_editor, PG_TOKENS_BACKWARD, SQLITE_TOKENS_BACKWARD)


def tokens_operation():
    """Index ``search_tokens`` instead of the content (run after the column is filled)."""
    return migrations.RunPython(tokens_forward, tokens_backward, elidable=False)
