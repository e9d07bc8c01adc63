from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "memory records"

    def ready(self) -> None:
        # Registers the SQLite scoring functions on every new database connection.
        from . import victims  # noqa: F401
