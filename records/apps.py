from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "memory records"

    def ready(self) -> None:
        # Registers the SQLite score functions on every new connection; imported here so
        # that a connection opened before anything imports records.victims has them too.
        from . import checks, victims  # noqa: F401
