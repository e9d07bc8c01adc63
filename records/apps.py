from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "memory records"

    def ready(self) -> None:
        # Registers the SQLite score functions on every new connection; imported here so
        # that a connection opened before anything imports records.victims has them too.
        # Both register ingest's server-side statements (records.server_functions), which
        # `manage.py server_functions` must know all of, even with the checks skipped.
        from . import checks, store, victims  # noqa: F401
