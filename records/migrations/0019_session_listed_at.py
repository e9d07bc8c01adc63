"""Sessions get ``listed_at``: where listings place them (the latest last update they
have had), so a listing in progress cannot lose a session whose event was stamped
earlier than its last update. Existing sessions are placed at their last update."""

from django.db import migrations, models


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
        migrations.RunSQL(
            "UPDATE records_agentsession SET listed_at = last_update_time",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="agentsession",
            name="listed_at",
            field=models.FloatField(),
        ),
        migrations.RemoveIndex(model_name="agentsession", name="session_user_listing"),
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
    ]
