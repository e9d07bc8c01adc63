"""Triggers that keep records_usermemorystats equal to per-user aggregates of the records.

PostgreSQL: statement-level insert and delete triggers with transition tables, so a bulk
insert or eviction of thousands of records updates each affected user's row once; a
row-level update trigger that fires only when a record's tokens, pin, app or user is set
and changed, so touch flushes and re-scores neither fire it nor lock the stats rows.
SQLite: row-level triggers doing the same one record at a time.
"""

from django.db import migrations

RECORDS = "records_memoryrecord"
STATS = "records_usermemorystats"

_PG_ADD = f"""
    INSERT INTO {STATS} AS s (app_name, user_id, records, tokens, pinned, last_written)
    SELECT app_name, user_id, count(*), coalesce(sum(tokens), 0),
           count(*) FILTER (WHERE pinned), max(created_at)
    FROM {{rows}} GROUP BY app_name, user_id
    ON CONFLICT (app_name, user_id) DO UPDATE SET
        records = s.records + EXCLUDED.records,
        tokens = s.tokens + EXCLUDED.tokens,
        pinned = s.pinned + EXCLUDED.pinned,
        last_written = greatest(s.last_written, EXCLUDED.last_written);
"""
_PG_SUBTRACT = f"""
    UPDATE {STATS} AS s
    SET records = s.records - d.n, tokens = s.tokens - d.t, pinned = s.pinned - d.p
    FROM (SELECT app_name, user_id, count(*) AS n, coalesce(sum(tokens), 0) AS t,
                 count(*) FILTER (WHERE pinned) AS p
          FROM {{rows}} GROUP BY app_name, user_id) AS d
    WHERE s.app_name = d.app_name AND s.user_id = d.user_id;
    DELETE FROM {STATS} AS s
    USING (SELECT DISTINCT app_name, user_id FROM {{rows}}) AS d
    WHERE s.app_name = d.app_name AND s.user_id = d.user_id AND s.records <= 0;
"""

# Row-level with WHEN, so an UPDATE that does not set a counted column (a touch flush, a
# re-score) never fires it, and one that sets it to the same value stops at the WHEN.
# (Transition tables, as for insert and delete, are not allowed with a column list.)
_PG_UPDATE_ROW = f"""
    UPDATE {STATS} SET records = records - 1, tokens = tokens - OLD.tokens,
                       pinned = pinned - OLD.pinned::int
    WHERE app_name = OLD.app_name AND user_id = OLD.user_id;
    DELETE FROM {STATS}
    WHERE app_name = OLD.app_name AND user_id = OLD.user_id AND records <= 0;
    INSERT INTO {STATS} AS s (app_name, user_id, records, tokens, pinned, last_written)
    VALUES (NEW.app_name, NEW.user_id, 1, NEW.tokens, NEW.pinned::int, NEW.created_at)
    ON CONFLICT (app_name, user_id) DO UPDATE SET
        records = s.records + 1,
        tokens = s.tokens + EXCLUDED.tokens,
        pinned = s.pinned + EXCLUDED.pinned,
        last_written = greatest(s.last_written, EXCLUDED.last_written);
"""
_COUNTED = "tokens, pinned, app_name, user_id"

PG_FORWARD = f"""
CREATE FUNCTION memadmin_stats_insert() RETURNS trigger AS $$
BEGIN
{_PG_ADD.format(rows="new_rows")}
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE FUNCTION memadmin_stats_delete() RETURNS trigger AS $$
BEGIN
{_PG_SUBTRACT.format(rows="old_rows")}
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE FUNCTION memadmin_stats_update() RETURNS trigger AS $$
BEGIN
{_PG_UPDATE_ROW}
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER memadmin_stats_insert AFTER INSERT ON {RECORDS}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memadmin_stats_insert();
CREATE TRIGGER memadmin_stats_delete AFTER DELETE ON {RECORDS}
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memadmin_stats_delete();
CREATE TRIGGER memadmin_stats_update AFTER UPDATE OF {_COUNTED} ON {RECORDS}
    FOR EACH ROW
    WHEN ((OLD.tokens, OLD.pinned, OLD.app_name, OLD.user_id)
          IS DISTINCT FROM (NEW.tokens, NEW.pinned, NEW.app_name, NEW.user_id))
    EXECUTE FUNCTION memadmin_stats_update();
"""
PG_BACKWARD = f"""
DROP TRIGGER IF EXISTS memadmin_stats_insert ON {RECORDS};
DROP TRIGGER IF EXISTS memadmin_stats_delete ON {RECORDS};
DROP TRIGGER IF EXISTS memadmin_stats_update ON {RECORDS};
DROP FUNCTION IF EXISTS memadmin_stats_insert();
DROP FUNCTION IF EXISTS memadmin_stats_delete();
DROP FUNCTION IF EXISTS memadmin_stats_update();
"""

_SQLITE_ADD = f"""
    INSERT INTO {STATS} (app_name, user_id, records, tokens, pinned, last_written)
    VALUES (NEW.app_name, NEW.user_id, 1, NEW.tokens, NEW.pinned, NEW.created_at)
    ON CONFLICT (app_name, user_id) DO UPDATE SET
        records = records + 1,
        tokens = tokens + excluded.tokens,
        pinned = pinned + excluded.pinned,
        last_written = max(coalesce(last_written, ''), excluded.last_written);
"""
_SQLITE_SUBTRACT = f"""
    UPDATE {STATS} SET records = records - 1, tokens = tokens - OLD.tokens,
                       pinned = pinned - OLD.pinned
    WHERE app_name = OLD.app_name AND user_id = OLD.user_id;
    DELETE FROM {STATS}
    WHERE app_name = OLD.app_name AND user_id = OLD.user_id AND records <= 0;
"""
SQLITE_FORWARD = [
    f"""CREATE TRIGGER memadmin_stats_insert AFTER INSERT ON {RECORDS}
        BEGIN {_SQLITE_ADD} END""",
    f"""CREATE TRIGGER memadmin_stats_delete AFTER DELETE ON {RECORDS}
        BEGIN {_SQLITE_SUBTRACT} END""",
    f"""CREATE TRIGGER memadmin_stats_update
        AFTER UPDATE OF {_COUNTED} ON {RECORDS}
        BEGIN {_SQLITE_SUBTRACT} {_SQLITE_ADD} END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memadmin_stats_insert",
    "DROP TRIGGER IF EXISTS memadmin_stats_delete",
    "DROP TRIGGER IF EXISTS memadmin_stats_update",
]

BACKFILL = f"""
INSERT INTO {STATS} (app_name, user_id, records, tokens, pinned, last_written)
SELECT app_name, user_id, count(*), coalesce(sum(tokens), 0),
       sum(CASE WHEN pinned THEN 1 ELSE 0 END), max(created_at)
FROM {RECORDS} GROUP BY app_name, user_id
"""


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)
    else:
        for sql in SQLITE_FORWARD:
            schema_editor.execute(sql)
    schema_editor.execute(BACKFILL)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)
    else:
        for sql in SQLITE_BACKWARD:
            schema_editor.execute(sql)
    schema_editor.execute(f"DELETE FROM {STATS}")


def operation():
    return migrations.RunPython(forward, backward, elidable=False)
