from django.apps import AppConfig


class SweeperConfig(AppConfig):
    name = "sweeper"
    verbose_name = "sweeper"
