from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.generic import RedirectView


@never_cache
@login_not_required
def healthz(request):
    """Liveness for load balancers and compose: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("", RedirectView.as_view(pattern_name="records:overview"), name="home"),
]
