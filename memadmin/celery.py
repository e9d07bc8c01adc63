"""The Celery app. Broker and options come from Django settings (CELERY_*)."""

import os

from celery import Celery, signals

from . import log_format, tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")

app = Celery("memadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def use_django_logging(**kwargs):
    """Workers and beat log as the web does (LOG_FORMAT, request and task ids, filters)."""
    from django.conf import settings

    log_format.configure(settings.LOGGING)


@signals.worker_process_init.connect
def trace_worker_process(**kwargs):
    """Each pool process starts its own exporter: threads do not survive the fork."""
    tracing.configure_from_environment(worker=True)


@signals.celeryd_after_setup.connect
def no_banner_in_json_logs(instance=None, **kwargs):
    """The startup banner is plain text: with LOG_FORMAT=json every line must be JSON."""
    from django.conf import settings

    if settings.LOG_FORMAT == "json":
        instance.quiet = True
