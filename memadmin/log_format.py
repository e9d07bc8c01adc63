"""``LOG_FORMAT=json``: one JSON object per line, with a fixed set of keys.

The keys are a whitelist: extras that libraries attach to records (Django's request
object, Celery's task data) never reach the line, so neither do the paths, arguments or
content inside them. The message itself has already passed memadmin's privacy filters.
"""

from __future__ import annotations

import logging
import logging.config

from pythonjsonlogger.json import JsonFormatter as LibraryJsonFormatter

KEYS = frozenset(
    {"timestamp", "level", "logger", "message", "request_id", "task_id", "status_code"}
    | {"exc_info", "stack_info"}
)


class JsonFormatter(LibraryJsonFormatter):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("fmt", "%(levelname)s %(name)s %(message)s")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", True)
        super().__init__(*args, **kwargs)

    def add_fields(self, log_data, record, message_dict) -> None:
        super().add_fields(log_data, record, message_dict)
        for key in [key for key in log_data if key not in KEYS]:
            del log_data[key]


def configure(logging_settings: dict) -> None:
    """Django's LOGGING_CONFIG, and the Celery worker's and beat's logging setup.

    In JSON mode Python's warnings become log records too, so that every line is JSON.
    """
    from django.conf import settings

    logging.config.dictConfig(logging_settings)
    logging.captureWarnings(settings.LOG_FORMAT == "json")
