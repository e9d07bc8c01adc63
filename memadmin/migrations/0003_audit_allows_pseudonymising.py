"""Let erasure stop audit entries naming the subject, and nothing else.

The append-only trigger now also allows an UPDATE that changes only ``user_id``, to a
value starting with ``erased:`` (the subject's keyed hash): the entry and everything
else in it stay, but it no longer holds the erased user's id.
"""

from django.db import migrations


CREATE = """
CREATE OR REPLACE FUNCTION memadmin_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL AND OLD.actor_id IS NOT NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.user_id LIKE 'erased:%' AND OLD.user_id NOT LIKE 'erased:%'
       AND (to_jsonb(NEW) - 'user_id') = (to_jsonb(OLD) - 'user_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING
        MESSAGE = 'memadmin_auditentry is append-only: ' || TG_OP || ' refused',
        ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

PREVIOUS = """
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
"""


def on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memadmin", "0002_audit_append_only_trigger")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(PREVIOUS))]
