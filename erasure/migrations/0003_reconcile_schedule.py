"""Celery beat runs the erasure reconciler every minute (django_celery_beat's scheduler)."""

from django.db import migrations

TASK = "erasure.reconcile_erasures"
NAME = "erasure: re-queue stalled or lost jobs"


def forward(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every_minute, _ = IntervalSchedule.objects.get_or_create(every=60, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=NAME, defaults={"task": TASK, "interval": every_minute, "enabled": True}
    )


def backward(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("erasure", "0002_audit_append_only"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
