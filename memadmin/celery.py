"""The Celery app. Broker and options come from Django settings (CELERY_*)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")

app = Celery("memadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
