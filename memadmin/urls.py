from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("audit/", views.audit_log, name="audit"),
    path("", include("records.urls")),
    path("erasure/", include("erasure.urls")),
    path("", include("sweeper.urls")),
    path("", include("memadmin.home_urls")),
]
