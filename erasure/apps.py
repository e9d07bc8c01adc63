from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "erasure (compliance)"

    def ready(self) -> None:
        from records import erasure_guard

        from . import signals  # noqa: F401 - connects the login hook
        from .models import latest_barrier

        erasure_guard.register_barrier_lookup(latest_barrier)
