"""The configuration generation: one row that triggers change whenever a policy or an
importance rule changes, so processes can cache both (``records.config_cache``)."""

from django.db import migrations, models

_TABLES = ("records_policy", "records_importancerule")

_PG_FORWARD = [
    """
    CREATE OR REPLACE FUNCTION records_bump_config_generation() RETURNS trigger AS $$
    BEGIN
        INSERT INTO records_configgeneration (id, value)
        VALUES (1, (random() * 9.0e18)::bigint)
        ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    *(
        f"""CREATE TRIGGER {table}_config_generation
        AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
        FOR EACH STATEMENT EXECUTE FUNCTION records_bump_config_generation()"""
        for table in _TABLES
    ),
]
_PG_BACKWARD = [
    *(f"DROP TRIGGER IF EXISTS {table}_config_generation ON {table}" for table in _TABLES),
    "DROP FUNCTION IF EXISTS records_bump_config_generation()",
]
_SQLITE_FORWARD = [
    f"""CREATE TRIGGER {table}_config_generation_{event.lower()}
    AFTER {event} ON {table}
    BEGIN
        INSERT OR REPLACE INTO records_configgeneration (id, value) VALUES (1, random());
    END"""
    for table in _TABLES
    for event in ("INSERT", "UPDATE", "DELETE")
]
_SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {table}_config_generation_{event.lower()}"
    for table in _TABLES
    for event in ("INSERT", "UPDATE", "DELETE")
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in {"postgresql": _PG_FORWARD, "sqlite": _SQLITE_FORWARD}.get(vendor, []):
        schema_editor.execute(sql)
    apps.get_model("records", "ConfigGeneration").objects.using(
        schema_editor.connection.alias
    ).update_or_create(id=1, defaults={"value": 1})


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for sql in {"postgresql": _PG_BACKWARD, "sqlite": _SQLITE_BACKWARD}.get(vendor, []):
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("records", "0014_merge_backtest_sessions"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConfigGeneration",
            fields=[
                (
                    "id",
                    models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False),
                ),
                ("value", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(forward, backward),
    ]
