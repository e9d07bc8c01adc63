from django.urls import path

from memadmin import url_ids  # noqa: F401 - registers the <id:...> converter

from . import views

app_name = "backtest"

urlpatterns = [
    path("policies/<id:app>/backtest/", views.start, name="start"),
    path("backtests/<int:pk>/", views.run, name="run"),
    path("policies/<id:app>/tune/", views.tune_start, name="tune"),
    path("tunings/<int:pk>/", views.tune_run, name="tune_run"),
]
