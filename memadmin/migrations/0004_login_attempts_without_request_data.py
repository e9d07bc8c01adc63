"""Failed login attempts stored before ``memadmin.login_attempts`` keep their request's
form and query string (an erasure's subject, ticket and reason; a login's ``next``):
emptied here, as every later attempt is kept."""

from django.db import migrations


def forget_request_data(apps, schema_editor):
    attempts = apps.get_model("axes", "AccessAttempt")
    attempts.objects.exclude(get_data="", post_data="").update(get_data="", post_data="")


class Migration(migrations.Migration):
    dependencies = [
        ("memadmin", "0003_audit_allows_pseudonymising"),
        ("axes", "0010_accessattemptexpiration"),
    ]

    operations = [migrations.RunPython(forget_request_data, migrations.RunPython.noop)]
