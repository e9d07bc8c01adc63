from django.apps import AppConfig


class SweeperConfig(AppConfig):
    name = "sweeper"
    verbose_name = "sweeper"

    def ready(self) -> None:
        from . import signals  # noqa: F401
