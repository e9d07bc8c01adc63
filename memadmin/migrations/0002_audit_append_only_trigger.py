"""On PostgreSQL, refuse UPDATE and DELETE of audit entries in the database itself.

The model refuses them too, but only a trigger stops raw SQL, a shell or another client.
The one UPDATE allowed is Django's SET NULL of ``actor_id`` when a staff account is
deleted (every other column unchanged): the copied ``actor_username`` keeps the who.
TRUNCATE is left alone: it is an owner's operation, and Django's test flush uses it.
SQLite has no such trigger; there the model is the guard.
"""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION memadmin_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL AND OLD.actor_id IS NOT NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING
        MESSAGE = 'memadmin_auditentry is append-only: ' || TG_OP || ' refused',
        ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER memadmin_audit_append_only
    BEFORE UPDATE OR DELETE ON memadmin_auditentry
    FOR EACH ROW EXECUTE FUNCTION memadmin_audit_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS memadmin_audit_append_only ON memadmin_auditentry;
DROP FUNCTION IF EXISTS memadmin_audit_append_only();
"""


def on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)  # no placeholders

    return run


class Migration(migrations.Migration):
    dependencies = [("memadmin", "0001_audit_entry")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
