from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "erasure (compliance)"

    def ready(self) -> None:
        from django.core import checks

        from records import erasure_guard

        from . import signals  # noqa: F401 - connects the login hook
        from .models import latest_barrier, latest_barrier_sql, subjects_erased_after
        from .signing import check_signing_key

        checks.register(check_signing_key, checks.Tags.security)
        erasure_guard.register_barrier_lookup(
            latest_barrier, latest_barrier_sql, subjects_erased_after
        )
