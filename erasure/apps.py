from django.apps import AppConfig


class ErasureConfig(AppConfig):
    name = "erasure"
    verbose_name = "erasure (compliance)"

    def ready(self) -> None:
        from django.core import checks

        from . import signals  # noqa: F401 - connects the login hook
        from .signing import check_signing_key

        checks.register(check_signing_key, checks.Tags.security)
