from django.apps import AppConfig


class BacktestConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "backtest"
    verbose_name = "Policy backtest"
