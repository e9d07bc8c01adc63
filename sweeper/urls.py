from django.urls import path

from . import views

app_name = "sweeper"

urlpatterns = [
    path("sweeps/", views.sweeps, name="sweeps"),
    path("sweeps/start/", views.start, name="start"),
    path("sweeps/<int:pk>/", views.run_detail, name="run"),
    path("sweeps/<int:pk>/apply/", views.apply, name="apply"),
]
