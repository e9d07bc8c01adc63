from django.apps import AppConfig


class MemadminConfig(AppConfig):
    name = "memadmin"
    verbose_name = "memadmin"

    def ready(self):
        from . import counters, login_attempts, request_context  # noqa: F401 - receivers

        counters.count_database_queries()
        request_context.connect_signals()
