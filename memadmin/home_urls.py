from django.urls import path
from django.views.generic import RedirectView

from . import metrics, readiness

urlpatterns = [
    path("healthz", readiness.healthz, name="healthz"),
    path("readyz", readiness.ReadinessView.as_view(), name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("", RedirectView.as_view(pattern_name="records:overview"), name="home"),
]
