from django.apps import AppConfig


class MemadminConfig(AppConfig):
    name = "memadmin"
    verbose_name = "memadmin"

    def ready(self):
        from . import counters, request_context

        counters.count_database_queries()
        request_context.connect_signals()
