"""Celery beat ran the erasure reconciler from a row this migration installed.

Superseded: every schedule is now declared in ``memadmin.schedules`` and installed by
``manage.py install_schedules`` (which ``start`` runs), under the name this migration
used ("erasure: re-queue stalled or lost jobs"), so a database it already filled keeps
its row. Kept as history; it installs nothing any more: schedules come one way.
"""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("erasure", "0002_audit_append_only"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop),
    ]
