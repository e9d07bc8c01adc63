from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from api.v1 import urls as api_v1_urls
from erasure.views import receipt_keys
from memadmin_client.receipts import KEYS_PATH
from records import urls as records_urls

from . import overview, views

# The overview composes records' and sweeper's figures, so its view lives here; it keeps
# its name in the records namespace ("records:overview"), where every link finds it.
records_pages = (
    [path("overview/", overview.overview, name="overview"), *records_urls.urlpatterns],
    records_urls.app_name,
)

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("audit/", views.audit_log, name="audit"),
    path("api/v1/", api_v1_urls()),
    path("api-keys/", include("api.urls")),
    path("erasure/", include("erasure.urls")),
    path(KEYS_PATH.lstrip("/"), receipt_keys, name="receipt_keys"),
    path("", include(records_pages)),
    path("", include("backtest.urls")),
    path("", include("sweeper.urls")),
    path("", include("memadmin.home_urls")),
]
