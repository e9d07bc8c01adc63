from django.urls import path

from . import views

app_name = "backtest"

urlpatterns = [
    path("policies/<str:app>/backtest/", views.start, name="start"),
    path("backtests/<int:pk>/", views.run, name="run"),
    path("policies/<str:app>/tune/", views.tune_start, name="tune"),
    path("tunings/<int:pk>/", views.tune_run, name="tune_run"),
]
