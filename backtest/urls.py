from django.urls import path

from . import views

app_name = "backtest"

urlpatterns = [
    path("policies/<str:app>/backtest/", views.start, name="start"),
    path("backtests/<int:pk>/", views.run, name="run"),
]
