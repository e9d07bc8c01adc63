from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "erasure (compliance)"

    def ready(self) -> None:
        from . import signals  # noqa: F401 - connects the login hook
